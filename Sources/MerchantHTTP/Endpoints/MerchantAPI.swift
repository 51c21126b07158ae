import ApplePay
import Foundation
import Foundations
import HTTPCore
import Logging
import MerchantCore
import MerchantIntegrations
import MerchantWallet
import ProviderWebhooks

/// The merchant's HTTP API as a `Responder`: a ``Router`` of one route collection per feature, over one
/// ``MerchantServices``, in groups: the JSON API (``RequireJSONContentType``) with the admin API under `/admin/v1`
/// (``BearerAuthentication``) and Wallet's web service under `/wallet/v1` (per-order calls behind
/// ``AppleOrderAuthentication``); the checkout page's files and the subscription pages outside it.
/// ``SecurityHeaders`` and ``RequestLogging`` (one log line and metrics) wrap every request. Testable in-process with
/// `respond(to:)`; served by `HTTPServer` in `MerchantApplication`, or inside a Hummingbird app by
/// `ApplePayHummingbird`.
public struct MerchantAPI: Responder {
    /// The services the routes answer with.
    public let services: MerchantServices
    public let metrics: MerchantMetrics
    /// The parts of the API this one serves.
    public let parts: Parts
    private let router: Router

    public var configuration: StoreConfiguration { services.configuration }
    public var store: any OrderStore { services.store }
    public var logger: Logger { services.logger }
    /// Settles payments whose outcome was not seen (run by `MerchantApplication` and `POST /admin/v1/reconcile`).
    public var reconciler: Reconciler { services.reconciler }
    /// Subscriptions (when the store keeps them): the scheduler's ``SubscriptionService/chargeDue(now:)``.
    public var subscriptions: SubscriptionService? { services.subscriptions }

    /// - Parameters:
    ///   - services: the use cases, assembled once (``MerchantServices``).
    ///   - metrics: where request and payment counts go.
    ///   - adminToken: the bearer token of the admin API under `/admin/v1/`; `nil` leaves it off.
    ///   - adminFailureLimit: failed admin API attempts a client may make (``BearerAuthentication``); `nil`: no limit.
    ///   - rateLimits: per client address limits on checkouts and sheet updates; `nil` limits nothing.
    ///   - web: the checkout page's settings (sandbox sheet, Apple's SDK).
    ///   - plugins: routes added from outside (sandbox mode's `/v1/sandbox/wallet` and `/v1/sandbox/tokens`, from
    ///     `MerchantSandbox`); a production server has none.
    ///   - webhooks: the providers whose webhooks are taken at `POST /webhooks/<provider>` (``WebhookRoutes``; the
    ///     store must be a ``MerchantCore/ProviderEventStore``); none by default.
    ///   - parts: the parts served (``Parts``); all by default.
    public init(
        services: MerchantServices, metrics: MerchantMetrics = MerchantMetrics(), adminToken: String? = nil,
        adminFailureLimit: RateLimit? = BearerAuthentication.defaultFailureLimit, rateLimits: RateLimits? = nil,
        web: WebCheckout.Settings = .init(), plugins: [any MerchantAPIPlugin] = [], webhooks: [WebhookEndpoint] = [],
        parts: Parts = .all
    ) {
        self.services = services
        self.metrics = metrics
        self.parts = parts
        let (configuration, store, logger, clock) =
            (services.configuration, services.store, services.logger, services.clock)
        let (subscriptions, walletOrders, limits) = (services.subscriptions, services.walletOrders, services.limits)
        let sandboxMode = plugins.contains { $0.standsInForApple }
        var router = Router()
        router.add(middleware: SecurityHeaders())
        router.add(middleware: RequestLogging(logger: logger, metrics: metrics))
        // The customer's subscription pages and the form they post (no JSON rule), before the JSON API's
        // `/v1/subscriptions/{id}`, which would otherwise take `/v1/subscriptions/manage`.
        if let subscriptions, parts.contains(.pages) {
            router.add(
                SubscriptionPages(
                    service: subscriptions, orders: store, publicBaseURL: configuration.publicBaseURL,
                    storeName: configuration.storeName))
        }
        // The JSON API: a POST must say it carries JSON (a browser sends another site's form without a preflight).
        router.group("", middleware: [RequireJSONContentType()]) { api in
            if parts.contains(.checkout) {
                let limiting = rateLimits.map { [RateLimiting(checkouts: $0.checkouts, updates: $0.updates)] } ?? []
                api.group("", middleware: limiting) { checkouts in
                    checkouts.add(
                        CheckoutRoutes(
                            configuration: configuration, pricing: services.pricing, store: store, logger: logger,
                            clock: clock, checkoutLifetime: limits.checkoutLifetime))
                }
                api.add(
                    PaymentRoutes(
                        payments: services.payments, metrics: metrics, logger: logger,
                        publicBaseURL: configuration.publicBaseURL, walletOrders: walletOrders))
                api.add(OrderRoutes(store: store, logger: logger))
                api.add(
                    ApplePayRoutes(validator: services.validator, domainAssociation: configuration.domainAssociation))
                for plugin in plugins { plugin.register(on: &api, services: services) }
            }
            if parts.contains(.operations) { api.add(OperationsRoutes(store: store, metrics: metrics)) }
            if let subscriptions {
                if parts.contains(.appleNotifications) {
                    api.add(
                        TokenNotificationRoutes(service: subscriptions, timeLimit: limits.tokenNotificationTimeLimit))
                }
                if parts.contains(.checkout) { api.add(SubscriptionRoutes(service: subscriptions)) }
            }
            if let adminToken, !adminToken.isEmpty, parts.contains(.admin) {
                api.group(
                    "/admin/v1", middleware: [BearerAuthentication(token: adminToken, failureLimit: adminFailureLimit)]
                ) {
                    admin in
                    admin.add(
                        AdminRoutes(
                            store: store, processor: services.processor, reconciler: services.reconciler,
                            reversals: services.reversals, timeout: configuration.processor.timeout, logger: logger,
                            walletOrders: walletOrders, subscriptions: subscriptions))
                    if let subscriptions {
                        admin.add(
                            SubscriptionAdminRoutes(
                                service: subscriptions, movableClock: sandboxMode,
                                tokenNotificationURL: services.pricing.tokenNotificationURL))
                    }
                }
            }
            if let walletOrders, parts.contains(.wallet) {
                api.group("/wallet/v1") { wallet in
                    wallet.add(
                        WalletRoutes(
                            service: walletOrders, store: store, configuration: configuration, logger: logger,
                            clock: clock))
                }
            }
        }
        // The providers' webhooks: their signatures, not a content type, say who sent them.
        if !webhooks.isEmpty, let events = services.providerEvents, parts.contains(.webhooks) {
            router.add(WebhookRoutes(endpoints: webhooks, events: events, metrics: metrics, clock: clock))
        }
        // What a browser loads: no JSON rule.
        if parts.contains(.pages) {
            let page = WebCheckout(settings: web, configuration: configuration, sandboxMode: sandboxMode)
            router.add(WebRoutes(page: page))
            router.add(OrderPageRoutes(store: store, storeName: configuration.storeName, logger: logger))
        }
        self.router = router
    }

    public func respond(to request: HTTPRequest) async -> HTTPResponse { await router.respond(to: request) }
    public var answersOversizedRequests: Bool { true }

    /// Every route served, in the order matched: what an adapter registers with its framework's router.
    public var endpoints: [Router.Endpoint] { router.endpoints }

    /// The parts of the API, to serve all of it or only some (a framework app mounting the payment routes beside
    /// its own pages, say).
    public struct Parts: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// Checkout and payments: the catalog, checkouts and the sheet's updates, the payment, the customer's order
        /// and subscription as JSON, Apple Pay's merchant session and domain association file (and the plug-ins'
        /// routes).
        public static let checkout = Parts(rawValue: 1 << 0)
        /// What a browser loads: the checkout page, the customer's order page, the subscription pages.
        public static let pages = Parts(rawValue: 1 << 1)
        /// The providers' webhooks, `POST /webhooks/<provider>`.
        public static let webhooks = Parts(rawValue: 1 << 2)
        /// Apple's merchant-token notifications, `GET /apple-pay/notification/merchantToken/{eventId}`.
        public static let appleNotifications = Parts(rawValue: 1 << 3)
        /// Wallet's orders web service under `/wallet/v1` (when Wallet orders are on).
        public static let wallet = Parts(rawValue: 1 << 4)
        /// The admin API under `/admin/v1` (when it has a token).
        public static let admin = Parts(rawValue: 1 << 5)
        /// Health and metrics, `GET /healthz` and `GET /metrics`.
        public static let operations = Parts(rawValue: 1 << 6)
        /// Everything.
        public static let all: Parts = [
            .checkout, .pages, .webhooks, .appleNotifications, .wallet, .admin, .operations,
        ]
    }
}

/// The per-client rate limits of `MerchantAPI` (the `"server"` section's `rateLimits`).
public struct RateLimits: Sendable, Equatable {
    /// `POST /v1/checkouts`.
    public var checkouts: RateLimit
    /// Sheet updates: shipping contact, shipping method, payment method, coupon.
    public var updates: RateLimit

    /// Defaults a shop behind one NAT can live with: 60 checkouts a minute (120 at once) and 600 sheet updates
    /// a minute (600 at once) from one address.
    public init(
        checkouts: RateLimit = RateLimit(perMinute: 60, burst: 120),
        updates: RateLimit = RateLimit(perMinute: 600, burst: 600)
    ) {
        self.checkouts = checkouts
        self.updates = updates
    }
}
