import Foundation
import Foundations
import Logging
import MerchantCore
import MerchantIntegrations
import MerchantWallet

/// The merchant's use cases assembled once: pricing, paying checkouts, the reconciler, refunds and voids,
/// subscriptions, providers' webhook events, Wallet orders and Apple's merchant-token notifications, all over one
/// store, processor and clock. Every way of serving the merchant builds its routes over one of these: ``MerchantAPI``
/// (served by the libmicrohttpd server and by `ApplePayHummingbird`), or an app's own routes (a Vapor
/// `RouteCollection` calling ``payments`` and ``validator``).
///
/// ```swift
/// let services = MerchantServices(
///     configuration: configuration, store: store, processor: processor, tokenOpener: opener, validator: validator)
/// let api = MerchantAPI(services: services, adminToken: adminToken)
/// ```
public struct MerchantServices: Sendable {
    /// How long things may take and how many may wait (docs/LIMITS.md).
    public struct Limits: Sendable {
        /// How old an unsettled payment must be before the reconciler looks it up.
        public var reconcileAfter: Duration
        /// How long a checkout takes sheet updates and payments (`checkoutExpired` after; it is pruned later if
        /// unpaid); `nil`: forever.
        public var checkoutLifetime: Duration?
        /// How many payments may hold the processor at once, and wait for it.
        public var processorShare: Bulkhead.Limits
        /// How long Apple's token notification waits for its event (then `500`, so that Apple retries).
        public var tokenNotificationTimeLimit: Duration
        /// How many merchant-token events are pulled from Apple at once, and wait.
        public var tokenNotificationShare: Bulkhead.Limits

        /// The defaults: a minute before a look-up, checkouts that never expire, the processor's and the token
        /// notifications' default shares, 5 s for a token notification.
        public init(
            reconcileAfter: Duration = .seconds(60), checkoutLifetime: Duration? = nil,
            processorShare: Bulkhead.Limits = PaymentService.defaultShare,
            tokenNotificationTimeLimit: Duration = .seconds(5),
            tokenNotificationShare: Bulkhead.Limits = TokenNotifications.defaultShare
        ) {
            self.reconcileAfter = reconcileAfter
            self.checkoutLifetime = checkoutLifetime
            self.processorShare = processorShare
            self.tokenNotificationTimeLimit = tokenNotificationTimeLimit
            self.tokenNotificationShare = tokenNotificationShare
        }
    }

    /// The store: catalog, shipping, coupons, tax, domain association, public URL.
    public let configuration: StoreConfiguration
    /// Checkouts and orders (and subscriptions, providers' events and Wallet registrations when it keeps them).
    public let store: any OrderStore
    /// Where payments are charged, refunded and looked up.
    public let processor: any PaymentProcessor
    /// Obtains merchant sessions from Apple (Apple Pay on the web).
    public let validator: MerchantValidator
    public let logger: Logger
    /// "Now" for pricing, token times, the reconciler and the scheduler.
    public let clock: @Sendable () -> Date
    public let limits: Limits
    /// Prices checkouts and answers the sheet's updates.
    public let pricing: CheckoutPricing
    /// Pays a checkout with an Apple Pay payment: `POST /v1/checkouts/{id}/payment` without the HTTP.
    public let payments: CheckoutPayments
    /// Settles payments whose outcome was not seen (run in the background and by `POST /admin/v1/reconcile`).
    public let reconciler: Reconciler
    /// Refunds and voids.
    public let reversals: OrderReversals
    /// Subscriptions, when the store keeps them: the scheduler's ``SubscriptionService/chargeDue(now:)`` and Apple's
    /// merchant-token events.
    public let subscriptions: SubscriptionService?
    /// Starts a paid plan's subscription (when the store keeps subscriptions).
    public let plans: PlanSubscriptions?
    /// Applies the providers' webhook events once, when the store keeps them.
    public let providerEvents: ProviderEvents?
    /// Wallet orders (`orderDetails` in a payment's answer, the orders web service); `nil`: off.
    public let walletOrders: WalletOrdersService?

    /// Assembles the services.
    /// - Parameters:
    ///   - configuration: the store: catalog, shipping, coupons, tax, domain association.
    ///   - store: checkouts and orders; subscriptions are on when it is a ``MerchantCore/SubscriptionStore``, and
    ///     providers' events when it is a ``MerchantCore/ProviderEventStore``.
    ///   - processor: where payments are charged.
    ///   - tokenOpener: verifies and decrypts tokens with the merchant's keys.
    ///   - validator: obtains merchant sessions from Apple.
    ///   - logger: where the services' lines go.
    ///   - clock: "now" for pricing and token times.
    ///   - limits: time limits and shares.
    ///   - walletOrders: Wallet orders; `nil`: off.
    ///   - merchantTokenGateway: Apple's merchant-token API (events, unlink); `nil` keeps them local.
    public init(
        configuration: StoreConfiguration, store: any OrderStore, processor: any PaymentProcessor,
        tokenOpener: any PaymentTokenOpening, validator: MerchantValidator,
        logger: Logger = Logger(label: "applepay.http"),
        clock: @escaping @Sendable () -> Date = { Date() }, limits: Limits = Limits(),
        walletOrders: WalletOrdersService? = nil, merchantTokenGateway: (any MerchantTokenGateway)? = nil
    ) {
        self.configuration = configuration
        self.store = store
        self.processor = processor
        self.validator = validator
        self.logger = logger
        self.clock = clock
        self.limits = limits
        self.walletOrders = walletOrders
        let timeout = configuration.processor.timeout
        let pricing = CheckoutPricing(configuration: configuration, clock: clock)
        self.pricing = pricing
        let subscriptions = (store as? any SubscriptionStore).map {
            SubscriptionService(
                store: $0, processor: processor, gateway: merchantTokenGateway, timeout: timeout, logger: logger,
                clock: clock, notifications: TokenNotifications(share: limits.tokenNotificationShare))
        }
        self.subscriptions = subscriptions
        self.payments = CheckoutPayments(
            configuration: configuration, pricing: pricing, store: store, tokenOpener: tokenOpener,
            service: PaymentService(
                store: store, processor: processor, timeout: timeout, logger: logger, share: limits.processorShare),
            subscriptions: subscriptions, checkoutLifetime: limits.checkoutLifetime)
        let plans = subscriptions.map {
            PlanSubscriptions(service: $0, pricing: pricing, configuration: configuration, store: store)
        }
        self.plans = plans
        self.reconciler = Reconciler(
            store: store, processor: processor, settleAfter: limits.reconcileAfter, timeout: timeout, logger: logger,
            clock: clock, plans: plans)
        self.reversals = OrderReversals(store: store, processor: processor, timeout: timeout, logger: logger)
        self.providerEvents = (store as? any ProviderEventStore).map {
            ProviderEvents(store: $0, logger: logger, plans: plans)
        }
    }
}
