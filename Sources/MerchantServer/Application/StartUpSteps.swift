import Cryptography
import Foundation
import Foundations
import HTTPCore
import HTTPServer
import Logging
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantStore
import MerchantWallet
import ProviderWebhooks
import ServiceLifecycle
import Synchronization

// The steps of `MerchantApplication.assemble`, in the order it takes them.

extension MerchantApplication {
    /// Refuses an admin token too short to resist guessing (the token itself is never shown).
    static func refuseWeakAdminToken(_ configuration: MerchantServerConfiguration) throws(ServerStartError) {
        if let token = configuration.adminToken, let problem = MerchantServerConfiguration.adminTokenProblem(token) {
            throw ServerStartError(
                .weakAdminToken, "\(problem): set APPLEPAY_ADMIN_TOKEN (or server.adminToken) to a longer one")
        }
    }

    /// A server with real keys must never "approve" payments that no processor captured: without one from the
    /// caller or the configuration, a plug-in (sandbox mode) must bring one.
    static func requireProcessor(_ needsProcessor: Bool, from plugins: InstalledPlugins) throws(ServerStartError) {
        guard !needsProcessor || plugins.processor != nil else {
            throw ServerStartError(
                .noProcessor,
                "no payment processor: pass --processor URL (a service speaking docs/PROCESSOR-PROTOCOL.md, such as "
                    + "`applepay processor serve`); the built-in sandbox processor runs only with --sandbox DIR")
        }
    }

    /// The caller's token opener, else one for the Payment Processing keys.
    static func chooseTokenOpener(
        override: (any PaymentTokenOpening)?, keys: ServerKeys, clock: @escaping @Sendable () -> Date
    ) throws(ServerStartError) -> any PaymentTokenOpening {
        if let override { return override }
        guard !keys.processing.isEmpty else {
            throw ServerStartError(
                .noPaymentProcessingKey,
                "no Payment Processing certificate is configured: pass --sandbox DIR, or list server.paymentProcessing "
                    + "in the configuration file")
        }
        return try makeTokenOpener(credentials: keys.processing, trustedRoot: keys.trustedRoot, clock: clock)
    }

    /// Opens the order store (a SQLite file's folder made private first).
    static func openStore(_ configuration: MerchantServerConfiguration, logger: Logger)
        async throws(ServerStartError) -> any OrderStore
    {
        let location = configuration.storeLocation
        do {
            if case .sqlite(let path) = location { try makePrivateFolder(for: path, logger: logger) }
            return try await location.open(poolSize: configuration.storePoolSize)
        } catch let error as ServerStartError {
            throw error
        } catch {
            throw ServerStartError(.invalidStore, "cannot open the store \(location.redacted): \(error)")
        }
    }

    /// The providers' webhook endpoints, each with its signing secret read from its file.
    static func webhookEndpoints(_ configuration: MerchantServerConfiguration) throws(ServerStartError)
        -> [WebhookEndpoint]
    {
        var endpoints: [WebhookEndpoint] = []
        for (provider, path) in configuration.webhookSecretFiles.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            do {
                endpoints.append(
                    WebhookEndpoint(provider: provider, secret: try WebhookEndpoint.readSecret(provider, path: path)))
            } catch {
                throw ServerStartError(keyFile: error)
            }
        }
        return endpoints
    }

    /// Binds the HTTP server before the API exists: without a configured public URL, the published URLs are under
    /// the port the server got. Until the API is assembled, a moment later, it answers 503.
    static func bindServer(_ configuration: MerchantServerConfiguration) throws(ServerStartError)
        -> (HTTPServer, LateResponder)
    {
        let responder = LateResponder()
        do {
            let server = try HTTPServer.start(
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
            return (server, responder)
        } catch {
            throw ServerStartError(.cannotListen, "\(error)")
        }
    }

    /// The line that says the server is up, and where.
    static func logListening(_ application: MerchantApplication, logger: Logger) {
        logger.info(
            "listening",
            metadata: [
                "url": "\(application.url)", "publicURL": "\(application.publicURL.text)",
                "merchantIdentifier": "\(application.configuration.store.merchantIdentifier)",
                "store": "\(application.configuration.storeLocation.redacted)",
            ])
    }
}

/// The keys and certificates the configuration names, loaded once and checked against each other, never read again.
struct ServerKeys {
    /// The Payment Processing credentials: tokens are opened with the one they were encrypted to.
    var processing: [MerchantCredential]
    /// The Merchant Identity credential: merchant validation and Apple's merchant-token API.
    var identity: MerchantCredential?
    /// The root token signatures must chain to (nil: Apple Root CA - G3).
    var trustedRoot: Certificate?
    /// Roots trusted for Apple's gateway besides the system's.
    var gatewayRoots: Data?

    static func load(for configuration: MerchantServerConfiguration) throws(ServerStartError) -> ServerKeys {
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
                throw ServerStartError(.unreadableFile, "the trusted root certificate \(path) is not a PEM certificate")
            }
        }
        let gatewayRoots = try configuration.gatewayTrustedRootsPath.map { path throws(ServerStartError) in
            try MerchantCredential.readFile(path, role: "gateway trusted roots")
        }
        return ServerKeys(
            processing: processing, identity: identity, trustedRoot: trustedRoot, gatewayRoots: gatewayRoots)
    }

    /// The merchant identifier the certificates were issued to (sandbox mode serves as that merchant).
    var merchantIdentifier: String? {
        processing.first?.certificate.subjectUID ?? identity?.certificate.subjectUID
    }
}

/// The plug-ins installed, in order, and what they bring.
struct InstalledPlugins {
    let installations: [PluginInstallation]

    /// Installs each plug-in; when one fails, those installed before it are stopped.
    static func install(
        _ plugins: [any MerchantServerPlugin], for configuration: MerchantServerConfiguration, needsProcessor: Bool
    ) async throws(ServerStartError) -> InstalledPlugins {
        var installations: [PluginInstallation] = []
        for plugin in plugins {
            do {
                installations.append(try await plugin.install(configuration, needsProcessor: needsProcessor))
            } catch {
                await InstalledPlugins(installations: installations).stop()
                throw error
            }
        }
        return InstalledPlugins(installations: installations)
    }

    /// The first plug-in's payment processor (sandbox mode's in-process processor).
    var processor: (any PaymentProcessor)? { installations.lazy.compactMap(\.processor).first }
    /// A gateway standing in for Apple's (the sandbox gateway).
    var gatewayBaseURL: String? { installations.lazy.compactMap(\.gatewayBaseURL).first }
    /// The roots the plug-ins trust for that gateway.
    var gatewayTrustedRootsPEM: [Data] { installations.compactMap(\.gatewayTrustedRootsPEM) }
    /// Routes the plug-ins add to the API.
    var routes: [any MerchantAPIPlugin] { installations.flatMap(\.routes) }

    /// Stops the plug-ins, the last installed first.
    var stop: @Sendable () async -> Void {
        { [installations] in
            for installation in installations.reversed() { await installation.stop() }
        }
    }
}

extension MerchantServerConfiguration {
    /// In sandbox mode the certificates name the merchant: serve as that merchant.
    mutating func serveAsSandboxMerchant(_ keys: ServerKeys) {
        if sandboxFolder != nil, let identifier = keys.merchantIdentifier {
            store.merchantIdentifier = identifier
        }
    }
}

extension MerchantApplication {
    /// What start-up has loaded and opened before the server binds, and the steps that finish it once the server
    /// listens: the public URL, Wallet orders, the API, and the services.
    struct Parts {
        var configuration: MerchantServerConfiguration
        let keys: ServerKeys
        let plugins: InstalledPlugins
        let opener: any PaymentTokenOpening
        let store: any OrderStore
        let processor: any PaymentProcessor
        let wallet: WalletCredentials?
        let webhooks: [WebhookEndpoint]
        let logger: Logger
        let clock: @Sendable () -> Date

        /// The application serving on `server`, its API answering through `responder`.
        func application(serving server: HTTPServer, through responder: LateResponder)
            async throws(ServerStartError) -> MerchantApplication
        {
            var configuration = self.configuration
            let publicURL = configuration.publicURL ?? PublicURL(serverHost: configuration.host, port: server.port)
            configuration.store.publicBaseURL = publicURL.text
            let pushes = wallet?.pusher.map { OrderUpdatePushes(pusher: $0) }
            let walletOrders: WalletOrdersService?
            do throws(ServerStartError) {
                walletOrders = try wallet?.service(publicURL: publicURL, pushes: pushes)
            } catch {
                await server.shutdown()
                throw error
            }
            let api = makeAPI(configuration, walletOrders: walletOrders)
            responder.answer(with: api)
            return MerchantApplication(
                configuration: configuration, api: api, store: store, processor: processor, publicURL: publicURL,
                server: server, services: services(of: api, server: server, pushes: pushes),
                stopPlugins: plugins.stop)
        }

        /// The gateway merchant validation and the merchant-token API call: a plug-in's, else the configured one.
        var gatewayBaseURL: String {
            plugins.gatewayBaseURL ?? configuration.store.merchantValidation.gatewayBaseURL
        }

        /// The roots trusted for the gateway: the configured ones and the plug-ins'.
        var gatewayRoots: Data? {
            plugins.gatewayTrustedRootsPEM.reduce(keys.gatewayRoots) { ($0 ?? Data()) + $1 }
        }

        /// The merchant API over the parts.
        func makeAPI(_ configuration: MerchantServerConfiguration, walletOrders: WalletOrdersService?) -> MerchantAPI {
            let settings = configuration.store.merchantValidation
            let sandboxGatewayURL = plugins.gatewayBaseURL
            let validator = MerchantValidator(
                merchantIdentifier: configuration.store.merchantIdentifier,
                displayName: settings.displayName ?? configuration.store.storeName, domain: settings.domain,
                gatewayBaseURL: gatewayBaseURL, identity: keys.identity?.clientIdentity, trustedRootsPEM: gatewayRoots,
                sandboxGatewayURL: sandboxGatewayURL, proxy: configuration.proxy,
                share: configuration.merchantValidationShare)
            let services = MerchantServices(
                configuration: configuration.store, store: store, processor: processor, tokenOpener: opener,
                validator: validator, logger: logger, clock: clock,
                limits: MerchantServices.Limits(
                    reconcileAfter: configuration.reconcileAfter, checkoutLifetime: configuration.checkoutLifetime,
                    processorShare: configuration.processorShare,
                    tokenNotificationTimeLimit: configuration.tokenNotificationTimeLimit,
                    tokenNotificationShare: configuration.tokenNotificationShare),
                walletOrders: walletOrders,
                merchantTokenGateway: keys.identity.map {
                    HTTPMerchantTokenGateway(
                        baseURL: gatewayBaseURL, merchantIdentifier: configuration.store.merchantIdentifier,
                        identity: $0.clientIdentity, trustedRootsPEM: gatewayRoots)
                })
            return MerchantAPI(
                services: services, adminToken: configuration.adminToken,
                adminFailureLimit: configuration.adminFailureLimit, rateLimits: configuration.rateLimits,
                web: WebCheckout.Settings(
                    sandboxValidationURL: sandboxGatewayURL.map { $0 + MerchantValidator.sessionPath },
                    loadsApplePayJSSDK: configuration.loadsApplePayJSSDK),
                plugins: plugins.routes, webhooks: webhooks)
        }

        /// The services, in the order they start: the pushes first and the HTTP server last, so that at the
        /// graceful shutdown (the reverse order) the server finishes its requests before the loops stop and the
        /// pushes those requests queued are sent.
        func services(of api: MerchantAPI, server: HTTPServer, pushes: OrderUpdatePushes?) -> [any Service] {
            var services: [any Service] = []
            if let pushes { services.append(pushes) }
            services.append(
                CheckoutPruner(
                    store: store, lifetime: configuration.checkoutLifetime, interval: configuration.pruneInterval,
                    logger: logger, clock: clock))
            if let subscriptions = api.subscriptions {
                // On the reconciler's interval.
                services.append(
                    SubscriptionSchedulerService(
                        subscriptions: subscriptions, interval: configuration.reconcileInterval))
            }
            services.append(ReconcilerService(reconciler: api.reconciler, interval: configuration.reconcileInterval))
            services.append(HTTPServerService(server: server))
            return services
        }
    }
}

/// The merchant API once assembled; until then (the moment between binding and assembly) a 503. Every request
/// reads it: published once, it is read without a lock and held by reference, so a request retains one object
/// instead of copying the whole `MerchantAPI` (its configuration and every service in it) out of a lock.
final class LateResponder: Responder {
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
