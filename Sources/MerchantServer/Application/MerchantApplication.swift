import Cryptography
import Foundation
import Foundations
import HTTPClient
import HTTPCore
import HTTPServer
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantStore
import MerchantWallet
import Processors
import ProviderWebhooks
import Synchronization

/// The running merchant server: configuration checked and keys loaded once, the store open, the API served over
/// HTTP, and the background work (reconciler, subscription scheduler, checkout pruner) running beside it as
/// services started and stopped together. `applepay serve`, `applepay demo` and the tests start it the same way.
public final class MerchantApplication: Sendable {
    public let configuration: MerchantServerConfiguration
    public let api: MerchantAPI
    public let store: any OrderStore
    public let processor: any PaymentProcessor
    /// The base URL every published URL is under: the configured one, or the server's own address.
    public let publicURL: PublicURL
    private let server: HTTPServer
    /// The HTTP server, the reconciler, the subscription scheduler and the checkout pruner.
    private let services: ServiceGroup
    /// What the plug-ins stop when the server stops.
    private let stopPlugins: @Sendable () async -> Void

    /// The base URL, e.g. `http://127.0.0.1:8080`.
    public var url: String {
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "http://\(host):\(server.port)"
    }

    /// The bound port (useful with port 0).
    public var port: UInt16 { server.port }

    private init(
        configuration: MerchantServerConfiguration, api: MerchantAPI, store: any OrderStore,
        processor: any PaymentProcessor, publicURL: PublicURL, server: HTTPServer, services: ServiceGroup,
        stopPlugins: @escaping @Sendable () async -> Void
    ) {
        self.configuration = configuration
        self.api = api
        self.store = store
        self.processor = processor
        self.publicURL = publicURL
        self.server = server
        self.services = services
        self.stopPlugins = stopPlugins
    }

    /// Checks the configuration, loads the keys, opens the store and starts listening.
    /// - Parameters:
    ///   - configuration: what to serve.
    ///   - processor: overrides the configured processor (tests).
    ///   - tokenOpener: overrides the token verifier built from the configured keys (tests).
    ///   - plugins: installed before the store opens (sandbox mode: `MerchantSandbox.SandboxMode`).
    ///   - logger: where request lines go.
    ///   - clock: "now" for pricing and token checks.
    /// - Throws: `ServerStartError` with a message naming what to fix.
    public static func start(
        _ configuration: MerchantServerConfiguration, processor: (any PaymentProcessor)? = nil,
        tokenOpener: (any PaymentTokenOpening)? = nil, plugins: [any MerchantServerPlugin] = [],
        logger: RequestLogger = .standardError,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) async throws(ServerStartError) -> MerchantApplication {
        var configuration = configuration
        if let token = configuration.adminToken, let problem = MerchantServerConfiguration.adminTokenProblem(token) {
            throw ServerStartError(
                .weakAdminToken, "\(problem): set APPLEPAY_ADMIN_TOKEN (or server.adminToken) to a longer one")
        }
        // Keys: loaded once, checked against their certificates, never read again.
        var processing: [MerchantCredential] = []
        for paths in configuration.paymentProcessing {
            processing.append(try MerchantCredential.load(paths, role: "Payment Processing"))
        }
        let identity = try configuration.effectiveMerchantIdentity.map { paths throws(ServerStartError) in
            try MerchantCredential.load(paths, role: "Merchant Identity")
        }
        var trustedRoot: Certificate?
        if let path = configuration.trustedRootPath {
            let data = try MerchantCredential.readFile(path, role: "trusted root certificate")
            do {
                trustedRoot = try Certificate(pem: String(decoding: data, as: UTF8.self))
            } catch {
                throw ServerStartError(
                    .unreadableFile, "the trusted root certificate \(path) is not a PEM certificate")
            }
        }
        var gatewayRoots = try configuration.gatewayTrustedRootsPath.map { path throws(ServerStartError) in
            try MerchantCredential.readFile(path, role: "gateway trusted roots")
        }
        var installations: [PluginInstallation] = []
        let needsProcessor = processor == nil && configuration.processor == .sandbox
        for plugin in plugins {
            do {
                installations.append(try await plugin.install(configuration, needsProcessor: needsProcessor))
            } catch {
                for installation in installations.reversed() { await installation.stop() }
                throw error
            }
        }
        let stopPlugins: @Sendable () async -> Void = { [installations] in
            for installation in installations.reversed() { await installation.stop() }
        }
        let pluginProcessor = installations.lazy.compactMap(\.processor).first
        // A server with real keys must never "approve" payments that no processor captured.
        guard !needsProcessor || pluginProcessor != nil else {
            await stopPlugins()
            throw ServerStartError(
                .noProcessor,
                "no payment processor: pass --processor URL (a service speaking docs/PROCESSOR-PROTOCOL.md, such as "
                    + "`applepay processor serve`); the built-in sandbox processor runs only with --sandbox DIR")
        }
        do throws(ServerStartError) {
            let sandboxGatewayURL = installations.lazy.compactMap(\.gatewayBaseURL).first
            for roots in installations.compactMap(\.gatewayTrustedRootsPEM) {
                gatewayRoots = (gatewayRoots ?? Data()) + roots
            }
            // In sandbox mode the certificates name the merchant: serve as that merchant.
            if configuration.sandboxFolder != nil,
                let uid = (processing.first?.certificate.subjectUID ?? identity?.certificate.subjectUID)
            {
                configuration.store.merchantIdentifier = uid
            }

            let opener: any PaymentTokenOpening
            if let tokenOpener {
                opener = tokenOpener
            } else {
                guard !processing.isEmpty else {
                    throw ServerStartError(
                        .noPaymentProcessingKey,
                        "no Payment Processing certificate is configured: pass --sandbox DIR, or list server.paymentProcessing in the configuration file"
                    )
                }
                opener = try makeTokenOpener(
                    credentials: processing, trustedRoot: trustedRoot, clock: clock)
            }

            let location = configuration.storeLocation
            let store: any OrderStore
            do {
                if case .sqlite(let path) = location { try makePrivateFolder(for: path, logger: logger) }
                store = try await location.open(poolSize: configuration.storePoolSize)
            } catch let error as ServerStartError {
                throw error
            } catch {
                throw ServerStartError(.invalidStore, "cannot open the store \(location.redacted): \(error)")
            }
            let chosenProcessor = try await choosePayments(
                configuration, override: processor ?? pluginProcessor, logger: logger)
            let settings = configuration.store.merchantValidation
            let validator = MerchantValidator(
                merchantIdentifier: configuration.store.merchantIdentifier,
                displayName: settings.displayName ?? configuration.store.storeName, domain: settings.domain,
                gatewayBaseURL: sandboxGatewayURL ?? settings.gatewayBaseURL, identity: identity?.clientIdentity,
                trustedRootsPEM: gatewayRoots, sandboxGatewayURL: sandboxGatewayURL, proxy: configuration.proxy,
                share: configuration.merchantValidationShare)
            let wallet = try configuration.walletOrders.map { settings throws(ServerStartError) in
                try WalletCredentials.load(settings, logger: logger)
            }
            var webhooks: [WebhookEndpoint] = []
            for (provider, path) in configuration.webhookSecretFiles.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                do {
                    webhooks.append(
                        WebhookEndpoint(
                            provider: provider, secret: try WebhookEndpoint.readSecret(provider, path: path)))
                } catch {
                    throw ServerStartError(keyFile: error)
                }
            }
            // Bound before the API exists: without a configured public URL, the published URLs are under the port
            // the server got. The API answers once assembled, a moment later (503 until then).
            let responder = LateResponder()
            let server: HTTPServer
            do {
                server = try HTTPServer.start(
                    configuration: .init(
                        host: configuration.host, port: configuration.port, threads: configuration.threads,
                        maximumBodySize: configuration.maximumBodySize,
                        connectionTimeout: configuration.connectionTimeout,
                        connectionLimit: configuration.connectionLimit,
                        perClientConnectionLimit: configuration.perClientConnectionLimit,
                        requestTimeout: configuration.requestTimeout,
                        // The API never blocks a thread: stores, processors and Apple are awaited on their own threads.
                        answersOnPollingThreads: true, trustedProxies: configuration.trustedProxies),
                    responder: responder)
            } catch {
                throw ServerStartError(.cannotListen, "\(error)")
            }
            let publicURL = configuration.publicURL ?? PublicURL(serverHost: configuration.host, port: server.port)
            configuration.store.publicBaseURL = publicURL.text
            let walletOrders: WalletOrdersService?
            do throws(ServerStartError) {
                walletOrders = try wallet?.service(publicURL: publicURL)
            } catch {
                await server.shutdown()
                throw error
            }
            let merchantServices = MerchantServices(
                configuration: configuration.store, store: store, processor: chosenProcessor, tokenOpener: opener,
                validator: validator, logger: logger, clock: clock,
                limits: MerchantServices.Limits(
                    reconcileAfter: configuration.reconcileAfter, checkoutLifetime: configuration.checkoutLifetime,
                    processorShare: configuration.processorShare,
                    tokenNotificationTimeLimit: configuration.tokenNotificationTimeLimit,
                    tokenNotificationShare: configuration.tokenNotificationShare),
                walletOrders: walletOrders,
                merchantTokenGateway: identity.map {
                    HTTPMerchantTokenGateway(
                        baseURL: sandboxGatewayURL ?? settings.gatewayBaseURL,
                        merchantIdentifier: configuration.store.merchantIdentifier, identity: $0.clientIdentity,
                        trustedRootsPEM: gatewayRoots)
                })
            let api = MerchantAPI(
                services: merchantServices, adminToken: configuration.adminToken,
                adminFailureLimit: configuration.adminFailureLimit, rateLimits: configuration.rateLimits,
                web: WebCheckout.Settings(
                    sandboxValidationURL: sandboxGatewayURL.map { $0 + MerchantValidator.sessionPath },
                    loadsApplePayJSSDK: configuration.loadsApplePayJSSDK),
                plugins: installations.flatMap(\.routes), webhooks: webhooks)
            responder.answer(with: api)
            // Started together; stopped together by shutdown().
            var services: [any Service] = [
                HTTPServerService(server: server),
                ReconcilerService(reconciler: api.reconciler, interval: configuration.reconcileInterval),
                CheckoutPruner(
                    store: store, lifetime: configuration.checkoutLifetime, interval: configuration.pruneInterval,
                    logger: logger, clock: clock),
            ]
            if let subscriptions = api.subscriptions {
                // On the reconciler's interval.
                services.append(
                    SubscriptionSchedulerService(
                        subscriptions: subscriptions, interval: configuration.reconcileInterval))
            }
            let application = MerchantApplication(
                configuration: configuration, api: api, store: store, processor: chosenProcessor,
                publicURL: publicURL, server: server, services: ServiceGroup(services), stopPlugins: stopPlugins)
            logger.log(
                "info", "listening",
                [
                    "url": application.url, "publicURL": publicURL.text,
                    "merchantIdentifier": configuration.store.merchantIdentifier, "store": location.redacted,
                ])
            return application
        } catch {
            await stopPlugins()
            throw error
        }
    }

    /// Stops the services together (the HTTP server stops accepting connections and finishes the requests in flight;
    /// the background loops return), then the plug-ins, and closes.
    public func shutdown() async {
        await services.shutdown()
        await stopPlugins()
        api.logger.log("info", "stopped")
        api.logger.flush()
    }

    /// Wallet orders' keys, loaded and checked before the server binds: the Order Type ID credential (checked like
    /// the other keys), its intermediate, and the APNs pusher when configured.
    struct WalletCredentials {
        let orderTypeIdentifier: String
        let credential: MerchantCredential
        let intermediates: [Certificate]
        let pusher: APNsPusher?

        static func load(_ settings: WalletOrdersSettings, logger: RequestLogger) throws(ServerStartError)
            -> WalletCredentials
        {
            try MerchantApplication.loadWalletCredentials(settings, logger: logger)
        }

        /// The service, its web service at `PUBLIC/wallet`.
        func service(publicURL: PublicURL) throws(ServerStartError) -> WalletOrdersService {
            do {
                return try WalletOrdersService(
                    orderTypeIdentifier: orderTypeIdentifier, certificate: credential.certificate,
                    privateKey: credential.privateKey, intermediates: intermediates, publicURL: publicURL.text,
                    pusher: pusher)
            } catch {
                throw ServerStartError(.keyMismatch, "the Order Type ID key does not match its certificate")
            }
        }
    }

    private static func loadWalletCredentials(_ settings: WalletOrdersSettings, logger: RequestLogger)
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
    private static func makeAPNsPusher(_ settings: APNsSettings, topic: String, logger: RequestLogger)
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
    private static func makePrivateFolder(for path: String, logger: RequestLogger) throws(ServerStartError) {
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
            logger.log(
                "warn", "the store's folder is open to other users; chmod 700 it",
                ["folder": folder, "mode": String(status.st_mode & 0o777, radix: 8)])
        }
    }

    /// The processor: the caller's or a plug-in's (sandbox mode runs the sandbox processor service in process),
    /// else the configured one. There is no default: a server with real keys must never "approve" payments that no
    /// processor captured.
    /// The payment processor `configuration` names, as the server would use it (its key read from its file and
    /// checked at the provider): for the tools that speak to the provider outside the server (`applepay reconcile`).
    public static func paymentProcessor(
        for configuration: MerchantServerConfiguration, logger: RequestLogger = .silent
    ) async throws(ServerStartError) -> any PaymentProcessor {
        try await choosePayments(configuration, override: nil, logger: logger)
    }

    private static func choosePayments(
        _ configuration: MerchantServerConfiguration, override: (any PaymentProcessor)?, logger: RequestLogger
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
                role: configuration.processor.kind == "adyen" ? "Adyen API key" : "API secret key")
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
            logger.log(
                "warn", "the processor's credentials could not be checked at start-up",
                ["processor": processor.name, "code": error.code.rawValue])
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

/// The merchant API once assembled; until then (the moment between binding and assembly) a 503. Every request
/// reads it: published once, it is read without a lock and held by reference, so a request retains one object
/// instead of copying the whole `MerchantAPI` (its configuration and every service in it) out of a lock.
private final class LateResponder: Responder {
    private final class Assembled: Sendable {
        let api: MerchantAPI
        init(_ api: MerchantAPI) { self.api = api }
    }
    private let target = AtomicLazyReference<Assembled>()

    /// Publishes `api`; only the first call counts (the server assembles its API once).
    func answer(with api: MerchantAPI) { _ = target.storeIfNil(Assembled(api)) }

    func respond(to request: HTTPRequest) async -> HTTPResponse {
        guard let assembled = target.load() else {
            return HTTPResponse(status: 503, headers: ["Retry-After": "1"])
        }
        return await assembled.api.respond(to: request)
    }

    var answersOversizedRequests: Bool { true }
}
