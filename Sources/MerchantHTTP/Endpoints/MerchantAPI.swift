import ApplePay
import Foundation
import Foundations
import HTTPServer
import MerchantCore
import MerchantIntegrations
import MerchantWallet

/// The merchant's HTTP API as a `Responder`: a ``Router`` of the routes below, with one log line and metrics per
/// request from ``RequestLogging`` middleware. Testable in-process with `respond(to:)`; served by `HTTPServer`
/// in `MerchantApplication`.
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
    ///   - reconcileAfter: how old an unsettled payment must be before the reconciler looks it up.
    ///   - walletOrders: Wallet orders (`orderDetails`, the orders web service under `/wallet`); nil: off.
    ///   - web: the checkout page's settings (sandbox sheet, Apple's SDK).
    ///   - plugins: routes added from outside (sandbox mode's `/v1/sandbox/wallet` and `/v1/sandbox/tokens`, from
    ///     `MerchantSandbox`); a production server has none.
    ///   - merchantTokenGateway: Apple's merchant-token API (events, unlink); `nil` keeps them local.
    ///   - rateLimits: per client address limits on checkouts and sheet updates; `nil` limits nothing.
    ///   - checkoutLifetime: how long a checkout takes sheet updates (`410 checkoutExpired` after; it is pruned
    ///     later if unpaid); `nil`: forever.
    public init(
        configuration: StoreConfiguration, store: any OrderStore, processor: any PaymentProcessor,
        tokenOpener: any PaymentTokenOpening, validator: MerchantValidator, metrics: Metrics = Metrics(),
        logger: RequestLogger = .standardError, clock: @escaping @Sendable () -> Date = { Date() },
        adminToken: String? = nil, reconcileAfter: Duration = .seconds(60), rateLimits: RateLimits? = nil,
        checkoutLifetime: Duration? = nil, walletOrders: WalletOrdersService? = nil,
        web: WebCheckout.Settings = .init(),
        plugins: [any MerchantAPIPlugin] = [], merchantTokenGateway: (any MerchantTokenGateway)? = nil
    ) {
        self.configuration = configuration
        self.store = store
        self.metrics = metrics
        self.logger = logger
        let pricing = CheckoutPricing(configuration: configuration, clock: clock)
        let subscriptions = (store as? any SubscriptionStore).map {
            SubscriptionService(
                store: $0, processor: processor, gateway: merchantTokenGateway,
                timeout: configuration.processor.timeout, logger: logger, clock: clock)
        }
        self.subscriptions = subscriptions
        let payments = CheckoutPayments(
            configuration: configuration, pricing: pricing, store: store, tokenOpener: tokenOpener,
            service: PaymentService(
                store: store, processor: processor, timeout: configuration.processor.timeout, logger: logger),
            subscriptions: subscriptions, checkoutLifetime: checkoutLifetime)
        self.reconciler = Reconciler(
            store: store, processor: processor, settleAfter: reconcileAfter, timeout: configuration.processor.timeout,
            logger: logger, clock: clock,
            plans: subscriptions.map {
                PlanSubscriptions(service: $0, pricing: pricing, configuration: configuration, store: store)
            })
        let endpoints = Endpoints(
            configuration: configuration, pricing: pricing, store: store, payments: payments, validator: validator,
            metrics: metrics, logger: logger, clock: clock, checkoutLifetime: checkoutLifetime,
            walletOrders: walletOrders)
        var router = Router()
        router.add(middleware: SecurityHeaders())
        router.add(middleware: RequestLogging(logger: logger, metrics: metrics))
        router.add(middleware: RequireJSONContentType())
        if let rateLimits {
            router.add(middleware: RateLimiting(checkouts: rateLimits.checkouts, updates: rateLimits.updates))
        }
        func add(
            _ method: HTTPMethod, _ pattern: String,
            _ handler: @escaping @Sendable (Endpoints, HTTPRequest, RequestContext) async throws -> HTTPResponse
        ) {
            router.add(method, pattern) { request, context in try await handler(endpoints, request, context) }
        }
        // The catalog is fixed for the server's life: encoded once, not per request.
        let catalog = endpoints.products()
        add(.get, "/v1/products") { _, _, _ in catalog }
        add(.post, "/v1/checkouts") { endpoints, request, _ in try await endpoints.createCheckout(request) }
        add(.get, "/v1/checkouts/{id}") { endpoints, _, context in try await endpoints.showCheckout(context) }
        add(.post, "/v1/checkouts/{id}/shipping-contact") { try await $0.shippingContact($1, $2) }
        add(.post, "/v1/checkouts/{id}/shipping-method") { try await $0.shippingMethod($1, $2) }
        add(.post, "/v1/checkouts/{id}/payment-method") { try await $0.paymentMethod($1, $2) }
        add(.post, "/v1/checkouts/{id}/coupon") { try await $0.coupon($1, $2) }
        add(.post, "/v1/checkouts/{id}/payment") { try await $0.pay($1, $2) }
        add(.get, "/v1/orders/{id}") { try await $0.showOrder($1, $2) }
        add(.post, "/v1/apple-pay/merchant-session") { endpoints, request, _ in
            try await endpoints.merchantSession(request)
        }
        add(.get, "/.well-known/apple-developer-merchantid-domain-association") { endpoints, request, _ in
            try await endpoints.domainAssociation(request)
        }
        let sandboxMode = plugins.contains { $0.standsInForApple }
        let page = WebCheckout(
            settings: web, storeName: configuration.storeName, currencyCode: configuration.currencyCode,
            sandboxMode: sandboxMode)
        router.add(resources: page.resources)
        add(.get, "/v1/web/config") { _, _, _ in page.configResponse() }
        let services = MerchantAPIServices(
            configuration: configuration, store: store, pricing: pricing, logger: logger, clock: clock)
        for plugin in plugins { plugin.register(on: &router, services: services) }
        add(.get, "/healthz") { endpoints, request, _ in try await endpoints.health(request) }
        add(.get, "/metrics") { endpoints, request, _ in try await endpoints.metricsText(request) }
        if let subscriptions {
            SubscriptionEndpoints(
                service: subscriptions, adminToken: adminToken, logger: logger, movableClock: sandboxMode
            ).register(on: &router)
        }
        if let adminToken, !adminToken.isEmpty {
            AdminEndpoints(
                token: adminToken, store: store, processor: processor, reconciler: reconciler,
                timeout: configuration.processor.timeout, logger: logger, walletOrders: walletOrders
            ).register(on: &router)
        }
        if let walletOrders {
            WalletOrdersEndpoints(
                service: walletOrders, store: store, configuration: configuration, logger: logger, clock: clock
            ).register(on: &router)
        }
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

/// The handlers, with everything they use.
struct Endpoints: Sendable {
    let configuration: StoreConfiguration
    let pricing: CheckoutPricing
    let store: any OrderStore
    let payments: CheckoutPayments
    let validator: MerchantValidator
    let metrics: Metrics
    let logger: RequestLogger
    let clock: @Sendable () -> Date
    let checkoutLifetime: Duration?
    let walletOrders: WalletOrdersService?

    // MARK: Catalog and checkouts

    /// `GET /v1/products`: the catalog.
    func products() -> HTTPResponse {
        struct Answer: Encodable { var products: [Product] }
        return .encoding(Answer(products: configuration.products))
    }

    func createCheckout(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable { var items: [CheckoutItem] }
        struct Answer: Encodable {
            var id: String
            var paymentRequest: PaymentRequest
        }
        let body = try JSONBody.decode(Body.self, from: request)
        let checkout: Checkout
        let paymentRequest: PaymentRequest
        do {
            checkout = try Checkout.create(items: body.items, configuration: configuration, now: clock())
            paymentRequest = try pricing.paymentRequest(for: checkout)
        } catch {
            throw Self.httpError(error)
        }
        try await storing { () async throws(OrderStoreError) in try await store.insertCheckout(checkout) }
        var response = HTTPResponse.encoding(Answer(id: checkout.id, paymentRequest: paymentRequest), status: 201)
        response.logFields["checkoutId"] = checkout.id
        return response
    }

    func showCheckout(_ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        struct Answer: Encodable {
            var id: String
            var paymentRequest: PaymentRequest
        }
        let checkout = try await loadCheckout(context)
        do {
            return .encoding(Answer(id: checkout.id, paymentRequest: try pricing.paymentRequest(for: checkout)))
        } catch {
            throw Self.httpError(error)
        }
    }

    func shippingContact(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        let address = try JSONBody.decode(ShippingAddress.self, from: request)
        let checkout = try await loadCheckout(context, forUpdate: true)
        return try await update(
            checkout.selectingShippingContact(address, configuration: configuration), after: .shippingContact)
    }

    func shippingMethod(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable { var identifier: String }
        let body = try JSONBody.decode(Body.self, from: request)
        let checkout = try await loadCheckout(context, forUpdate: true)
        let updated: Checkout
        do {
            updated = try checkout.selectingShippingMethod(body.identifier, configuration: configuration)
        } catch {
            throw Self.httpError(error)
        }
        return try await update(updated, after: .shippingMethod)
    }

    func paymentMethod(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable {
            var type: String?
            var network: String?
        }
        let body = try JSONBody.decode(Body.self, from: request)
        let checkout = try await loadCheckout(context, forUpdate: true)
        return try await update(
            checkout.selectingPaymentMethod(type: body.type, network: body.network), after: .paymentMethod)
    }

    func coupon(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable { var couponCode: String? }
        let body = try JSONBody.decode(Body.self, from: request)
        let checkout = try await loadCheckout(context, forUpdate: true)
        return try await update(checkout.applyingCoupon(body.couponCode), after: .couponCode)
    }

    private func update(_ checkout: Checkout, after event: SheetEvent) async throws(HTTPError) -> HTTPResponse {
        let answer: SheetUpdate
        do {
            answer = try pricing.update(for: checkout, after: event)
        } catch {
            throw Self.httpError(error)
        }
        try await storing { () async throws(OrderStoreError) in try await store.updateCheckout(checkout) }
        return .encoding(answer)
    }

    // MARK: Orders

    /// The customer's view of an order: only with the order's secret (`?secret=` or `X-Order-Secret`), and
    /// without contacts. A missing or wrong secret answers like an unknown order.
    func showOrder(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        let id = context.parameters["id"] ?? ""
        let secret = request.headers["X-Order-Secret"] ?? request.query["secret"] ?? ""
        let order = try await storing { () async throws(OrderStoreError) in try await store.order(id: id) }
        guard let order, constantTimeEqual(secret, order.viewSecret) else { throw .orderNotFound(id) }
        var response = HTTPResponse.encoding(order.customerView)
        response.logFields["checkoutId"] = order.checkoutID
        response.logFields["orderId"] = order.id
        return response
    }

    // MARK: Apple Pay on the web, health, metrics

    func merchantSession(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable { var validationURL: String? }
        let body = request.body.isEmpty ? Body(validationURL: nil) : try JSONBody.decode(Body.self, from: request)
        let session = try await validator.session(
            validationURL: body.validationURL, requestHost: request.headers["Host"])
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: session)
    }

    func domainAssociation(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        guard let text = configuration.domainAssociation else {
            throw .notFound("This server has no Apple Pay domain association file configured.")
        }
        return .text(text)
    }

    func health(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        do {
            _ = try await store.checkout(id: "chk_healthcheck")
        } catch {
            throw HTTPError(status: 503, code: "storeUnavailable", message: "The order store does not answer.")
        }
        return .encoding(["status": "ok"])
    }

    func metricsText(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        .text(metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
    }

    // MARK: Helpers

    /// The checkout of the path's `{id}`; for a sheet update (`forUpdate`), one past its lifetime is
    /// `410 checkoutExpired`.
    func loadCheckout(_ context: RequestContext, forUpdate: Bool = false) async throws(HTTPError) -> Checkout {
        let id = context.parameters["id"] ?? ""
        let checkout = try await storing { () async throws(OrderStoreError) in try await store.checkout(id: id) }
        guard let checkout else { throw .checkoutNotFound(id) }
        if forUpdate, let lifetime = checkoutLifetime,
            checkout.createdAt.addingTimeInterval(Double(lifetime.components.seconds)) < clock()
        {
            throw HTTPError(
                status: 410, code: "checkoutExpired", message: "Checkout \(id) has expired; create a new one.")
        }
        return checkout
    }

    /// Runs a store call, turning its failure into an HTTP error (logged without details a client could misuse).
    func storing<T>(_ body: () async throws(OrderStoreError) -> T) async throws(HTTPError) -> T {
        try await MerchantHTTP.storing(logger: logger, body)
    }

    /// The answer to a checkout error (``HTTPError/init(_:)``).
    static func httpError(_ error: CheckoutError) -> HTTPError { HTTPError(error) }
}
