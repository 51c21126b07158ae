import Cryptography
import Foundation
import Foundations
import HTTPClient
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantWallet

/// A certificate file and its private key file (both PEM).
public struct CertificateKeyPaths: Codable, Sendable, Equatable {
    public var certificate: String
    public var key: String

    public init(certificate: String, key: String) {
        self.certificate = certificate
        self.key = key
    }
}

/// Everything `applepay serve` needs: where to listen, the store, the merchant's keys and whom to trust.
///
/// The JSON configuration file is a `StoreConfiguration` with an optional `"server"` object (a file holding only
/// `"server"` serves the demo store):
/// `{"host", "port", "store": "sqlite:PATH" | "postgresql://...", "storePoolSize", "maximumBodySize",
/// "connectionTimeout", "requestTimeout", "perClientConnectionLimit", "rateLimits": {"checkouts": {"perMinute",
/// "burst"}, "updates": {...}}, "checkoutLifetimeSeconds", "pruneIntervalSeconds", "proxy", "threads",
/// "paymentProcessing": [{"certificate", "key"}], "merchantIdentity": {"certificate", "key"}, "trustedRoot": PATH,
/// "gatewayTrustedRoots": PATH, "applePayJSSDK": BOOL}` (docs/LIMITS.md explains the limits).
/// Flags override the file; `--sandbox DIR` fills in the sandbox's certificates and root.
public struct MerchantServerConfiguration: Sendable {
    public var host: String = "127.0.0.1"
    public var port: UInt16 = 8080
    /// `sqlite:PATH` (or `sqlite::memory:`) or a PostgreSQL URI (`postgres://`, `postgresql://`, see
    /// ``OrderStoreLocation``); default `sqlite:applepay-orders.sqlite`.
    public var storeLocation: String = "sqlite:applepay-orders.sqlite"
    /// How many connections a PostgreSQL store keeps (file: `server.storePoolSize`); unused for SQLite.
    public var storePoolSize: Int = 4
    public var maximumBodySize: Int = 64 * 1024
    /// Seconds a connection may stay idle, also in the middle of a request, before it is closed.
    public var connectionTimeout: Int = 30
    /// Seconds a client has to send a whole request (head and body), however steadily it trickles.
    public var requestTimeout: Int = 30
    /// Connections open at once from one client address (0: no limit).
    public var perClientConnectionLimit: Int = 64
    /// Checkouts and sheet updates a client address may make (`nil`: no limit).
    public var rateLimits: RateLimits? = RateLimits()
    /// The payment processor's share of the server for payments (docs/LIMITS.md).
    public var processorShare: Bulkhead.Limits = PaymentService.defaultShare
    /// Apple's merchant-validation gateway's share (docs/LIMITS.md).
    public var merchantValidationShare: Bulkhead.Limits = MerchantValidator.defaultShare
    /// How long an unpaid checkout lives; then it and its events are pruned.
    public var checkoutLifetime: Duration = .seconds(24 * 3600)
    /// How often expired checkouts are pruned (and once at start-up).
    public var pruneInterval: Duration = .seconds(600)
    /// The proxy for outgoing TLS (merchant validation, the processor): `nil` uses none, whatever the environment's
    /// `https_proxy`/`ALL_PROXY` say.
    public var proxy: String?
    public var threads: Int = ProcessInfo.processInfo.activeProcessorCount
    public var store: StoreConfiguration = .demo
    /// Payment Processing certificates and keys; tokens are decrypted with the one whose public key hash matches.
    public var paymentProcessing: [CertificateKeyPaths] = []
    /// The Merchant Identity certificate and key for merchant validation; defaults to the store configuration's
    /// `merchantValidation` paths.
    public var merchantIdentity: CertificateKeyPaths?
    /// The root that token signatures must chain to; `nil` is Apple Root CA - G3.
    public var trustedRootPath: String?
    /// Roots trusted for the gateway's TLS certificate instead of the system's (tests).
    public var gatewayTrustedRootsPath: String?
    /// Wallet orders: `orderDetails` in payment answers, the orders web service, pushes; nil: off. `--sandbox`
    /// turns them on with the sandbox's Order Type ID certificate.
    public var walletOrders: WalletOrdersSettings?
    /// The sandbox folder, when serving in sandbox mode.
    public var sandboxFolder: String?
    /// The payment processor's base URL (a service speaking docs/PROCESSOR-PROTOCOL.md). Without it, only sandbox
    /// mode may start: it runs the sandbox processor service in process, its ledger in ``sandboxLedgerPath``.
    public var processorURL: String?
    /// The sandbox processor's ledger when it runs in process; default: `sandbox-processor-ledger.sqlite` beside
    /// the store (in memory for an in-memory store).
    public var sandboxLedgerPath: String?
    /// Sandbox mode only: the sandbox gateway (`applepay sandbox gateway`) that merchant validation may use, its TLS
    /// certificate trusted through the sandbox root. Ignored without a sandbox folder.
    public var sandboxGatewayURL: String?
    /// Whether the checkout page loads Apple's Apple Pay JS SDK (for browsers other than Safari); the page's
    /// Content-Security-Policy then allows that one host.
    public var loadsApplePayJSSDK = false
    /// The admin API's bearer token (`APPLEPAY_ADMIN_TOKEN` or the file's `adminToken`); `nil` turns it off.
    public var adminToken: String?
    /// How often the reconciler runs (and it runs once at start-up).
    public var reconcileInterval: Duration = .seconds(30)
    /// How old an unsettled payment must be before the reconciler looks it up; longer than the processor limit.
    public var reconcileAfter: Duration = .seconds(60)

    public init() {}

    /// The sandbox ledger path in effect (see ``sandboxLedgerPath``).
    package func effectiveSandboxLedgerPath() throws(ServerStartError) -> String {
        if let sandboxLedgerPath { return sandboxLedgerPath }
        guard storeLocation.hasPrefix("sqlite:") else {
            // A shared (PostgreSQL) store has no folder: the ledger goes to the sandbox's, never the current folder.
            let folder = URL(fileURLWithPath: sandboxFolder ?? FileManager.default.temporaryDirectory.path)
            return folder.appendingPathComponent("sandbox-processor-ledger.sqlite").path
        }
        let store = try sqlitePath()
        if store == ":memory:" { return ":memory:" }
        return URL(fileURLWithPath: store).deletingLastPathComponent().appendingPathComponent(
            "sandbox-processor-ledger.sqlite"
        ).path
    }

    /// The `"server"` object of the configuration file.
    struct FileSection: Decodable {
        var host: String?
        var port: UInt16?
        var store: String?
        var storePoolSize: Int?
        var maximumBodySize: Int?
        var connectionTimeout: Int?
        var requestTimeout: Int?
        var perClientConnectionLimit: Int?
        var rateLimits: RateLimitsSection?
        var checkoutLifetimeSeconds: Int?
        var pruneIntervalSeconds: Int?
        var proxy: String?
        var threads: Int?
        var paymentProcessing: [CertificateKeyPaths]?
        var merchantIdentity: CertificateKeyPaths?
        var trustedRoot: String?
        var gatewayTrustedRoots: String?
        var processor: String?
        var adminToken: String?
        var reconcileIntervalSeconds: Int?
        var reconcileAfterSeconds: Int?
        var applePayJSSDK: Bool?
    }

    /// `"rateLimits"`: either limit may be given alone; `"off"` instead of the object turns both off.
    struct RateLimitsSection: Decodable {
        var checkouts: RateLimit?
        var updates: RateLimit?
        var off = false

        init(from decoder: any Decoder) throws {
            if let text = try? decoder.singleValueContainer().decode(String.self), text == "off" {
                off = true
                return
            }
            struct Fields: Decodable {
                var checkouts: RateLimit?
                var updates: RateLimit?
            }
            let fields = try Fields(from: decoder)
            checkouts = fields.checkouts
            updates = fields.updates
        }
    }

    /// Reads a configuration file: the store, and the `"server"` section when present.
    /// Relative paths in the `"server"` section are relative to the file's folder.
    /// - Throws: `ServerStartError` `invalidConfiguration`.
    public static func load(file: String) throws(ServerStartError) -> MerchantServerConfiguration {
        let url = URL(fileURLWithPath: file)
        guard let data = try? Data(contentsOf: url) else {
            throw ServerStartError(.invalidConfiguration, "cannot read the configuration file \(file)")
        }
        var configuration = MerchantServerConfiguration()
        // A file with nothing but a "server" section keeps the demo store.
        let keys = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]).map { Set($0.keys) }
        do {
            if keys != ["server"] { configuration.store = try StoreConfiguration.decode(data) }
        } catch {
            throw ServerStartError(.invalidConfiguration, "\(file): \(error.message) (\(error.code))")
        }
        struct Envelope: Decodable { var server: FileSection? }
        let section: FileSection?
        do {
            section = try JSONDecoder().decode(Envelope.self, from: data).server
        } catch {
            throw ServerStartError(
                .invalidConfiguration, "\(file): the \"server\" section does not have the expected shape")
        }
        let base = url.deletingLastPathComponent()
        func resolve(_ path: String) -> String {
            path.hasPrefix("/") ? path : base.appendingPathComponent(path).standardizedFileURL.path
        }
        if let section {
            if let host = section.host { configuration.host = host }
            if let port = section.port { configuration.port = port }
            if let store = section.store {
                configuration.storeLocation =
                    store.hasPrefix("sqlite:") && !store.hasPrefix("sqlite::") && !store.hasPrefix("sqlite:/")
                    ? "sqlite:" + resolve(String(store.dropFirst("sqlite:".count))) : store
            }
            if let size = section.storePoolSize {
                guard (1...100).contains(size) else {
                    throw ServerStartError(.invalidConfiguration, "\(file): server.storePoolSize must be 1 to 100")
                }
                configuration.storePoolSize = size
            }
            if let size = section.maximumBodySize { configuration.maximumBodySize = size }
            if let threads = section.threads { configuration.threads = threads }
            if let timeout = section.connectionTimeout { configuration.connectionTimeout = timeout }
            if let timeout = section.requestTimeout {
                guard timeout > 0 else {
                    throw ServerStartError(.invalidConfiguration, "\(file): server.requestTimeout must be > 0")
                }
                configuration.requestTimeout = timeout
            }
            if let limit = section.perClientConnectionLimit {
                guard limit >= 0 else {
                    throw ServerStartError(
                        .invalidConfiguration, "\(file): server.perClientConnectionLimit must be >= 0 (0: no limit)")
                }
                configuration.perClientConnectionLimit = limit
            }
            if let limits = section.rateLimits {
                if limits.off {
                    configuration.rateLimits = nil
                } else {
                    var chosen = RateLimits()
                    if let checkouts = limits.checkouts { chosen.checkouts = checkouts }
                    if let updates = limits.updates { chosen.updates = updates }
                    for (name, limit) in [("checkouts", chosen.checkouts), ("updates", chosen.updates)]
                    where limit.perMinute < 1 || limit.burst < 1 {
                        throw ServerStartError(
                            .invalidConfiguration,
                            "\(file): server.rateLimits.\(name) needs perMinute >= 1 and burst >= 1")
                    }
                    configuration.rateLimits = chosen
                }
            }
            if let seconds = section.checkoutLifetimeSeconds {
                guard seconds >= 60 else {
                    throw ServerStartError(
                        .invalidConfiguration, "\(file): server.checkoutLifetimeSeconds must be at least 60")
                }
                configuration.checkoutLifetime = .seconds(seconds)
            }
            if let seconds = section.pruneIntervalSeconds {
                guard seconds > 0 else {
                    throw ServerStartError(.invalidConfiguration, "\(file): server.pruneIntervalSeconds must be > 0")
                }
                configuration.pruneInterval = .seconds(seconds)
            }
            configuration.proxy = section.proxy
            configuration.paymentProcessing = (section.paymentProcessing ?? []).map {
                CertificateKeyPaths(certificate: resolve($0.certificate), key: resolve($0.key))
            }
            configuration.merchantIdentity = section.merchantIdentity.map {
                CertificateKeyPaths(certificate: resolve($0.certificate), key: resolve($0.key))
            }
            configuration.trustedRootPath = section.trustedRoot.map(resolve)
            configuration.gatewayTrustedRootsPath = section.gatewayTrustedRoots.map(resolve)
            configuration.processorURL = section.processor
            configuration.adminToken = section.adminToken
            configuration.loadsApplePayJSSDK = section.applePayJSSDK ?? false
            if let seconds = section.reconcileIntervalSeconds {
                guard seconds > 0 else {
                    throw ServerStartError(
                        .invalidConfiguration, "\(file): server.reconcileIntervalSeconds must be > 0")
                }
                configuration.reconcileInterval = .seconds(seconds)
            }
            if let seconds = section.reconcileAfterSeconds {
                guard seconds > 30 else {
                    throw ServerStartError(
                        .invalidConfiguration,
                        "\(file): server.reconcileAfterSeconds must be more than 30 (the longest processor time limit)")
                }
                configuration.reconcileAfter = .seconds(seconds)
            }
        }
        return configuration
    }

    /// Uses a sandbox folder: its root as the token trust anchor, its Payment Processing (EC and RSA) and Merchant
    /// Identity certificates, and the merchant identifier they were issued to.
    public mutating func useSandbox(folder: String) {
        let base = URL(fileURLWithPath: folder).standardizedFileURL
        func path(_ name: String) -> String { base.appendingPathComponent(name).path }
        sandboxFolder = base.path
        trustedRootPath = path("root.pem")
        paymentProcessing = [
            CertificateKeyPaths(
                certificate: path("payment-processing-ec.pem"), key: path("payment-processing-ec.key.pem")),
            CertificateKeyPaths(
                certificate: path("payment-processing-rsa.pem"), key: path("payment-processing-rsa.key.pem")),
        ]
        merchantIdentity = CertificateKeyPaths(
            certificate: path("merchant-identity.pem"), key: path("merchant-identity.key.pem"))
        if walletOrders == nil, FileManager.default.fileExists(atPath: path("order-type-id.pem")) {
            walletOrders = WalletOrdersSettings(
                orderTypeID: CertificateKeyPaths(
                    certificate: path("order-type-id.pem"), key: path("order-type-id.key.pem")),
                intermediatePath: path("wallet-ca.pem"))
        }
    }

    /// The identity certificate and key paths in effect.
    var effectiveMerchantIdentity: CertificateKeyPaths? {
        if let merchantIdentity { return merchantIdentity }
        let settings = store.merchantValidation
        if let certificate = settings.identityCertificatePath, let key = settings.identityKeyPath {
            return CertificateKeyPaths(certificate: certificate, key: key)
        }
        return nil
    }

    /// The SQLite path of `storeLocation`.
    /// - Throws: `ServerStartError` `invalidStore` for anything but `sqlite:PATH`.
    public func sqlitePath() throws(ServerStartError) -> String {
        guard storeLocation.hasPrefix("sqlite:"), storeLocation.count > "sqlite:".count else {
            throw ServerStartError(.invalidStore, "the store must be sqlite:PATH (got '\(storeLocation)')")
        }
        return String(storeLocation.dropFirst("sqlite:".count))
    }
}

/// Why the server refused to start, with a stable code and a message naming the file or setting to fix.
public struct ServerStartError: CodedError {
    public struct Code: ErrorCode {
        public typealias Owner = ServerStartError
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }

        public static let invalidConfiguration = Code("invalidConfiguration")
        public static let invalidStore = Code("invalidStore")
        /// A key or certificate file does not exist.
        public static let missingFile = Code("missingFile")
        /// A key or certificate file exists but cannot be read or parsed.
        public static let unreadableFile = Code("unreadableFile")
        /// A private key file is a symbolic link, not a regular file, another user's, or open to group or others.
        public static let insecureKeyFile = Code("insecureKeyFile")
        /// A private key is not the one of its certificate.
        public static let keyMismatch = Code("keyMismatch")
        /// No Payment Processing certificate was configured.
        public static let noPaymentProcessingKey = Code("noPaymentProcessingKey")
        public static let cannotListen = Code("cannotListen")
        /// No payment processor: outside sandbox mode, `--processor URL` is required.
        public static let noProcessor = Code("noProcessor")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// A certificate with its private key, loaded once, checked to belong together.
public struct MerchantCredential: Sendable {
    public let certificate: Certificate
    public let privateKey: PrivateKey
    /// The PEM texts, for libcurl's in-memory client certificate.
    let certificatePEM: Data
    let privateKeyPEM: Data

    /// Loads and checks a certificate and key: both exist and parse, the key file is read with ``KeyFile`` (no
    /// symbolic link; a regular file of this user's, not open to group or others), and the key is the certificate's.
    /// - Throws: `ServerStartError` `missingFile`, `unreadableFile`, `insecureKeyFile` or `keyMismatch`.
    public static func load(_ paths: CertificateKeyPaths, role: String) throws(ServerStartError) -> MerchantCredential {
        let certificateData = try readFile(paths.certificate, role: "\(role) certificate")
        let certificate: Certificate
        do {
            certificate = try Certificate(pem: String(decoding: certificateData, as: UTF8.self))
        } catch {
            throw ServerStartError(
                .unreadableFile, "the \(role) certificate \(paths.certificate) is not a PEM certificate")
        }
        let keyData: Data
        do {
            keyData = try KeyFile.read(paths.key, description: "the \(role) private key")
        } catch {
            switch error.code {
            case .missing: throw ServerStartError(.missingFile, error.message)
            case .unreadable: throw ServerStartError(.unreadableFile, error.message)
            default: throw ServerStartError(.insecureKeyFile, error.message)
            }
        }
        let key: PrivateKey
        do {
            key = try PrivateKey(pem: String(decoding: keyData, as: UTF8.self))
        } catch {
            throw ServerStartError(
                .unreadableFile, "the \(role) private key \(paths.key) is not a readable, unencrypted PEM key")
        }
        guard key.publicKey == certificate.publicKey else {
            throw ServerStartError(
                .keyMismatch,
                "the \(role) private key \(paths.key) does not belong to the certificate \(paths.certificate)")
        }
        return MerchantCredential(
            certificate: certificate, privateKey: key, certificatePEM: certificateData, privateKeyPEM: keyData)
    }

    /// The credential as libcurl's client identity.
    var clientIdentity: ClientIdentity { ClientIdentity(certificatePEM: certificatePEM, privateKeyPEM: privateKeyPEM) }

    package static func readFile(_ path: String, role: String) throws(ServerStartError) -> Data {
        guard FileManager.default.fileExists(atPath: path) else {
            throw ServerStartError(.missingFile, "the \(role) \(path) does not exist")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ServerStartError(.unreadableFile, "the \(role) \(path) cannot be read (check its permissions)")
        }
        return data
    }
}

/// Where the Wallet orders credentials are and how the web service is reached.
public struct WalletOrdersSettings: Sendable {
    /// The Order Type ID certificate (its subject UID is the order type identifier) and key.
    public var orderTypeID: CertificateKeyPaths
    /// The Wallet (WWDR) intermediate certificate(s), PEM, included in every package signature.
    public var intermediatePath: String
    /// The web service's public base URL (https in production); nil: `http://<Host>/wallet` from each request.
    public var webServiceURL: String?
    /// APNs for update pushes; nil: no pushes.
    public var apns: APNsSettings?

    public init(
        orderTypeID: CertificateKeyPaths, intermediatePath: String, webServiceURL: String? = nil,
        apns: APNsSettings? = nil
    ) {
        self.orderTypeID = orderTypeID
        self.intermediatePath = intermediatePath
        self.webServiceURL = webServiceURL
        self.apns = apns
    }
}
