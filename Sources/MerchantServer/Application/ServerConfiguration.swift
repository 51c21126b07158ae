import Cryptography
import Foundation
import Foundations
import HTTPClient
import HTTPCore
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantStore
import MerchantWallet
import ProviderWebhooks

/// A certificate file and its private key file (both PEM).
public struct CertificateKeyPaths: Codable, Sendable, Hashable {
    public var certificate: String
    public var key: String
}

/// Everything `applepay serve` needs: where to listen, the store, the processor, the public URL, the merchant's keys
/// and whom to trust. Typed: each value is parsed once where its text enters (a flag, or the file through
/// ``load(file:)``, which reports every problem with its path; see `ConfigurationFile.swift` for the file's shape).
/// Flags override the file; `--sandbox DIR` fills in the sandbox's certificates and root.
public struct MerchantServerConfiguration: Sendable {
    public var host: String = "127.0.0.1"
    public var port: UInt16 = 8080
    /// Where orders live (`--store`, the file's `server.store`); default `sqlite:applepay-orders.sqlite`.
    public var storeLocation: OrderStoreLocation = .sqlite(path: "applepay-orders.sqlite")
    /// How many connections a PostgreSQL store keeps (file: `server.storePoolSize`); unused for SQLite.
    public var storePoolSize: Int = 4
    public var maximumBodySize: Int = 64 * 1024
    /// Seconds a connection may stay idle, also in the middle of a request, before it is closed.
    public var connectionTimeout: Int = 30
    /// Seconds a client has to send a whole request (head and body), however steadily it trickles.
    public var requestTimeout: Int = 30
    /// Connections open at once, keep-alive ones included (libmicrohttpd with epoll; each costs a descriptor and a
    /// few kilobytes, no thread).
    public var connectionLimit: Int = 4096
    /// Connections open at once from one client address (0: no limit).
    public var perClientConnectionLimit: Int = 64
    /// Checkouts and sheet updates a client address may make (`nil`: no limit).
    public var rateLimits: RateLimits? = RateLimits()
    /// The payment processor's share of the server for payments (docs/LIMITS.md).
    public var processorShare: Bulkhead.Limits = PaymentService.defaultShare
    /// Apple's merchant-validation gateway's share (docs/LIMITS.md).
    public var merchantValidationShare: Bulkhead.Limits = MerchantValidator.defaultShare
    /// How long Apple's merchant-token notification waits for its event to be pulled and applied (then `500`).
    public var tokenNotificationTimeLimit: Duration = .seconds(5)
    /// Apple's merchant-token event pulls: how many at once, how many waiting, and for how long.
    public var tokenNotificationShare: Bulkhead.Limits = TokenNotifications.defaultShare
    /// How long an unpaid checkout lives; then it and its events are pruned.
    public var checkoutLifetime: Duration = .seconds(24 * 3600)
    /// How often expired checkouts are pruned (and once at start-up).
    public var pruneInterval: Duration = .seconds(600)
    /// The proxy for outgoing TLS (merchant validation, the processor): `nil` uses none, whatever the environment's
    /// `https_proxy`/`ALL_PROXY` say.
    public var proxy: String?
    public var threads: Int = ProcessInfo.processInfo.activeProcessorCount
    /// The catalog (the demo catalog when the file has none) and the processor's time limit.
    public var store: StoreConfiguration = .demo
    /// The payment processor (`--processor URL`, the file's `processor` section). `.sandbox`, the default, starts
    /// only in sandbox mode, whose plug-in runs the sandbox processor service in process, its ledger in
    /// ``sandboxLedgerPath``.
    public var processor: ProcessorChoice = .sandbox
    /// How the `http` processor authenticates us (`processor.bearerTokenFile` or `processor.clientCertificate`):
    /// required outside sandbox mode.
    public var processorAuthentication = HTTPProcessorAuthentication()
    /// The one base URL every published URL is under (`--public-url`, the file's `server.publicURL`); `nil`: the
    /// server's own address once bound, `http://HOST:PORT` (see ``PublicURL``).
    public var publicURL: PublicURL?
    /// Payment Processing certificates and keys; tokens are decrypted with the one whose public key hash matches.
    public var paymentProcessing: [CertificateKeyPaths] = []
    /// The Merchant Identity certificate and key for merchant validation; defaults to the store configuration's
    /// `merchantValidation` paths.
    public var merchantIdentity: CertificateKeyPaths?
    /// The root that token signatures must chain to; `nil` is Apple Root CA - G3.
    public var trustedRootPath: String?
    /// Roots trusted for the gateway's TLS certificate instead of the system's (tests).
    public var gatewayTrustedRootsPath: String?
    /// Wallet orders: `orderDetails` in payment answers, the orders web service (at ``publicURL``'s `/wallet`),
    /// pushes; nil: off. `--sandbox` turns them on with the sandbox's Order Type ID certificate.
    public var walletOrders: WalletOrdersSettings?
    /// The sandbox folder, when serving in sandbox mode.
    public var sandboxFolder: String?
    /// The sandbox processor's ledger when it runs in process; default: `sandbox-processor-ledger.sqlite` beside
    /// the store (in memory for an in-memory store).
    public var sandboxLedgerPath: String?
    /// Sandbox mode only: the sandbox gateway (`applepay sandbox gateway`) that merchant validation may use, its TLS
    /// certificate trusted through the sandbox root. Ignored without a sandbox folder.
    public var sandboxGatewayURL: String?
    /// Whether the checkout page loads Apple's Apple Pay JS SDK (for browsers other than Safari); the page's
    /// Content-Security-Policy then allows that one host.
    public var loadsApplePayJSSDK = false
    /// The admin API's bearer token (`APPLEPAY_ADMIN_TOKEN` or the file's `adminToken`); `nil` turns it off. At
    /// least ``minimumAdminTokenLength`` characters, or the server does not start (`weakAdminToken`).
    public var adminToken: String?
    /// The providers whose webhooks are taken (`POST /webhooks/<provider>`) and the file holding each one's signing
    /// secret (the file's `processor.webhookSecretFile` or, for Adyen, `processor.webhookHMACKeyFile`); read at
    /// start-up with ``KeyFile``'s checks (refused unless a file of this user's, not open to group or others).
    public var webhookSecretFiles: [WebhookProvider: String] = [:]
    /// Failed admin API attempts one client may make (then `429`; docs/LIMITS.md); `nil`: no limit.
    public var adminFailureLimit: RateLimit? = BearerAuthentication.defaultFailureLimit
    /// The load balancers whose forwarding header names the client (the file's `server.trustedProxies` and
    /// `server.forwardedHeader`); none: every request is its TCP peer's (docs/DEPLOYMENT.md).
    public var trustedProxies = TrustedProxies()

    /// The shortest admin token accepted: 32 characters (`openssl rand -hex 32` makes 64).
    public static let minimumAdminTokenLength = 32

    /// What is wrong with `token` as the admin token, or `nil` when it will do. Never shows the token.
    static func adminTokenProblem(_ token: String) -> String? {
        guard token.count < minimumAdminTokenLength else { return nil }
        return "the admin token is \(token.count) characters long; it must have at least \(minimumAdminTokenLength) "
            + "(make one with `openssl rand -hex 32`)"
    }
    /// How often the reconciler runs (and it runs once at start-up).
    public var reconcileInterval: Duration = .seconds(30)
    /// How old an unsettled payment must be before the reconciler looks it up; longer than the processor limit.
    public var reconcileAfter: Duration = .seconds(60)

    public init() {}

    /// The sandbox ledger path in effect (see ``sandboxLedgerPath``).
    package func effectiveSandboxLedgerPath() throws(ServerStartError) -> String {
        if let sandboxLedgerPath { return sandboxLedgerPath }
        switch storeLocation {
        case .postgres:
            // A shared (PostgreSQL) store has no folder: the ledger goes to the sandbox's, never the current folder.
            let folder = URL(fileURLWithPath: sandboxFolder ?? FileManager.default.temporaryDirectory.path)
            return folder.appendingPathComponent("sandbox-processor-ledger.sqlite").path
        case .sqlite(let path):
            if path == ":memory:" { return ":memory:" }
            return URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent(
                "sandbox-processor-ledger.sqlite"
            ).path
        }
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
}

/// Why the server refused to start, with a stable code and a message naming the file or setting to fix.
public struct ServerStartError: CodedError {
    public let code: Code
    public let message: String
    /// For `invalidConfiguration` from a file: every problem found, each with its path.
    public let problems: [ConfigurationProblem]

    public init(_ code: Code, _ message: String, problems: [ConfigurationProblem] = []) {
        self.code = code
        self.message = message
        self.problems = problems
    }

    public var description: String { message }

    /// A refused key or secret file (``KeyFile``): `missingFile`, `unreadableFile` or `insecure` (a file others may
    /// read or replace).
    init(keyFile error: KeyFile.Failure, insecure: Code = .insecureKeyFile) {
        switch error.code {
        case .missing: self.init(.missingFile, error.message)
        case .unreadable: self.init(.unreadableFile, error.message)
        default: self.init(insecure, error.message)
        }
    }
}

extension ErrorCode<ServerStartError> {
    public static var invalidConfiguration: Self { Self("invalidConfiguration") }
    public static var invalidStore: Self { Self("invalidStore") }
    /// A key or certificate file does not exist.
    public static var missingFile: Self { Self("missingFile") }
    /// A key or certificate file exists but cannot be read or parsed.
    public static var unreadableFile: Self { Self("unreadableFile") }
    /// A private key file is a symbolic link, not a regular file, another user's, or open to group or others.
    public static var insecureKeyFile: Self { Self("insecureKeyFile") }
    /// A configuration file that holds the admin token is a symbolic link, not a regular file, another user's,
    /// or open to group or others.
    public static var insecureConfigurationFile: Self { Self("insecureConfigurationFile") }
    /// The admin token is shorter than ``MerchantServerConfiguration/minimumAdminTokenLength``.
    public static var weakAdminToken: Self { Self("weakAdminToken") }
    /// A private key is not the one of its certificate.
    public static var keyMismatch: Self { Self("keyMismatch") }
    /// No Payment Processing certificate was configured.
    public static var noPaymentProcessingKey: Self { Self("noPaymentProcessingKey") }
    public static var cannotListen: Self { Self("cannotListen") }
    /// No payment processor: outside sandbox mode, `--processor URL` is required.
    public static var noProcessor: Self { Self("noProcessor") }
    /// The payment provider refused the configured key at start-up (401/403).
    public static var processorNotAuthorized: Self { Self("processorNotAuthorized") }
    /// `MerchantApplication.run()` was called for an application whose services run, or ran, already.
    public static var alreadyRunning: Self { Self("alreadyRunning") }
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
        /// Parses a file's PEM text; a failure is `unreadableFile` with `message`.
        func parse<T>(_ data: Data, _ message: String, _ make: (String) throws -> T) throws(ServerStartError) -> T {
            do {
                return try make(String(decoding: data, as: UTF8.self))
            } catch {
                throw ServerStartError(.unreadableFile, message)
            }
        }
        let certificate = try parse(
            certificateData, "the \(role) certificate \(paths.certificate) is not a PEM certificate",
            Certificate.init(pem:))
        let keyData: Data
        do {
            keyData = try KeyFile.read(paths.key, description: "the \(role) private key")
        } catch {
            throw ServerStartError(keyFile: error)
        }
        let key = try parse(
            keyData, "the \(role) private key \(paths.key) is not a readable, unencrypted PEM key",
            PrivateKey.init(pem:))
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

/// Where the Wallet orders credentials are. The web service is at the server's one public URL
/// (``MerchantServerConfiguration/publicURL``), under `/wallet`.
public struct WalletOrdersSettings: Sendable {
    /// The Order Type ID certificate (its subject UID is the order type identifier) and key.
    public var orderTypeID: CertificateKeyPaths
    /// The Wallet (WWDR) intermediate certificate(s), PEM, included in every package signature.
    public var intermediatePath: String
    /// APNs for update pushes; nil: no pushes.
    public var apns: APNsSettings?
}
