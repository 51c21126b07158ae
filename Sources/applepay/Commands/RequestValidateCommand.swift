import ApplePay
import Foundation
import Foundations

/// `applepay request validate FILE.json`: checks an `ApplePayPaymentRequest` against Apple's rules.
struct RequestValidateCommand: Command {
    /// Exit statuses of this command beyond 0, 1 and 64.
    enum Status {
        /// The file is not JSON at all.
        static let notJSON: Int32 = 2
        /// The file does not exist or cannot be read (`EX_NOINPUT` from sysexits.h).
        static let noInput: Int32 = 66
    }

    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "validate",
            abstract: "Check an ApplePayPaymentRequest JSON document against Apple's rules.",
            usage: [
                "[--pretty] [--version N] FILE.json",
                "[--pretty] [--version N] -   (read the document from standard input)",
            ],
            options: [
                ("--pretty", "Indent the JSON report."),
                (
                    "--version N",
                    "The Apple Pay JS version the page passes to new ApplePaySession(N, request): also check WebKit's "
                        + "version gates (0 refused, jcb needs 2, cartesBancaires and phoneticName need 3)."
                ),
            ],
            discussion: """
                Prints {"valid": true|false, "problems": [{"path", "code", "severity", "message"}]} on standard
                output: every problem at once, each with the field's path (such as lineItems[2].amount), a stable
                code, its severity (error or warning) and what to do about it. A document that is JSON but not
                shaped like a request (a missing total, a number where a string belongs) is reported the same
                way, with the first such problem.

                EXIT STATUS:
                  0   valid (warnings allowed)
                  1   not valid: at least one problem is an error
                  2   the file is not JSON at all (message on standard error)
                  64  usage error
                  66  the file does not exist or cannot be read (message on standard error)
                """)
    }

    var file: String
    var pretty: Bool
    var version: Int?

    init(arguments: inout Arguments) throws {
        pretty = arguments.flag("--pretty")
        version = try arguments.option("--version", as: { Int($0) })
        file = try arguments.positional("FILE.json")
    }

    struct Report: Encodable {
        var valid: Bool
        var problems: [ValidationProblem]
    }

    func run() async throws -> Int32 {
        let data: Data
        if file == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) else {
                Output.standardError("error: \(file): no such file")
                return Status.noInput
            }
            guard !isDirectory.boolValue, let contents = FileManager.default.contents(atPath: file) else {
                Output.standardError(
                    "error: \(file): cannot be read (\(isDirectory.boolValue ? "a folder" : "no permission?"))")
                return Status.noInput
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
        return problems.isValid ? ExitCode.success : ExitCode.failure
    }
}
