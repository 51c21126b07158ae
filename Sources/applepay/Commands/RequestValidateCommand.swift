import ApplePay
import ArgumentParser
import Foundation
import Foundations

/// `applepay request validate FILE.json`: checks an `ApplePayPaymentRequest` against Apple's rules.
struct RequestValidateCommand: StatusCommand {
    /// Exit statuses of this command beyond 0, 1 and 64.
    enum Status {
        /// The file is not JSON at all.
        static let notJSON = ExitCode(2)
    }

    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check an ApplePayPaymentRequest JSON document against Apple's rules.",
        usage: """
            applepay request validate [--pretty] [--version N] FILE.json
            applepay request validate [--pretty] [--version N] -   (read the document from standard input)
            """,
        discussion: """
            Prints {"valid": true|false, "problems": [{"path", "code", "severity", "message"}]} on standard \
            output: every problem at once, each with the field's path (such as lineItems[2].amount), a stable \
            code, its severity (error or warning) and what to do about it. A document that is JSON but not \
            shaped like a request (a missing total, a number where a string belongs) is reported the same \
            way, with the first such problem.

            EXIT STATUS:
              0   valid (warnings allowed)
              1   not valid: at least one problem is an error
              2   the file is not JSON at all (message on standard error)
              64  usage error
              66  the file does not exist or cannot be read (message on standard error)
            """)

    @Flag(help: "Indent the JSON report.")
    var pretty = false

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "The Apple Pay JS version the page passes to new ApplePaySession(N, request): also check WebKit's "
                + "version gates (0 refused, jcb needs 2, cartesBancaires and phoneticName need 3).",
            valueName: "N"))
    var version: Int?

    @Argument(help: ArgumentHelp("The request document; - reads standard input.", valueName: "FILE.json"))
    var file: String

    struct Report: Encodable {
        var valid: Bool
        var problems: [ValidationProblem]
    }

    func perform() async throws -> ExitCode {
        let data: Data
        if file == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) else {
                Output.standardError("error: \(file): no such file")
                return .noInput
            }
            guard !isDirectory.boolValue, let contents = FileManager.default.contents(atPath: file) else {
                Output.standardError(
                    "error: \(file): cannot be read (\(isDirectory.boolValue ? "a folder" : "no permission?"))")
                return .noInput
            }
            data = contents
        }
        let problems: [ValidationProblem]
        do {
            problems = try PaymentRequest.problems(decodingJSON: data, version: version)
        } catch {
            Output.standardError("error: \(file == "-" ? "standard input" : file): \(error.message)")
            return Status.notJSON
        }
        print(try Output.json(Report(valid: problems.isValid, problems: problems), pretty: pretty))
        return problems.isValid ? .success : .failure
    }
}
