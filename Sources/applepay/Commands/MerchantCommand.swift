import Cryptography
import Foundation
import Sandbox

/// `applepay merchant`: the merchant's set-up steps for Apple's developer portal.
struct MerchantCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "merchant",
            abstract: "Merchant set-up: keys and CSRs for Apple's portal, and reading the certificates it returns.",
            subcommands: [MerchantCSRCommand.self, MerchantInspectCommand.self])
    }
}

/// `applepay merchant csr --kind payment-processing|merchant-identity --out DIR [--merchant-id ID] [--rsa]`.
struct MerchantCSRCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "csr",
            abstract: "Make a private key and a certificate signing request to upload to Apple's developer portal.",
            usage: [
                "--kind payment-processing|merchant-identity|order-type-id --out DIR [--merchant-id ID] [--order-type-id ID] [--rsa] [--force]"
            ],
            options: [
                ("--kind KIND", "payment-processing, merchant-identity or order-type-id (required)."),
                ("--out DIR", "Folder for KIND.key.pem and KIND.csr; created when missing (required)."),
                ("--merchant-id ID", "Named in the request's common name."),
                ("--order-type-id ID", "With --kind order-type-id: the order type identifier (order.com.example)."),
                ("--rsa", "An RSA-2048 Payment Processing key (RSA_v1, China) instead of EC P-256."),
                ("--force", "Replace an existing key and CSR of that kind in DIR."),
            ],
            discussion: """
                Payment Processing keys are EC P-256 (RSA-2048 with --rsa); Merchant Identity keys are always
                RSA-2048, and so are Order Type ID keys (they sign Wallet order packages). The key is written with mode 0600 and never printed. Prints {"privateKey", "csr",
                "keyType", "subject"}.
                """)
    }

    var kind: SandboxAuthority.MerchantCertificateKind
    var folder: String
    var merchantIdentifier: String?
    var rsa: Bool
    var force: Bool

    init(arguments: inout Arguments) throws {
        rsa = arguments.flag("--rsa")
        force = arguments.flag("--force")
        guard let kindText = try arguments.option("--kind") else { throw UsageError("--kind is required") }
        guard let kind = SandboxAuthority.MerchantCertificateKind(rawValue: kindText) else {
            throw UsageError("--kind must be payment-processing, merchant-identity or order-type-id")
        }
        self.kind = kind
        guard let folder = try arguments.option("--out") else { throw UsageError("--out DIR is required") }
        self.folder = folder
        merchantIdentifier = try arguments.option("--merchant-id")
        if let orderTypeIdentifier = try arguments.option("--order-type-id") {
            guard kind == .orderTypeID else { throw UsageError("--order-type-id goes with --kind order-type-id") }
            do { try OrderTypeIdentifier.validate(orderTypeIdentifier) } catch let error as SandboxError {
                throw UsageError(error.message)
            }
            merchantIdentifier = orderTypeIdentifier
        } else if let merchantIdentifier, kind != .orderTypeID {
            do { try MerchantIdentifier.validate(merchantIdentifier) } catch let error as SandboxError {
                throw UsageError(error.message)
            }
        }
    }

    struct Report: Encodable {
        var privateKey: String
        var csr: String
        var keyType: String
        var subject: String
    }

    func run() async throws -> Int32 {
        let directory = URL(fileURLWithPath: folder)
        let keyURL = directory.appendingPathComponent("\(kind.rawValue).key.pem")
        let requestURL = directory.appendingPathComponent("\(kind.rawValue).csr")
        let manager = FileManager.default
        if !force, manager.fileExists(atPath: keyURL.path) || manager.fileExists(atPath: requestURL.path) {
            Output.standardError(
                "error: \(keyURL.path) or \(requestURL.path) already exists; pass --force to replace them")
            return ExitCode.failure
        }
        let made = try MerchantOnboarding.makeKeyAndRequest(kind, merchantIdentifier: merchantIdentifier, rsa: rsa)
        do {
            try manager.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            Output.standardError("error: cannot create \(directory.path): \(error.localizedDescription)")
            return ExitCode.failure
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
        return ExitCode.success
    }
}

/// `applepay merchant inspect CERT [--key KEY.pem] [--pem-out FILE]`.
struct MerchantInspectCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "inspect",
            abstract: "Describe a merchant certificate (.cer from Apple's portal, or PEM) and check a key against it.",
            usage: ["CERT [--key KEY.pem] [--pem-out FILE] [--pretty]"],
            options: [
                ("--key KEY.pem", "Check that this private key belongs to the certificate."),
                ("--pem-out FILE", "Also write the certificate as PEM to FILE."),
                ("--pretty", "Indent the JSON report."),
            ],
            discussion: """
                Prints {"kind", "merchantIdentifier", "merchantIdentifierHash", "notBefore", "notAfter", "daysLeft",
                "isExpired", "keyMatches", "publicKeyHash", ...}.

                EXIT STATUS:
                  0   read (and the key, if given, matches)
                  1   the key does not match, or the file or key cannot be used (message on standard error)
                  64  usage error
                  66  CERT or KEY.pem does not exist
                """)
    }

    var certificatePath: String
    var keyPath: String?
    var pemOut: String?
    var pretty: Bool

    init(arguments: inout Arguments) throws {
        pretty = arguments.flag("--pretty")
        keyPath = try arguments.option("--key")
        pemOut = try arguments.option("--pem-out")
        certificatePath = try arguments.positional("CERT")
    }

    func run() async throws -> Int32 {
        guard let bytes = FileManager.default.contents(atPath: certificatePath) else {
            Output.standardError("error: \(certificatePath): no such file (or it cannot be read)")
            return SandboxExit.noInput
        }
        let certificate = try MerchantOnboarding.readCertificate(bytes)
        var key: PrivateKey? = nil
        if let keyPath {
            guard let keyBytes = FileManager.default.contents(atPath: keyPath) else {
                Output.standardError("error: \(keyPath): no such file (or it cannot be read)")
                return SandboxExit.noInput
            }
            do {
                key = try PrivateKey(pem: String(decoding: keyBytes, as: UTF8.self))
            } catch {
                Output.standardError("error: \(keyPath) is not a PEM private key (unencrypted PKCS#8, SEC1 or PKCS#1)")
                return ExitCode.failure
            }
        }
        let inspection = MerchantOnboarding.inspect(certificate, key: key)
        if let pemOut {
            try AtomicFile.write(
                certificate.pemRepresentation, to: URL(fileURLWithPath: pemOut), mode: AtomicFile.publicMode)
        }
        print(try Output.json(inspection, pretty: pretty))
        return inspection.keyMatches == false ? ExitCode.failure : ExitCode.success
    }
}
