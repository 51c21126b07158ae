import ArgumentParser
import Cryptography
import Foundation
import Foundations
import PaymentToken

/// Options shared by `applepay decrypt` and `applepay verify`: the token, trust roots, clock and window.
struct TokenCheckOptions: ParsableArguments {
    @Argument(
        help: ArgumentHelp(
            "The bare paymentData object or a whole PKPaymentToken; - reads standard input.",
            valueName: "TOKEN.json"))
    var tokenPath: String

    @Option(
        name: .customLong("root"),
        help: ArgumentHelp(
            "Trust this root (PEM, repeatable) instead of the bundled Apple Root CA - G3.", valueName: "ROOT.pem"))
    var rootPaths: [String] = []

    @Option(
        name: .customLong("now"),
        help: ArgumentHelp(
            "Check freshness against this time instead of the clock, e.g. 2021-09-01T19:03:06Z.",
            valueName: "ISO8601"))
    var nowText: String?

    @Option(
        name: .customLong("max-age"), parsing: .unconditional,
        help: ArgumentHelp("How far the signing time may be from now (default 300).", valueName: "SECONDS"))
    var maximumAgeText: String?

    func validate() throws {
        _ = try now()
        _ = try maximumAge()
    }

    /// The time `--now` names, if given.
    func now() throws -> Date? {
        try nowText.map { text in
            guard let date = Self.parseDate(text) else { throw ValidationError("invalid value '\(text)' for --now") }
            return date
        }
    }

    /// `--max-age`, 300 s when not given.
    func maximumAge() throws -> TimeInterval {
        guard let text = maximumAgeText else { return 300 }
        guard let age = TimeInterval(text), age.isFinite, age >= 0 else {
            throw ValidationError("invalid value '\(text)' for --max-age")
        }
        return age
    }

    static func parseDate(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }

    /// Reads a file named on the command line ("-" is standard input).
    static func read(_ path: String, what: String) throws -> Data {
        if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw TokenCommandFailure(.inputUnreadable, "cannot read the \(what) file \(path)", path: path)
        }
    }

    /// The verifier these options describe.
    func verifier() throws -> PaymentTokenVerifier {
        var roots: [Certificate]? = nil
        if !rootPaths.isEmpty {
            roots = try rootPaths.flatMap { path -> [Certificate] in
                let text = String(decoding: try TokenCheckOptions.read(path, what: "root certificate"), as: UTF8.self)
                do {
                    return try Certificate.chain(fromPEM: text)
                } catch {
                    throw TokenCommandFailure(
                        .inputUnreadable, "no PEM certificate in the root file \(path)", path: path)
                }
            }
        }
        let fixed = try now()
        return try PaymentTokenVerifier(roots: roots, maximumAge: try maximumAge(), now: { fixed ?? Date() })
    }
}

/// A failure of the token commands that is not a token error (an unreadable file), with the file as `path`.
struct TokenCommandFailure: CodedError {
    let code: Code
    let message: String
    /// The file at fault.
    let path: String?

    init(_ code: Code, _ message: String, path: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
    }

}

/// The stable codes of ``TokenCommandFailure`` (printed in `{"error": {"code", ...}}`).
extension ErrorCode<TokenCommandFailure> {
    /// An input file (token, key, certificate, roots) is missing or does not hold what it should.
    static var inputUnreadable: Self { Self("inputUnreadable") }
    /// The key file is a symbolic link, another user's, or readable by group or others.
    static var insecureKeyFile: Self { Self("insecureKeyFile") }
}

/// Prints `{"error": {"code", "message"}}` on standard error; returns exit status 1.
enum TokenCommandOutput {
    struct ErrorBody: Encodable {
        struct Detail: Encodable {
            var code: String
            var message: String
        }
        var error: Detail
    }

    static func fail(_ error: any Error) -> ExitCode {
        let detail: ErrorBody.Detail
        switch error {
        case let error as PaymentTokenError: detail = .init(code: error.code.rawValue, message: error.message)
        case let error as TokenCommandFailure: detail = .init(code: error.code.rawValue, message: error.message)
        case let error as CryptographyError: detail = .init(code: error.code.rawValue, message: error.message)
        default: detail = .init(code: "internalError", message: "\(error)")
        }
        let text = (try? Output.json(ErrorBody(error: detail))) ?? #"{"error":{"code":"internalError","message":""}}"#
        Output.standardError(text)
        return .failure
    }
}

/// `applepay decrypt TOKEN.json --merchant-key KEY.pem (--merchant-cert CERT.pem | --merchant-id ID) ...`
struct DecryptCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt",
        abstract: "Verify and decrypt an Apple Pay token (EC_v1 or RSA_v1); print the payload as JSON.",
        usage: """
            applepay decrypt TOKEN.json --merchant-key KEY.pem (--merchant-cert CERT.pem | --merchant-id ID) \
            [--root ROOT.pem]... [--now ISO8601] [--max-age SECONDS] [--application-data-hash HEX]
            """,
        discussion: """
            TOKEN.json is the bare paymentData object or a whole PKPaymentToken ("-" reads standard input). \
            Prints the decrypted payload with the full account number (this is the operator's own tool: keep \
            the output out of logs). On failure prints {"error": {"code", "message"}} on standard error and \
            exits 1; the codes are PaymentTokenError's.
            """)

    @Option(
        name: .customLong("merchant-key"),
        help: ArgumentHelp("The Payment Processing private key (EC P-256 or RSA).", valueName: "KEY.pem"))
    var keyPath: String?

    @Option(
        name: .customLong("merchant-cert"),
        help: ArgumentHelp(
            "The Payment Processing certificate (gives the merchant identifier hash).", valueName: "CERT.pem"))
    var certificatePath: String?

    @Option(
        name: .customLong("merchant-id"),
        help: ArgumentHelp("The merchant identifier, when the certificate is not at hand.", valueName: "ID"))
    var merchantIdentifier: String?

    @OptionGroup
    var options: TokenCheckOptions

    @Option(
        name: .customLong("application-data-hash"),
        help: ArgumentHelp("Require the token's applicationData to be this SHA-256 (hex).", valueName: "HEX"))
    var applicationDataHash: String?

    func validate() throws {
        guard keyPath != nil else { throw ValidationError("--merchant-key is required") }
        switch (certificatePath, merchantIdentifier) {
        case (nil, nil): throw ValidationError("give --merchant-cert or --merchant-id")
        case (.some, .some): throw ValidationError("give either --merchant-cert or --merchant-id, not both")
        default: break
        }
        if let text = applicationDataHash,
            text.utf8.count != 64
                || !text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) })
        {
            throw ValidationError("invalid value '\(text)' for --application-data-hash")
        }
    }

    /// The key file, read with ``KeyFile``'s checks (standard input, `-`, as it comes).
    static func readKey(_ path: String) throws -> Data {
        if path == "-" { return try TokenCheckOptions.read(path, what: "merchant key") }
        do {
            return try KeyFile.read(path, description: "the merchant key")
        } catch {
            switch error.code {
            case .missing, .unreadable: throw TokenCommandFailure(.inputUnreadable, error.message, path: path)
            default: throw TokenCommandFailure(.insecureKeyFile, error.message, path: path)
            }
        }
    }

    func perform() async throws -> ExitCode {
        let keyPath = self.keyPath ?? ""
        do {
            let keyText = String(decoding: try Self.readKey(keyPath), as: UTF8.self)
            let key: PrivateKey
            do {
                key = try PrivateKey(pem: keyText)
            } catch {
                throw TokenCommandFailure(.inputUnreadable, "no readable private key in \(keyPath)", path: keyPath)
            }
            let identity: MerchantIdentity
            if let certificatePath {
                let text = String(
                    decoding: try TokenCheckOptions.read(certificatePath, what: "merchant certificate"), as: UTF8.self)
                let certificate: Certificate
                do {
                    certificate = try Certificate(pem: text)
                } catch {
                    throw TokenCommandFailure(
                        .inputUnreadable, "no PEM certificate in \(certificatePath)", path: certificatePath)
                }
                identity = try MerchantIdentity(certificate: certificate, privateKey: key)
            } else {
                identity = try MerchantIdentity(privateKey: key, merchantIdentifier: merchantIdentifier ?? "")
            }
            let decryptor = try PaymentTokenDecryptor(merchants: [identity], verifier: options.verifier())
            let token = try TokenCheckOptions.read(options.tokenPath, what: "token")
            let expectations = PaymentTokenExpectations(applicationData: applicationDataHash.map { .sha256Hex($0) })
            let decrypted = try decryptor.decrypt(jsonData: token, expecting: expectations)
            print(try Output.json(decrypted.payload))
            return .success
        } catch {
            return TokenCommandOutput.fail(error)
        }
    }
}
