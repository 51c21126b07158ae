import ArgumentParser
import Cryptography
import Foundation
import Sandbox

/// `applepay merchant`: the merchant's set-up steps for Apple's developer portal.
struct MerchantCommand: CommandGroup {
    static let configuration = CommandConfiguration(
        commandName: "merchant",
        abstract: "Merchant set-up: keys and CSRs for Apple's portal, and reading the certificates it returns.",
        subcommands: [MerchantCSRCommand.self, MerchantInspectCommand.self])
}

/// `applepay merchant csr --kind payment-processing|merchant-identity --out DIR [--merchant-id ID] [--rsa]`.
struct MerchantCSRCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "csr",
        abstract: "Make a private key and a certificate signing request to upload to Apple's developer portal.",
        usage: """
            applepay merchant csr --kind payment-processing|merchant-identity|order-type-id --out DIR \
            [--merchant-id ID] [--order-type-id ID] [--rsa] [--force]
            """,
        discussion: """
            Payment Processing keys are EC P-256 (RSA-2048 with --rsa); Merchant Identity keys are always \
            RSA-2048, and so are Order Type ID keys (they sign Wallet order packages). The key is written with \
            mode 0600 and never printed. Prints {"privateKey", "csr", "keyType", "subject"}.
            """)

    @Option(
        name: .customLong("kind"),
        help: ArgumentHelp("payment-processing, merchant-identity or order-type-id (required).", valueName: "KIND"))
    var kindText: String?

    @Option(
        name: .customLong("out"),
        help: ArgumentHelp("Folder for KIND.key.pem and KIND.csr; created when missing (required).", valueName: "DIR"))
    var folder: String?

    @Option(
        name: .customLong("merchant-id"), help: ArgumentHelp("Named in the request's common name.", valueName: "ID"))
    var merchantIdentifier: String?

    @Option(
        name: .customLong("order-type-id"),
        help: ArgumentHelp(
            "With --kind order-type-id: the order type identifier (order.com.example).", valueName: "ID"))
    var orderTypeIdentifier: String?

    @Flag(help: "An RSA-2048 Payment Processing key (RSA_v1, China) instead of EC P-256.")
    var rsa = false

    @Flag(help: "Replace an existing key and CSR of that kind in DIR.")
    var force = false

    func validate() throws {
        _ = try request()
    }

    /// The kind of key, its folder and the identifier the request names.
    func request() throws -> (kind: SandboxAuthority.MerchantCertificateKind, folder: String, identifier: String?) {
        guard let kindText else { throw ValidationError("--kind is required") }
        guard let kind = SandboxAuthority.MerchantCertificateKind(rawValue: kindText) else {
            throw ValidationError("--kind must be payment-processing, merchant-identity or order-type-id")
        }
        guard let folder else { throw ValidationError("--out DIR is required") }
        if let orderTypeIdentifier {
            guard kind == .orderTypeID else { throw ValidationError("--order-type-id goes with --kind order-type-id") }
            do { try OrderTypeIdentifier.validate(orderTypeIdentifier) } catch let error as SandboxError {
                throw ValidationError(error.message)
            }
            return (kind, folder, orderTypeIdentifier)
        }
        if let merchantIdentifier, kind != .orderTypeID {
            do { try MerchantIdentifier.validate(merchantIdentifier) } catch let error as SandboxError {
                throw ValidationError(error.message)
            }
        }
        return (kind, folder, merchantIdentifier)
    }

    struct Report: Encodable {
        var privateKey: String
        var csr: String
        var keyType: String
        var subject: String
    }

    func perform() async throws -> ExitCode {
        let (kind, folder, merchantIdentifier) = try request()
        let directory = URL(fileURLWithPath: folder)
        let keyURL = directory.appendingPathComponent("\(kind.rawValue).key.pem")
        let requestURL = directory.appendingPathComponent("\(kind.rawValue).csr")
        let manager = FileManager.default
        if !force, manager.fileExists(atPath: keyURL.path) || manager.fileExists(atPath: requestURL.path) {
            Output.standardError(
                "error: \(keyURL.path) or \(requestURL.path) already exists; pass --force to replace them")
            return .failure
        }
        let made = try MerchantOnboarding.makeKeyAndRequest(kind, merchantIdentifier: merchantIdentifier, rsa: rsa)
        do {
            try manager.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            Output.standardError("error: cannot create \(directory.path): \(error.localizedDescription)")
            return .failure
        }
        try AtomicFile.write(made.privateKey.pemRepresentation, to: keyURL, mode: AtomicFile.privateMode)
        do {
            try AtomicFile.write(made.request.pemRepresentation, to: requestURL, mode: AtomicFile.publicMode)
        } catch {
            try? manager.removeItem(at: keyURL)  // a key without its CSR is of no use: leave nothing behind
            throw error
        }
        print(
            try Output.json(
                Report(
                    privateKey: keyURL.path, csr: requestURL.path, keyType: made.privateKey.kind.description,
                    subject: made.request.subject.description)))
        return .success
    }
}

/// `applepay merchant inspect CERT [--key KEY.pem] [--pem-out FILE]`.
struct MerchantInspectCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Describe a merchant certificate (.cer from Apple's portal, or PEM) and check a key against it.",
        usage: "applepay merchant inspect CERT [--key KEY.pem] [--pem-out FILE] [--pretty]",
        discussion: """
            Prints {"kind", "merchantIdentifier", "merchantIdentifierHash", "notBefore", "notAfter", "daysLeft", \
            "isExpired", "keyMatches", "publicKeyHash", ...}.

            EXIT STATUS:
              0   read (and the key, if given, matches)
              1   the key does not match, or the file or key cannot be used
                  (message on standard error)
              64  usage error
              66  CERT or KEY.pem does not exist
            """)

    @Argument(help: ArgumentHelp("The certificate: DER (.cer) or PEM.", valueName: "CERT"))
    var certificatePath: String

    @Option(
        name: .customLong("key"),
        help: ArgumentHelp("Check that this private key belongs to the certificate.", valueName: "KEY.pem"))
    var keyPath: String?

    @Option(
        name: .customLong("pem-out"),
        help: ArgumentHelp("Also write the certificate as PEM to FILE.", valueName: "FILE"))
    var pemOut: String?

    @Flag(help: "Indent the JSON report.")
    var pretty = false

    func perform() async throws -> ExitCode {
        guard let bytes = FileManager.default.contents(atPath: certificatePath) else {
            Output.standardError("error: \(certificatePath): no such file (or it cannot be read)")
            return .noInput
        }
        let certificate = try MerchantOnboarding.readCertificate(bytes)
        var key: PrivateKey? = nil
        if let keyPath {
            guard let keyBytes = FileManager.default.contents(atPath: keyPath) else {
                Output.standardError("error: \(keyPath): no such file (or it cannot be read)")
                return .noInput
            }
            do {
                key = try PrivateKey(pem: String(decoding: keyBytes, as: UTF8.self))
            } catch {
                Output.standardError("error: \(keyPath) is not a PEM private key (unencrypted PKCS#8, SEC1 or PKCS#1)")
                return .failure
            }
        }
        let inspection = MerchantOnboarding.inspect(certificate, key: key)
        if let pemOut {
            try AtomicFile.write(
                certificate.pemRepresentation, to: URL(fileURLWithPath: pemOut), mode: AtomicFile.publicMode)
        }
        print(try Output.json(inspection, pretty: pretty))
        return inspection.keyMatches == false ? .failure : .success
    }
}
