import ApplePay
import Foundation
import Foundations
import HTTPCore
import MerchantCore
import MerchantIntegrations
import MerchantWallet
import ProviderWebhooks

/// The merchant's HTTP API as a `Responder`: a ``Router`` of one route collection per feature, in groups: the JSON
/// API (``RequireJSONContentType``) with the admin API under `/admin/v1` (``BearerAuthentication``) and Wallet's web
/// service under `/wallet/v1` (per-order calls behind ``AppleOrderAuthentication``); the checkout page's files and the
/// subscription pages outside it. ``SecurityHeaders`` and ``RequestLogging`` (one log line and metrics) wrap every
/// request. Testable in-process with `respond(to:)`; served by `HTTPServer` in `MerchantApplication`.
public struct MerchantAPI: Responder {
    public let configuration: StoreConfiguration
    public let store: any OrderStore
    public let metrics: Metrics
    public let logger: RequestLogger
    /// Settles payments whose outcome was not seen (run by `MerchantApplication` and `POST /admin/v1/reconcile`).
    public let reconciler: Reconciler
    /// Subscriptions (when the store keeps them): the scheduler's ``SubscriptionService/chargeDue(now:)``.
    public let subscriptions: SubscriptionService?
    private let router: Router

    /// - Parameters:
    ///   - configuration: the store: catalog, shipping, coupons, tax, domain association.
    ///   - store: checkouts and orders.
    ///   - processor: where payments are charged.
    ///   - tokenOpener: verifies and decrypts tokens with the merchant's keys.
    ///   - validator: obtains merchant sessions from Apple.
    ///   - clock: "now" for pricing and token times.
    ///   - adminToken: the bearer token of the admin API under `/admin/v1/`; `nil` leaves it off.
    ///   - adminFailureLimit: failed admin API attempts a client may make (``BearerAuthentication``); `nil`: no limit.
    ///   - reconcileAfter: how old an unsettled payment must be before the reconciler looks it up.
    ///   - walletOrders: Wallet orders (`orderDetails`, the orders web service under `/wallet`); nil: off.
    ///   - web: the checkout page's settings (sandbox sheet, Apple's SDK).
    ///   - plugins: routes added from outside (sandbox mode's `/v1/sandbox/wallet` and `/v1/sandbox/tokens`, from
    ///     `MerchantSandbox`); a production server has none.
    ///   - merchantTokenGateway: Apple's merchant-token API (events, unlink); `nil` keeps them local.
    ///   - webhooks: the providers whose webhooks are taken at `POST /webhooks/<provider>` (``WebhookRoutes``; the
    ///     store must be a ``MerchantCore/ProviderEventStore``); none by default.
    ///   - rateLimits: per client address limits on checkouts and sheet updates; `nil` limits nothing.
    ///   - processorShare: how many payments may hold the processor at once, and wait for it (docs/LIMITS.md).
    ///   - tokenNotificationTimeLimit: how long Apple's token notification waits for its event (then `500`).
    ///   - tokenNotificationShare: how many merchant-token events are pulled from Apple at once, and wait.
    ///   - checkoutLifetime: how long a checkout takes sheet updates (`410 checkoutExpired` after; it is pruned
    ///     later if unpaid); `nil`: forever.
    public init(
        configuration: StoreConfiguration, store: any OrderStore, processor: any PaymentProcessor,
        tokenOpener: any PaymentTokenOpening, validator: MerchantValidator, metrics: Metrics = Metrics(),
        logger: RequestLogger = .standardError, clock: @escaping @Sendable () -> Date = { Date() },
        adminToken: String? = nil, reconcileAfter: Duration = .seconds(60), rateLimits: RateLimits? = nil,
        checkoutLifetime: Duration? = nil, walletOrders: WalletOrdersService? = nil,
        processorShare: Bulkhead.Limits = PaymentService.defaultShare,
        tokenNotificationTimeLimit: Duration = .seconds(5),
        tokenNotificationShare: Bulkhead.Limits = TokenNotifications.defaultShare,
        web: WebCheckout.Settings = .init(),
        plugins: [any MerchantAPIPlugin] = [], merchantTokenGateway: (any MerchantTokenGateway)? = nil,
        webhooks: [WebhookEndpoint] = [],
        adminFailureLimit: RateLimit? = BearerAuthentication.defaultFailureLimit
    ) {
        self.configuration = configuration
        self.store = store
        self.metrics = metrics
        self.logger = logger
        let pricing = CheckoutPricing(configuration: configuration, clock: clock)
        let subscriptions = (store as? any SubscriptionStore).map {
            SubscriptionService(
                store: $0, processor: processor, gateway: merchantTokenGateway,
                timeout: configuration.processor.timeout, logger: logger, clock: clock,
                notifications: TokenNotifications(share: tokenNotificationShare))
        }
        self.subscriptions = subscriptions
        let payments = CheckoutPayments(
            configuration: configuration, pricing: pricing, store: store, tokenOpener: tokenOpener,
            service: PaymentService(
                store: store, processor: processor, timeout: configuration.processor.timeout, logger: logger,
                share: processorShare),
            subscriptions: subscriptions, checkoutLifetime: checkoutLifetime)
        let plans = subscriptions.map {
            PlanSubscriptions(service: $0, pricing: pricing, configuration: configuration, store: store)
        }
        let reconciler = Reconciler(
            store: store, processor: processor, settleAfter: reconcileAfter, timeout: configuration.processor.timeout,
            logger: logger, clock: clock, plans: plans)
        self.reconciler = reconciler
        let sandboxMode = plugins.contains { $0.standsInForApple }
        let page = WebCheckout(settings: web, configuration: configuration, sandboxMode: sandboxMode)
        let services = MerchantAPIServices(
            configuration: configuration, store: store, pricing: pricing, logger: logger, clock: clock)
        var router = Router()
        router.add(middleware: SecurityHeaders())
        router.add(middleware: RequestLogging(logger: logger, metrics: metrics))
        // The customer's subscription pages and the form they post (no JSON rule), before the JSON API's
        // `/v1/subscriptions/{id}`, which would otherwise take `/v1/subscriptions/manage`.
        if let subscriptions {
            router.add(
                SubscriptionPages(
                    service: subscriptions, orders: store, publicBaseURL: configuration.publicBaseURL,
                    storeName: configuration.storeName))
        }
        // The JSON API: a POST must say it carries JSON (a browser sends another site's form without a preflight).
        router.group("", middleware: [RequireJSONContentType()]) { api in
            let limits = rateLimits.map { [RateLimiting(checkouts: $0.checkouts, updates: $0.updates)] } ?? []
            api.group("", middleware: limits) { checkouts in
                checkouts.add(
                    CheckoutRoutes(
                        configuration: configuration, pricing: pricing, store: store, logger: logger, clock: clock,
                        checkoutLifetime: checkoutLifetime))
            }
            api.add(
                PaymentRoutes(
                    payments: payments, metrics: metrics, logger: logger, publicBaseURL: configuration.publicBaseURL,
                    walletOrders: walletOrders))
            api.add(OrderRoutes(store: store, logger: logger))
            api.add(ApplePayRoutes(validator: validator, domainAssociation: configuration.domainAssociation))
            for plugin in plugins { plugin.register(on: &api, services: services) }
            api.add(OperationsRoutes(store: store, metrics: metrics))
            if let subscriptions {
                api.add(SubscriptionRoutes(service: subscriptions, notificationTimeLimit: tokenNotificationTimeLimit))
            }
            if let adminToken, !adminToken.isEmpty {
                api.group(
                    "/admin/v1", middleware: [BearerAuthentication(token: adminToken, failureLimit: adminFailureLimit)]
                ) {
                    admin in
                    admin.add(
                        AdminRoutes(
                            store: store, processor: processor, reconciler: reconciler,
                            reversals: OrderReversals(
                                store: store, processor: processor, timeout: configuration.processor.timeout,
                                logger: logger),
                            timeout: configuration.processor.timeout, logger: logger, walletOrders: walletOrders,
                            subscriptions: subscriptions))
                    if let subscriptions {
                        admin.add(
                            SubscriptionAdminRoutes(
                                service: subscriptions, movableClock: sandboxMode,
                                tokenNotificationURL: pricing.tokenNotificationURL))
                    }
                }
            }
            if let walletOrders {
                api.group("/wallet/v1") { wallet in
                    wallet.add(
                        WalletRoutes(
                            service: walletOrders, store: store, configuration: configuration, logger: logger,
                            clock: clock))
                }
            }
        }
        // The providers' webhooks: their signatures, not a content type, say who sent them.
        if !webhooks.isEmpty, let eventStore = store as? any ProviderEventStore {
            let events = ProviderEvents(store: eventStore, logger: logger, plans: plans)
            router.add(WebhookRoutes(endpoints: webhooks, events: events, metrics: metrics, clock: clock))
        }
        // What a browser loads: no JSON rule.
        router.add(WebRoutes(page: page))
        router.add(OrderPageRoutes(store: store, storeName: configuration.storeName, logger: logger))
        self.router = router
    }

    public func respond(to request: HTTPRequest) async -> HTTPResponse { await router.respond(to: request) }
    public var answersOversizedRequests: Bool { true }
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
