import Cryptography
import Foundation

/// A sandbox: the authority, one merchant's certificates and keys, and a token minter, persisted as PEM files.
///
/// Folder layout (names other tools rely on):
///
/// | file | what |
/// |---|---|
/// | `root.pem`, `root.key.pem` | root CA (EC P-384): the trust anchor to configure verifiers with |
/// | `intermediate.pem`, `intermediate.key.pem` | token-signing intermediate CA (OID …6.2.14) |
/// | `merchant-ca.pem`, `merchant-ca.key.pem` | merchant-certificate intermediate CA (OID …6.2.14) |
/// | `leaf-ec.pem`, `leaf-ec.key.pem` | EC P-256 token-signing leaf (OID …6.29) |
/// | `leaf-rsa.pem`, `leaf-rsa.key.pem` | RSA-2048 token-signing leaf (OID …6.29) |
/// | `payment-processing-ec.pem`, `payment-processing-ec.key.pem` | the merchant's EC_v1 certificate and key |
/// | `payment-processing-rsa.pem`, `payment-processing-rsa.key.pem` | the merchant's RSA_v1 certificate and key |
/// | `merchant-identity.pem`, `merchant-identity.key.pem` | the merchant's TLS client certificate and key |
/// | `wallet-ca.pem`, `wallet-ca.key.pem` | Wallet intermediate CA (OID …6.2.1, like WWDR - G4), under the root |
/// | `order-type-id.pem`, `order-type-id.key.pem` | the merchant's Order Type ID certificate (signs order packages) |
/// | `sandbox.json` | format version, merchant identifier, team, creation time |
///
/// Key files are 0600, the folder 0700. Everything is written to a staging folder first and renamed into place,
/// so a failure leaves either the old folder or the new one, never a mixture.
public final class Sandbox: Sendable {
    /// The file names in a sandbox folder.
    public enum File {
        public static let root = "root.pem"
        public static let rootKey = "root.key.pem"
        public static let intermediate = "intermediate.pem"
        public static let intermediateKey = "intermediate.key.pem"
        public static let merchantCA = "merchant-ca.pem"
        public static let merchantCAKey = "merchant-ca.key.pem"
        public static let ecLeaf = "leaf-ec.pem"
        public static let ecLeafKey = "leaf-ec.key.pem"
        public static let rsaLeaf = "leaf-rsa.pem"
        public static let rsaLeafKey = "leaf-rsa.key.pem"
        public static let paymentProcessingEC = "payment-processing-ec.pem"
        public static let paymentProcessingECKey = "payment-processing-ec.key.pem"
        public static let paymentProcessingRSA = "payment-processing-rsa.pem"
        public static let paymentProcessingRSAKey = "payment-processing-rsa.key.pem"
        public static let merchantIdentity = "merchant-identity.pem"
        public static let merchantIdentityKey = "merchant-identity.key.pem"
        public static let configuration = "sandbox.json"
        public static let walletCA = "wallet-ca.pem"
        public static let walletCAKey = "wallet-ca.key.pem"
        public static let orderTypeID = "order-type-id.pem"
        public static let orderTypeIDKey = "order-type-id.key.pem"
    }

    /// What `sandbox.json` holds.
    public struct Configuration: Sendable, Codable, Hashable {
        /// The layout version: 1.
        public var format: Int
        public var merchantIdentifier: String
        public var teamIdentifier: String
        public var organization: String
        public var createdAt: Date
    }

    public let folder: URL
    public let configuration: Configuration
    public let authority: SandboxAuthority
    /// The merchant's EC P-256 Payment Processing certificate and key (EC_v1 tokens).
    public let paymentProcessingEC: SandboxAuthority.Credential
    /// The merchant's RSA-2048 Payment Processing certificate and key (RSA_v1 tokens).
    public let paymentProcessingRSA: SandboxAuthority.Credential
    /// The merchant's Merchant Identity certificate and key (TLS client authentication).
    public let merchantIdentity: SandboxAuthority.Credential
    /// The Wallet intermediate CA (like Apple's WWDR - G4) under the sandbox root.
    public let walletCA: SandboxAuthority.Credential
    /// The merchant's Order Type ID certificate and key: they sign Wallet order packages.
    public let orderTypeID: SandboxAuthority.Credential
    /// Mints tokens signed by this sandbox's leaves.
    public let minter: TokenMinter
    /// The prepared recipients for EC_v1 and RSA_v1 tokens to the merchant's own certificates.
    public let ecRecipient: PaymentProcessingRecipient
    public let rsaRecipient: PaymentProcessingRecipient

    /// The merchant identifier the certificates were issued to.
    public var merchantIdentifier: String { configuration.merchantIdentifier }
    /// The trust anchor a verifier must be configured with.
    public var rootCertificate: Certificate { authority.root.certificate }
    /// The order type identifier of the Order Type ID certificate (`order.` + the merchant identifier's rest).
    public var orderTypeIdentifier: String {
        orderTypeID.certificate.subjectUID
            ?? OrderTypeIdentifier.derived(fromMerchantIdentifier: configuration.merchantIdentifier)
    }

    private init(
        folder: URL, configuration: Configuration, authority: SandboxAuthority,
        paymentProcessingEC: SandboxAuthority.Credential, paymentProcessingRSA: SandboxAuthority.Credential,
        merchantIdentity: SandboxAuthority.Credential, walletCA: SandboxAuthority.Credential,
        orderTypeID: SandboxAuthority.Credential
    ) throws {
        self.walletCA = walletCA
        self.orderTypeID = orderTypeID
        self.folder = folder
        self.configuration = configuration
        self.authority = authority
        self.paymentProcessingEC = paymentProcessingEC
        self.paymentProcessingRSA = paymentProcessingRSA
        self.merchantIdentity = merchantIdentity
        self.minter = try TokenMinter(authority: authority)
        self.ecRecipient = try PaymentProcessingRecipient(certificate: paymentProcessingEC.certificate)
        self.rsaRecipient = try PaymentProcessingRecipient(certificate: paymentProcessingRSA.certificate)
    }

    /// The merchant's Payment Processing credential for a token version.
    public func paymentProcessing(_ version: TokenVersion) -> SandboxAuthority.Credential {
        version == .ecV1 ? paymentProcessingEC : paymentProcessingRSA
    }

    /// Mints a token to this sandbox's own merchant certificate for `version`.
    /// - Throws: see `TokenMinter.mint(_:for:)`.
    public func mint(_ request: MintRequest, version: TokenVersion = .ecV1) throws -> MintedToken {
        try minter.mint(request, for: version == .ecV1 ? ecRecipient : rsaRecipient)
    }

    // MARK: - Creating

    /// Creates a sandbox in `folder`: a new authority, and for the merchant EC and RSA Payment Processing
    /// certificates and a Merchant Identity certificate, each from a CSR as Apple's portal would see it.
    ///
    /// - Parameters:
    ///   - folder: created (with missing parents) when absent; when present it must be empty or, with `force`,
    ///     an earlier sandbox (a folder with `sandbox.json`), which is replaced as a whole.
    ///   - merchantIdentifier: e.g. `merchant.com.example.shop`.
    ///   - force: replace an existing sandbox.
    /// - Returns: the sandbox, loaded.
    /// - Throws: `SandboxError.Code.alreadyExists`, `.invalidMerchantIdentifier`, `.writeFailed`; `CryptographyError`.
    @discardableResult
    public static func create(
        at folder: URL, merchantIdentifier: String, force: Bool = false, now: Date = Date()
    ) throws -> Sandbox {
        try MerchantIdentifier.validate(merchantIdentifier)
        let folder = folder.standardizedFileURL
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        let exists = manager.fileExists(atPath: folder.path, isDirectory: &isDirectory)
        if exists {
            guard isDirectory.boolValue else {
                throw SandboxError(
                    .alreadyExists, "\(folder.path) exists and is not a folder", path: folder.path)
            }
            let contents = (try? manager.contentsOfDirectory(atPath: folder.path)) ?? []
            let isSandbox = contents.contains(File.configuration)
            if isSandbox && !force {
                throw SandboxError(
                    .alreadyExists,
                    "\(folder.path) already holds a sandbox; pass --force to replace it", path: folder.path)
            }
            if !isSandbox && !contents.isEmpty {
                throw SandboxError(
                    .alreadyExists,
                    "\(folder.path) is not empty and is not a sandbox; choose an empty or new folder",
                    path: folder.path)
            }
        }

        // Make everything in memory first: nothing touches the disk until all of it exists.
        let authority = try SandboxAuthority.generate(now: now)
        let merchant = SandboxAuthority.Merchant(identifier: merchantIdentifier)
        func issue(_ kind: SandboxAuthority.MerchantCertificateKind, _ keyKind: KeyKind) throws
            -> SandboxAuthority.Credential
        {
            let key = try PrivateKey.generate(keyKind)
            let request = try MerchantOnboarding.signingRequest(kind, key: key, merchantIdentifier: merchantIdentifier)
            let certificate = try authority.issueMerchantCertificate(kind, for: request, merchant: merchant, now: now)
            return try SandboxAuthority.Credential(certificate: certificate, privateKey: key)
        }
        let processingEC = try issue(.paymentProcessing, .p256)
        let processingRSA = try issue(.paymentProcessing, .rsa(bits: 2048))
        let identity = try issue(.merchantIdentity, .rsa(bits: 2048))
        let (walletCA, orderTypeID) = try makeOrderCredentials(
            authority: authority, merchant: merchant, merchantIdentifier: merchantIdentifier, now: now)
        let configuration = Configuration(
            format: 1, merchantIdentifier: merchantIdentifier, teamIdentifier: merchant.teamIdentifier,
            organization: merchant.organization,
            createdAt: Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down)))

        var files: [(String, String, mode_t)] = []
        func add(_ credential: SandboxAuthority.Credential, _ certificateName: String, _ keyName: String) {
            files.append((certificateName, credential.certificate.pemRepresentation, AtomicFile.publicMode))
            files.append((keyName, credential.privateKey.pemRepresentation, AtomicFile.privateMode))
        }
        add(authority.root, File.root, File.rootKey)
        add(authority.intermediate, File.intermediate, File.intermediateKey)
        add(authority.merchantCA, File.merchantCA, File.merchantCAKey)
        add(authority.ecLeaf, File.ecLeaf, File.ecLeafKey)
        add(authority.rsaLeaf, File.rsaLeaf, File.rsaLeafKey)
        add(processingEC, File.paymentProcessingEC, File.paymentProcessingECKey)
        add(processingRSA, File.paymentProcessingRSA, File.paymentProcessingRSAKey)
        add(identity, File.merchantIdentity, File.merchantIdentityKey)
        add(walletCA, File.walletCA, File.walletCAKey)
        add(orderTypeID, File.orderTypeID, File.orderTypeIDKey)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        files.append(
            (
                File.configuration, String(decoding: try encoder.encode(configuration), as: UTF8.self) + "\n",
                AtomicFile.publicMode
            ))

        // Stage beside the target, then swap it in.
        let parent = folder.deletingLastPathComponent()
        do {
            try manager.createDirectory(at: parent, withIntermediateDirectories: true)
        } catch {
            throw SandboxError(
                .writeFailed,
                "cannot create \(parent.path): \(error.localizedDescription)", path: parent.path)
        }
        let staging = parent.appendingPathComponent(".\(folder.lastPathComponent).staging-\(UUID().uuidString)")
        do {
            try manager.createDirectory(
                at: staging, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            for (name, text, mode) in files {
                try AtomicFile.write(text, to: staging.appendingPathComponent(name), mode: mode)
            }
            if exists {
                let old = parent.appendingPathComponent(".\(folder.lastPathComponent).old-\(UUID().uuidString)")
                try manager.moveItem(at: folder, to: old)
                do {
                    try manager.moveItem(at: staging, to: folder)
                } catch {
                    try? manager.moveItem(at: old, to: folder)
                    throw error
                }
                try? manager.removeItem(at: old)
            } else {
                try manager.moveItem(at: staging, to: folder)
            }
        } catch let error as SandboxError {
            try? manager.removeItem(at: staging)
            throw error
        } catch {
            try? manager.removeItem(at: staging)
            throw SandboxError(
                .writeFailed,
                "cannot write the sandbox to \(folder.path): \(error.localizedDescription)", path: folder.path)
        }
        return try Sandbox(
            folder: folder, configuration: configuration, authority: authority, paymentProcessingEC: processingEC,
            paymentProcessingRSA: processingRSA, merchantIdentity: identity, walletCA: walletCA,
            orderTypeID: orderTypeID)
    }

    /// A Wallet CA under the root and an Order Type ID certificate from a CSR, as Apple's portal would issue it.
    static func makeOrderCredentials(
        authority: SandboxAuthority, merchant: SandboxAuthority.Merchant, merchantIdentifier: String, now: Date
    ) throws -> (walletCA: SandboxAuthority.Credential, orderTypeID: SandboxAuthority.Credential) {
        let walletCA = try SandboxAuthority.makeWalletCA(root: authority.root, now: now)
        let orderTypeIdentifier = OrderTypeIdentifier.derived(fromMerchantIdentifier: merchantIdentifier)
        let made = try MerchantOnboarding.makeKeyAndRequest(.orderTypeID, merchantIdentifier: orderTypeIdentifier)
        let certificate = try authority.issueOrderTypeCertificate(
            for: made.request, orderTypeIdentifier: orderTypeIdentifier, merchant: merchant, walletCA: walletCA,
            now: now)
        return (walletCA, try SandboxAuthority.Credential(certificate: certificate, privateKey: made.privateKey))
    }

    /// Every file a sandbox folder holds, in the order they are listed above.
    public static let fileNames: [String] = [
        File.root, File.rootKey, File.intermediate, File.intermediateKey, File.merchantCA, File.merchantCAKey,
        File.ecLeaf, File.ecLeafKey, File.rsaLeaf, File.rsaLeafKey, File.paymentProcessingEC,
        File.paymentProcessingECKey,
        File.paymentProcessingRSA, File.paymentProcessingRSAKey, File.merchantIdentity, File.merchantIdentityKey,
        File.walletCA, File.walletCAKey, File.orderTypeID, File.orderTypeIDKey, File.configuration,
    ]

    // MARK: - Loading

    /// Loads a sandbox made by `create(at:merchantIdentifier:force:now:)`. Keys are parsed once, here.
    /// - Throws: `SandboxError.Code.folderMissing`, `.fileMissing` or `.invalidFile` naming the file.
    public static func load(from folder: URL) throws -> Sandbox {
        let folder = folder.standardizedFileURL
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw SandboxError(
                .folderMissing,
                "no sandbox folder at \(folder.path); create one with 'applepay sandbox init \(folder.path) --merchant-id ID'",
                path: folder.path)
        }
        func text(_ name: String) throws -> String {
            let url = folder.appendingPathComponent(name)
            guard FileManager.default.fileExists(atPath: url.path) else {
                throw SandboxError(
                    .fileMissing, "\(url.path) is missing: is this a sandbox folder?", path: url.path)
            }
            do {
                return try String(contentsOf: url, encoding: .utf8)
            } catch {
                throw SandboxError(.invalidFile, "cannot read \(url.path)", path: url.path)
            }
        }
        /// What `parse` makes of file `name`; `invalidFile` ("`name` is not `what`") when it throws.
        func parsed<T>(_ name: String, _ what: String, _ parse: (String) throws -> T) throws -> T {
            do {
                return try parse(try text(name))
            } catch let error as SandboxError {
                throw error
            } catch {
                throw SandboxError(
                    .invalidFile, "\(name) is not \(what)", path: folder.appendingPathComponent(name).path)
            }
        }
        func credential(_ certificateName: String, _ keyName: String) throws -> SandboxAuthority.Credential {
            let certificate = try parsed(certificateName, "a PEM certificate") { try Certificate(pem: $0) }
            let key = try parsed(keyName, "a PEM private key") { try PrivateKey(pem: $0) }
            do {
                return try SandboxAuthority.Credential(certificate: certificate, privateKey: key)
            } catch {
                throw SandboxError(
                    .invalidFile, "\(keyName) does not match \(certificateName)",
                    path: folder.appendingPathComponent(keyName).path)
            }
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let configuration = try parsed(File.configuration, "a sandbox configuration") {
            try decoder.decode(Configuration.self, from: Data($0.utf8))
        }
        guard configuration.format == 1 else {
            throw SandboxError(
                .invalidFile,
                "\(File.configuration) has format \(configuration.format); this tool reads format 1",
                path: folder.appendingPathComponent(File.configuration).path)
        }
        let authority = SandboxAuthority(
            root: try credential(File.root, File.rootKey),
            intermediate: try credential(File.intermediate, File.intermediateKey),
            merchantCA: try credential(File.merchantCA, File.merchantCAKey),
            ecLeaf: try credential(File.ecLeaf, File.ecLeafKey),
            rsaLeaf: try credential(File.rsaLeaf, File.rsaLeafKey))
        // Sandboxes made before Wallet orders get their Wallet CA and Order Type ID certificate on first load.
        let walletCA: SandboxAuthority.Credential
        let orderTypeID: SandboxAuthority.Credential
        if FileManager.default.fileExists(atPath: folder.appendingPathComponent(File.orderTypeID).path) {
            walletCA = try credential(File.walletCA, File.walletCAKey)
            orderTypeID = try credential(File.orderTypeID, File.orderTypeIDKey)
        } else {
            do {
                (walletCA, orderTypeID) = try makeOrderCredentials(
                    authority: authority,
                    merchant: SandboxAuthority.Merchant(
                        identifier: configuration.merchantIdentifier, teamIdentifier: configuration.teamIdentifier,
                        organization: configuration.organization),
                    merchantIdentifier: configuration.merchantIdentifier, now: Date())
                for (name, text, mode) in [
                    (File.walletCA, walletCA.certificate.pemRepresentation, AtomicFile.publicMode),
                    (File.walletCAKey, walletCA.privateKey.pemRepresentation, AtomicFile.privateMode),
                    (File.orderTypeIDKey, orderTypeID.privateKey.pemRepresentation, AtomicFile.privateMode),
                    (File.orderTypeID, orderTypeID.certificate.pemRepresentation, AtomicFile.publicMode),
                ] {
                    try AtomicFile.write(text, to: folder.appendingPathComponent(name), mode: mode)
                }
            } catch let error as SandboxError {
                throw error
            } catch {
                throw SandboxError(
                    .writeFailed, "cannot add the Order Type ID certificate to \(folder.path): \(error)",
                    path: folder.path)
            }
        }
        do {
            return try Sandbox(
                folder: folder, configuration: configuration, authority: authority,
                paymentProcessingEC: try credential(File.paymentProcessingEC, File.paymentProcessingECKey),
                paymentProcessingRSA: try credential(File.paymentProcessingRSA, File.paymentProcessingRSAKey),
                merchantIdentity: try credential(File.merchantIdentity, File.merchantIdentityKey),
                walletCA: walletCA, orderTypeID: orderTypeID)
        } catch let error as SandboxError {
            throw error
        } catch {
            throw SandboxError(
                .invalidFile, "the sandbox's certificates are not usable: \(error)")
        }
    }
}
