import ApplePay
import Cryptography
import Foundation
import HTTPServer
import Synchronization

/// The merchant's HTTP API (issue 6) as a `Responder`: routes, JSON errors, one log line and metrics per request.
/// Testable in-process with `respond(to:)`; served by `HTTPServer` in `MerchantApplication`.
public struct MerchantAPI: Responder {
    public let configuration: StoreConfiguration
    public let store: any OrderStore
    public let metrics: Metrics
    public let logger: RequestLogger
    private let router: Router

    /// - Parameters:
    ///   - configuration: the store: catalog, shipping, coupons, tax, domain association.
    ///   - store: checkouts and orders.
    ///   - processor: where payments are charged.
    ///   - tokenOpener: verifies and decrypts tokens with the merchant's keys.
    ///   - validator: obtains merchant sessions from Apple.
    ///   - clock: "now" for pricing and token times.
    public init(
        configuration: StoreConfiguration, store: any OrderStore, processor: any PaymentProcessor,
        tokenOpener: any PaymentTokenOpening, validator: MerchantValidator, metrics: Metrics = Metrics(),
        logger: RequestLogger = .standardError, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.store = store
        self.metrics = metrics
        self.logger = logger
        let endpoints = Endpoints(
            configuration: configuration, pricing: CheckoutPricing(configuration: configuration, clock: clock),
            store: store,
            payments: PaymentService(store: store, processor: processor, timeout: configuration.processor.timeout),
            tokenOpener: tokenOpener, validator: validator, metrics: metrics, logger: logger, clock: clock)
        var router = Router()
        func add(
            _ method: HTTPMethod, _ pattern: String,
            _ handler: @escaping @Sendable (Endpoints, HTTPRequest) async throws -> HTTPResponse
        ) {
            router.add(method, pattern) { request in
                do {
                    return try await handler(endpoints, request)
                } catch let error as HTTPError {
                    RequestNotes.note(errorCode: error.code)
                    return error.response
                } catch {
                    RequestNotes.note(errorCode: "internalError")
                    return HTTPError.internalError().response
                }
            }
        }
        add(.get, "/v1/products") { try await $0.products($1) }
        add(.post, "/v1/checkouts") { try await $0.createCheckout($1) }
        add(.get, "/v1/checkouts/{id}") { try await $0.showCheckout($1) }
        add(.post, "/v1/checkouts/{id}/shipping-contact") { try await $0.shippingContact($1) }
        add(.post, "/v1/checkouts/{id}/shipping-method") { try await $0.shippingMethod($1) }
        add(.post, "/v1/checkouts/{id}/payment-method") { try await $0.paymentMethod($1) }
        add(.post, "/v1/checkouts/{id}/coupon") { try await $0.coupon($1) }
        add(.post, "/v1/checkouts/{id}/payment") { try await $0.pay($1) }
        add(.get, "/v1/orders/{id}") { try await $0.showOrder($1) }
        add(.post, "/v1/apple-pay/merchant-session") { try await $0.merchantSession($1) }
        add(.get, "/.well-known/apple-developer-merchantid-domain-association") { try await $0.domainAssociation($1) }
        add(.get, "/healthz") { try await $0.health($1) }
        add(.get, "/metrics") { try await $0.metricsText($1) }
        self.router = router
    }

    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        let clock = ContinuousClock()
        let start = clock.now
        let notes = RequestNotes()
        let route: String
        switch router.resolve(method: request.method, path: request.path) {
        case .matched(let pattern, _), .methodNotAllowed(let pattern, _): route = pattern
        case .notFound: route = "unmatched"
        }
        let response = await RequestNotes.$current.withValue(notes) { await router.respond(to: request) }
        finish(request: request, route: route, response: response, notes: notes, elapsed: clock.now - start)
        return response
    }

    public func respondToOversizedRequest(_ request: HTTPRequest, limit: Int) -> HTTPResponse {
        let response = HTTPError.payloadTooLarge(limit: limit).response
        let notes = RequestNotes()
        notes.fields.withLock { $0.errorCode = "payloadTooLarge" }
        let route: String
        switch router.resolve(method: request.method, path: request.path) {
        case .matched(let pattern, _), .methodNotAllowed(let pattern, _): route = pattern
        case .notFound: route = "unmatched"
        }
        finish(request: request, route: route, response: response, notes: notes, elapsed: .zero)
        return response
    }

    private func finish(
        request: HTTPRequest, route: String, response: HTTPResponse, notes: RequestNotes, elapsed: Duration
    ) {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        metrics.recordRequest(route: route, method: request.method.rawValue, status: response.status, seconds: seconds)
        let fields = notes.fields.withLock { $0 }
        var line: [String: any Sendable] = [
            "method": request.method.rawValue, "route": route, "status": response.status,
            "durationMs": (seconds * 1_000_000).rounded() / 1000,
        ]
        if let id = fields.checkoutID ?? request.pathParameters["id"].flatMap({ $0.hasPrefix("chk_") ? $0 : nil }) {
            line["checkoutId"] = id
        }
        if let id = fields.orderID { line["orderId"] = id }
        if let code = fields.errorCode ?? (response.status >= 400 ? Self.errorCode(in: response.body) : nil) {
            line["code"] = code
        }
        if let outcome = fields.paymentOutcome { line["payment"] = outcome }
        let level = response.status >= 500 ? "error" : response.status >= 400 ? "warn" : "info"
        logger.log(level, "request", line)
    }
}

extension MerchantAPI {
    /// The `error.code` of a JSON error body (answers made by the router itself).
    static func errorCode(in body: Data) -> String? {
        let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
        return (object?["error"] as? [String: Any])?["code"] as? String
    }
}

/// The handlers, with everything they use.
struct Endpoints: Sendable {
    let configuration: StoreConfiguration
    let pricing: CheckoutPricing
    let store: any OrderStore
    let payments: PaymentService
    let tokenOpener: any PaymentTokenOpening
    let validator: MerchantValidator
    let metrics: Metrics
    let logger: RequestLogger
    let clock: @Sendable () -> Date

    // MARK: Catalog and checkouts

    func products(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        struct Answer: Encodable { var products: [Product] }
        return .encoding(Answer(products: configuration.products))
    }

    func createCheckout(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable { var items: [CheckoutItem] }
        struct Answer: Encodable {
            var id: String
            var paymentRequest: WebPaymentRequest
        }
        let body = try JSONBody.decode(Body.self, from: request)
        let checkout: Checkout
        let paymentRequest: WebPaymentRequest
        do {
            checkout = try Checkout.create(items: body.items, configuration: configuration, now: clock())
            paymentRequest = try pricing.paymentRequest(for: checkout)
        } catch {
            throw Self.httpError(error)
        }
        try await storing { () async throws(OrderStoreError) in try await store.insertCheckout(checkout) }
        RequestNotes.note(checkoutID: checkout.id)
        return .encoding(Answer(id: checkout.id, paymentRequest: paymentRequest), status: 201)
    }

    func showCheckout(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        struct Answer: Encodable {
            var id: String
            var paymentRequest: WebPaymentRequest
        }
        let checkout = try await loadCheckout(request)
        do {
            return .encoding(Answer(id: checkout.id, paymentRequest: try pricing.paymentRequest(for: checkout)))
        } catch {
            throw Self.httpError(error)
        }
    }

    func shippingContact(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        let address = try JSONBody.decode(ShippingAddress.self, from: request)
        let checkout = try await loadCheckout(request)
        return try await update(
            checkout.selectingShippingContact(address, configuration: configuration), after: .shippingContact)
    }

    func shippingMethod(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable { var identifier: String }
        let body = try JSONBody.decode(Body.self, from: request)
        let checkout = try await loadCheckout(request)
        let updated: Checkout
        do {
            updated = try checkout.selectingShippingMethod(body.identifier, configuration: configuration)
        } catch {
            throw Self.httpError(error)
        }
        return try await update(updated, after: .shippingMethod)
    }

    func paymentMethod(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable {
            var type: String?
            var network: String?
        }
        let body = try JSONBody.decode(Body.self, from: request)
        let checkout = try await loadCheckout(request)
        return try await update(
            checkout.selectingPaymentMethod(type: body.type, network: body.network), after: .paymentMethod)
    }

    func coupon(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable { var couponCode: String? }
        let body = try JSONBody.decode(Body.self, from: request)
        let checkout = try await loadCheckout(request)
        return try await update(checkout.applyingCoupon(body.couponCode), after: .couponCode)
    }

    private func update(_ checkout: Checkout, after event: SheetEvent) async throws(HTTPError) -> HTTPResponse {
        let answer: WebPaymentUpdate
        do {
            answer = try pricing.update(for: checkout, after: event)
        } catch {
            throw Self.httpError(error)
        }
        try await storing { () async throws(OrderStoreError) in try await store.updateCheckout(checkout) }
        return .encoding(answer)
    }

    // MARK: Orders

    func showOrder(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        let id = request.pathParameters["id"] ?? ""
        let order = try await storing { () async throws(OrderStoreError) in try await store.order(id: id) }
        guard let order else { throw .orderNotFound(id) }
        RequestNotes.note(checkoutID: order.checkoutID, orderID: order.id)
        return .encoding(order)
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

    func loadCheckout(_ request: HTTPRequest) async throws(HTTPError) -> Checkout {
        let id = request.pathParameters["id"] ?? ""
        RequestNotes.note(checkoutID: id)
        let checkout = try await storing { () async throws(OrderStoreError) in try await store.checkout(id: id) }
        guard let checkout else { throw .checkoutNotFound(id) }
        return checkout
    }

    /// Runs a store call, turning its failure into an HTTP error (logged without details a client could misuse).
    func storing<T>(_ body: () async throws(OrderStoreError) -> T) async throws(HTTPError) -> T {
        do {
            return try await body()
        } catch {
            switch error.code {
            case .notFound: throw .notFound(error.message)
            case .conflict: throw HTTPError(status: 409, code: "conflict", message: error.message)
            default:
                logger.log("error", "store failure", ["code": error.code.rawValue])
                throw .storeUnavailable()
            }
        }
    }

    static func httpError(_ error: CheckoutError) -> HTTPError {
        switch error.code {
        case .unknownProduct, .invalidQuantity, .emptyCheckout, .unknownShippingMethod:
            return HTTPError(status: 400, code: error.code.rawValue, message: error.message)
        default:
            return HTTPError(status: 422, code: error.code.rawValue, message: error.message)
        }
    }
}
