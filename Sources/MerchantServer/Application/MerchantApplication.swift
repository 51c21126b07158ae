import Cryptography
import Foundation
import Foundations
import HTTPClient
import HTTPCore
import HTTPServer
import JSONLogging
import Logging
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantStore
import MerchantWallet
import Processors
import ProviderWebhooks
import ServiceLifecycle
import Synchronization

/// The merchant server: configuration checked and keys loaded once, the store open, the API served over HTTP, and
/// the background work (reconciler, subscription scheduler, checkout pruner, Wallet order pushes) beside it as
/// swift-service-lifecycle services that stop together.
///
/// Two ways to run it: ``start(_:processor:tokenOpener:plugins:logger:clock:)`` (its services run in the background
/// until ``shutdown()``: `applepay demo`, the tests), or ``assemble(_:processor:tokenOpener:plugins:logger:clock:)``
/// and then ``run()``, as a service of the caller's `ServiceGroup` (`applepay serve`, whose group shuts it down
/// gracefully on SIGTERM or SIGINT).
public final class MerchantApplication: Service, Sendable {
    public let configuration: MerchantServerConfiguration
    public let api: MerchantAPI
    public let store: any OrderStore
    public let processor: any PaymentProcessor
    /// The base URL every published URL is under: the configured one, or the server's own address.
    public let publicURL: PublicURL
    private let server: HTTPServer
    /// The HTTP server, the reconciler, the subscription scheduler, the checkout pruner and the pushes, shut down
    /// gracefully in the reverse order: the server first (it finishes the requests in flight), the pushes last.
    private let services: ServiceGroup
    /// What the plug-ins stop when the server stops.
    private let stopPlugins: @Sendable () async -> Void
    private let phase = Mutex(Phase.assembled)

    /// Where the application is in its life.
    private enum Phase {
        /// Listening (requests are answered), its services not running yet.
        case assembled
        /// Its services running: in `background` when ``start(_:processor:tokenOpener:plugins:logger:clock:)``
        /// started them, or in the caller's ``run()``.
        case running(background: Task<Void, Never>?)
        case stopped
    }

    /// The base URL, e.g. `http://127.0.0.1:8080`.
    public var url: String {
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "http://\(host):\(server.port)"
    }

    /// The bound port (useful with port 0).
    public var port: UInt16 { server.port }

    init(
        configuration: MerchantServerConfiguration, api: MerchantAPI, store: any OrderStore,
        processor: any PaymentProcessor, publicURL: PublicURL, server: HTTPServer, services: [any Service],
        stopPlugins: @escaping @Sendable () async -> Void
    ) {
        self.configuration = configuration
        self.api = api
        self.store = store
        self.processor = processor
        self.publicURL = publicURL
        self.server = server
        // Logged by the group at debug level only; the server's own lines go through `api.logger`.
        self.services = ServiceGroup(services: services, logger: Logger(label: "MerchantServer"))
        self.stopPlugins = stopPlugins
    }

    /// Assembles the server (``assemble(_:processor:tokenOpener:plugins:logger:clock:)``) and runs its services in
    /// the background until ``shutdown()``.
    /// - Parameters:
    ///   - configuration: what to serve.
    ///   - processor: overrides the configured processor (tests).
    ///   - tokenOpener: overrides the token verifier built from the configured keys (tests).
    ///   - plugins: installed before the store opens (sandbox mode: `MerchantSandbox.SandboxMode`).
    ///   - logger: where the request lines and the services' lines go; by default swift-log's bootstrapped handler
    ///     (`applepay` bootstraps ``JSONLogging/JSONLogHandler`` over standard error).
    ///   - clock: "now" for pricing and token checks.
    /// - Throws: `ServerStartError` with a message naming what to fix.
    public static func start(
        _ configuration: MerchantServerConfiguration, processor: (any PaymentProcessor)? = nil,
        tokenOpener: (any PaymentTokenOpening)? = nil, plugins: [any MerchantServerPlugin] = [],
        logger: Logger = Logger(label: "applepay.server"),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) async throws(ServerStartError) -> MerchantApplication {
        let application = try await assemble(
            configuration, processor: processor, tokenOpener: tokenOpener, plugins: plugins, logger: logger,
            clock: clock)
        application.runServicesInBackground()
        return application
    }

    /// Checks the configuration, loads the keys, opens the store and starts listening; the services (reconciler,
    /// scheduler, pruner, pushes) start with ``run()``. The parameters are those of
    /// ``start(_:processor:tokenOpener:plugins:logger:clock:)``.
    /// - Throws: `ServerStartError` with a message naming what to fix.
    public static func assemble(
        _ configuration: MerchantServerConfiguration, processor: (any PaymentProcessor)? = nil,
        tokenOpener: (any PaymentTokenOpening)? = nil, plugins: [any MerchantServerPlugin] = [],
        logger: Logger = Logger(label: "applepay.server"),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) async throws(ServerStartError) -> MerchantApplication {
        try refuseWeakAdminToken(configuration)
        let keys = try ServerKeys.load(for: configuration)
        let needsProcessor = processor == nil && configuration.processor == .sandbox
        let plugins = try await InstalledPlugins.install(plugins, for: configuration, needsProcessor: needsProcessor)
        do throws(ServerStartError) {
            try requireProcessor(needsProcessor, from: plugins)
            var configuration = configuration
            configuration.serveAsSandboxMerchant(keys)
            let opener = try chooseTokenOpener(override: tokenOpener, keys: keys, clock: clock)
            let store = try await openStore(configuration, logger: logger)
            let payments = try await choosePayments(
                configuration, override: processor ?? plugins.processor, logger: logger)
            let wallet = try configuration.walletOrders.map { settings throws(ServerStartError) in
                try WalletCredentials.load(settings, logger: logger)
            }
            let webhooks = try webhookEndpoints(configuration)
            let (server, responder) = try bindServer(configuration)
            let parts = Parts(
                configuration: configuration, keys: keys, plugins: plugins, opener: opener, store: store,
                processor: payments, wallet: wallet, webhooks: webhooks, logger: logger, clock: clock)
            let application = try await parts.application(serving: server, through: responder)
            logListening(application, logger: logger)
            return application
        } catch {
            await plugins.stop()
            throw error
        }
    }

    /// Runs the services until the graceful shutdown (of the caller's `ServiceGroup`, or ``shutdown()``) or
    /// cancellation, then stops the plug-ins. The HTTP server shuts down first: it stops accepting connections and
    /// finishes the requests in flight.
    /// - Throws: `ServerStartError` (`alreadyRunning`) when the services run already or the application stopped.
    public func run() async throws {
        let first = phase.withLock { phase in
            guard case .assembled = phase else { return false }
            phase = .running(background: nil)
            return true
        }
        guard first else {
            throw ServerStartError(.alreadyRunning, "the merchant application runs (or ran) already")
        }
        await runServices()
    }

    /// Stops the services (the HTTP server stops accepting connections and finishes the requests in flight; the
    /// background loops return; queued pushes are sent), then the plug-ins. It returns once all have stopped when
    /// ``start(_:processor:tokenOpener:plugins:logger:clock:)`` started them; when the caller's ``run()`` runs them,
    /// that returns once they have. Calling it again does nothing.
    public func shutdown() async {
        let current = phase.withLock { phase in
            defer { if case .assembled = phase { phase = .stopped } }
            return phase
        }
        switch current {
        case .assembled:
            // Never run: only the server listens.
            await server.shutdown()
            await stopped()
        case .running(let background):
            await services.triggerGracefulShutdown()
            await background?.value
        case .stopped:
            return
        }
    }

    private func runServicesInBackground() {
        phase.withLock { phase in
            guard case .assembled = phase else { return }
            phase = .running(background: Task { await self.runServices() })
        }
    }

    private func runServices() async {
        do {
            try await services.run()
        } catch {
            // `alreadyFinished`: shut down before the group began; else a service failed (none throws today).
            if (error as? ServiceGroupError)?.errorCode != .alreadyFinished {
                api.logger.error("a service stopped the server", metadata: ["error": "\(error)"])
            }
            await server.shutdown()
        }
        await stopped()
    }

    /// After the services: the plug-ins stop, and the last log lines go out.
    private func stopped() async {
        phase.withLock { $0 = .stopped }
        await stopPlugins()
        api.logger.info("stopped")
        // Lines to standard error are written behind their callers (`LogOutput`): let them out before returning.
        LogOutput.standardError.flush()
    }

    /// Wallet orders' keys, loaded and checked before the server binds: the Order Type ID credential (checked like
    /// the other keys), its intermediate, and the APNs pusher when configured.
    struct WalletCredentials {
        let orderTypeIdentifier: String
        let credential: MerchantCredential
        let intermediates: [Certificate]
        let pusher: APNsPusher?

        static func load(_ settings: WalletOrdersSettings, logger: Logger) throws(ServerStartError)
            -> WalletCredentials
        {
            try MerchantApplication.loadWalletCredentials(settings, logger: logger)
        }

        /// The service, its web service at `PUBLIC/wallet`, its pushes sent by `pushes` (nil: no APNs configured).
        func service(publicURL: PublicURL, pushes: OrderUpdatePushes?) throws(ServerStartError)
            -> WalletOrdersService
        {
            do {
                return try WalletOrdersService(
                    orderTypeIdentifier: orderTypeIdentifier, certificate: credential.certificate,
                    privateKey: credential.privateKey, intermediates: intermediates, publicURL: publicURL.text,
                    pusher: pushes)
            } catch {
                throw ServerStartError(.keyMismatch, "the Order Type ID key does not match its certificate")
            }
        }
    }

    private static func loadWalletCredentials(_ settings: WalletOrdersSettings, logger: Logger)
        throws(ServerStartError) -> WalletCredentials
    {
        let credential = try MerchantCredential.load(settings.orderTypeID, role: "Order Type ID")
        let data = try MerchantCredential.readFile(settings.intermediatePath, role: "Wallet intermediate certificate")
        let intermediates: [Certificate]
        do {
            intermediates = try Certificate.chain(fromPEM: String(decoding: data, as: UTF8.self))
        } catch {
            throw ServerStartError(
                .unreadableFile, "the Wallet intermediate \(settings.intermediatePath) is not a PEM certificate")
        }
        guard let orderTypeIdentifier = credential.certificate.subjectUID, orderTypeIdentifier.hasPrefix("order.")
        else {
            throw ServerStartError(
                .unreadableFile,
                "the Order Type ID certificate \(settings.orderTypeID.certificate) has no order.… subject UID")
        }
        let pusher = try settings.apns.map { apns throws(ServerStartError) in
            try makeAPNsPusher(apns, topic: orderTypeIdentifier, logger: logger)
        }
        return WalletCredentials(
            orderTypeIdentifier: orderTypeIdentifier, credential: credential, intermediates: intermediates,
            pusher: pusher)
    }

    /// The APNs pusher with its key loaded (owner-only, EC P-256) and its trusted roots.
    private static func makeAPNsPusher(_ settings: APNsSettings, topic: String, logger: Logger)
        throws(ServerStartError) -> APNsPusher
    {
        let data = try MerchantCredential.readFile(settings.keyPath, role: "APNs key")
        var status = stat()
        if stat(settings.keyPath, &status) == 0, status.st_mode & 0o077 != 0 {
            throw ServerStartError(
                .insecureKeyFile, "the APNs key \(settings.keyPath) is readable by other users; run chmod 600 on it")
        }
        let key: PrivateKey
        do {
            key = try PrivateKey(pem: String(decoding: data, as: UTF8.self))
        } catch {
            throw ServerStartError(.unreadableFile, "the APNs key \(settings.keyPath) is not a PEM (.p8) key")
        }
        guard key.kind == .p256 else {
            throw ServerStartError(.unreadableFile, "the APNs key \(settings.keyPath) must be EC P-256 (ES256)")
        }
        let roots = try settings.trustedRootsPath.map { path throws(ServerStartError) in
            try MerchantCredential.readFile(path, role: "APNs trusted roots")
        }
        return APNsPusher(settings: settings, key: key, trustedRootsPEM: roots, topic: topic, logger: logger)
    }

    /// Creates the store's folder 0700 when it is missing; warns when an existing one lets other users in.
    static func makePrivateFolder(for path: String, logger: Logger) throws(ServerStartError) {
        guard path != ":memory:", !path.isEmpty else { return }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var status = stat()
        if stat(folder, &status) != 0 {
            do {
                try FileManager.default.createDirectory(
                    atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw ServerStartError(.invalidStore, "cannot create the store's folder \(folder)")
            }
        } else if status.st_mode & 0o007 != 0 {
            logger.warning(
                "the store's folder is open to other users; chmod 700 it",
                metadata: ["folder": "\(folder)", "mode": "\(String(status.st_mode & 0o777, radix: 8))"])
        }
    }

    /// The processor: the caller's or a plug-in's (sandbox mode runs the sandbox processor service in process),
    /// else the configured one. There is no default: a server with real keys must never "approve" payments that no
    /// processor captured.
    /// The payment processor `configuration` names, as the server would use it (its key read from its file and
    /// checked at the provider): for the tools that speak to the provider outside the server (`applepay reconcile`).
    public static func paymentProcessor(
        for configuration: MerchantServerConfiguration,
        logger: Logger = Logger(label: "applepay.server", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws(ServerStartError) -> any PaymentProcessor {
        try await choosePayments(configuration, override: nil, logger: logger)
    }

    static func choosePayments(
        _ configuration: MerchantServerConfiguration, override: (any PaymentProcessor)?, logger: Logger
    ) async throws(ServerStartError) -> any PaymentProcessor {
        if let override { return override }
        let sandboxMode = configuration.sandboxFolder != nil
        let timeout = configuration.store.processor.timeout
        let processor: any PaymentProcessor
        switch configuration.processor {
        case .http(let url):
            let authentication = configuration.processorAuthentication
            guard sandboxMode || (url.scheme == "https" && !authentication.isEmpty) else {
                throw ServerStartError(
                    .invalidConfiguration,
                    "outside sandbox mode the http processor must be https and authenticated (processor.bearerTokenFile "
                        + "or processor.clientCertificate)")
            }
            let token = try authentication.bearerTokenFile.map { path throws(ServerStartError) in
                try readSecret(path, role: "http processor bearer token")
            }
            let identity = try authentication.clientCertificate.map { paths throws(ServerStartError) in
                try MerchantCredential.load(paths, role: "http processor client").clientIdentity
            }
            return HTTPPaymentProcessor(
                baseURL: url, timeout: timeout, clientIdentity: identity, proxy: configuration.proxy,
                bearerToken: token)
        case .stripe(let settings), .adyen(let settings), .checkout(let settings):
            guard ProviderSettings.allows(settings.baseURL, sandboxMode: sandboxMode) else {
                throw ServerStartError(
                    .invalidConfiguration,
                    "processor.baseURL must be https (a loopback http:// URL only in sandbox mode), got "
                        + settings.baseURL.absoluteString.prefix(80))
            }
            let secret = try readSecret(
                settings.secretKeyFile,
                role: configuration.processor.kind == .adyen ? "Adyen API key" : "API secret key")
            let applePay: ApplePayHandling = settings.applePay == .decrypted ? .decrypted : .passThrough
            switch configuration.processor {
            case .stripe:
                processor = StripeProcessor(
                    baseURL: settings.baseURL, secretKey: secret, applePay: applePay, timeout: timeout,
                    proxy: configuration.proxy)
            case .checkout:
                let publicKey = try settings.publicKeyFile.map { path throws(ServerStartError) in
                    try readSecret(path, role: "Checkout.com public key")
                }
                processor = CheckoutProcessor(
                    baseURL: settings.baseURL, secretKey: secret, publicKey: publicKey,
                    processingChannelID: settings.processingChannelId ?? "", applePay: applePay, timeout: timeout,
                    proxy: configuration.proxy)
            default:
                processor = AdyenProcessor(
                    baseURL: settings.baseURL, apiKey: secret, merchantAccount: settings.merchantAccount ?? "",
                    applePay: applePay, returnURL: configuration.publicURL?.text ?? "https://localhost/",
                    timeout: timeout, proxy: configuration.proxy, webhookDeadline: settings.webhookDeadline)
            }
        case .sandbox:
            throw ServerStartError(.noProcessor, "no payment processor: pass --processor URL")
        }
        // A refused key is a configuration error, found now rather than at the first payment.
        let check = await PaymentProcessing.withTimeLimit(timeout) { () async throws(ProcessorError) in
            try await processor.checkCredentials()
        }
        if case .failure(let error) = check {
            guard error.code != .notAuthorized else {
                throw ServerStartError(
                    .processorNotAuthorized, "\(processor.name) refused the configured key: \(error.message)")
            }
            logger.warning(
                "the processor's credentials could not be checked at start-up",
                metadata: ["processor": "\(processor.name)", "code": "\(error.code.rawValue)"])
        }
        return processor
    }

    /// A secret from a file readable by its owner alone (no link, not open to group or others), trimmed of
    /// surrounding white space. The secret is never logged; messages name the file only.
    static func readSecret(_ path: String, role: String) throws(ServerStartError) -> String {
        let data: Data
        do {
            data = try KeyFile.read(path, description: "the \(role) file")
        } catch {
            throw ServerStartError(keyFile: error)
        }
        let secret = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !secret.isEmpty, !secret.contains(where: { $0.isNewline || $0 == " " }) else {
            throw ServerStartError(.unreadableFile, "the \(role) file \(path) must hold one secret on one line")
        }
        return secret
    }
}
