import ArgumentParser
import Foundation
import PaymentToken

/// `applepay verify TOKEN.json [--root ROOT.pem]... [--now ISO8601] [--max-age SECONDS]`
struct VerifyCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check an Apple Pay token's signature, certificate chain and signing time, without decrypting it.",
        usage: "applepay verify TOKEN.json [--root ROOT.pem]... [--now ISO8601] [--max-age SECONDS]",
        discussion: """
            For tokens whose merchant key you do not hold. Certificates are checked at the token's signing \
            time; the signing time must be within --max-age of --now (or the clock). Prints \
            {"valid": true, "version", "signingTime", "transactionId"}, or {"error": {"code", "message"}} on \
            standard error with exit status 1.
            """)

    @OptionGroup
    var options: TokenCheckOptions

    struct Report: Encodable {
        var valid: Bool
        var version: String
        var signingTime: String
        var transactionId: String
    }

    func perform() async throws -> ExitCode {
        do {
            let verifier = try options.verifier()
            let token = try TokenCheckOptions.read(options.tokenPath, what: "token")
            let verification = try verifier.verify(jsonData: token)
            let report = Report(
                valid: true, version: verification.version.rawValue,
                signingTime: ISO8601DateFormatter().string(from: verification.signingTime),
                transactionId: verification.transactionId)
            print(try Output.json(report))
            return .success
        } catch {
            return TokenCommandOutput.fail(error)
        }
    }
}
