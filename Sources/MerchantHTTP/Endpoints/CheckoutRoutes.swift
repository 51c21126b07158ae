import ApplePay
import Foundation
import Foundations
import HTTPCore
import JSONCoding
import Logging
import MerchantCore

/// The catalog and checkouts: `GET /v1/products`, `POST /v1/checkouts`, `GET /v1/checkouts/{id}` and the sheet's
/// updates (`POST /v1/checkouts/{id}/shipping-contact`, `shipping-method`, `payment-method`, `coupon`).
///
/// The creation answer carries the checkout's `clientSecret`; every route under `/v1/checkouts/{id}` (the payment's
/// in ``PaymentRoutes`` too) wants it in the ``secretHeader`` and answers a missing or wrong one with the very 404
/// of an unknown checkout, before anything else about the checkout (its expiry included) shows.
struct CheckoutRoutes: RouteCollection {
    /// The request header that carries a checkout's client secret.
    static let secretHeader = "Checkout-Secret"

    let configuration: StoreConfiguration
    let pricing: CheckoutPricing
    let store: any OrderStore
    let logger: Logger
    let clock: @Sendable () -> Date
    /// How long a checkout takes sheet updates (`410 checkoutExpired` after); `nil`: forever.
    let checkoutLifetime: Duration?

    func register(on group: inout RouterGroup) {
        // The catalog is fixed for the server's life: encoded once, not per request.
        let catalog = products()
        group.add(.get, "/v1/products") { _, _ in catalog }
        group.add(.post, "/v1/checkouts") { request, _ in try await createCheckout(request) }
        group.add(.get, "/v1/checkouts/{id}") { request, context in try await showCheckout(request, context) }
        group.add(.post, "/v1/checkouts/{id}/shipping-contact") { try await shippingContact($0, $1) }
        group.add(.post, "/v1/checkouts/{id}/shipping-method") { try await shippingMethod($0, $1) }
        group.add(.post, "/v1/checkouts/{id}/payment-method") { try await paymentMethod($0, $1) }
        group.add(.post, "/v1/checkouts/{id}/coupon") { try await coupon($0, $1) }
    }

    /// `GET /v1/products`: the catalog.
    func products() -> HTTPResponse {
        struct Answer: Encodable { var products: [Product] }
        return .encoding(Answer(products: configuration.products))
    }

    func createCheckout(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable {
            var items: [CheckoutItem]

            /// The items read over JSONCoding (`sku` and a whole `quantity` each, other members skipped); `nil` for
            /// a body of another shape, which `JSONDecoder` then reads and reports on.
            static func reading(_ body: Data) -> Body? {
                JSONFieldReader.read(body) { json in
                    var items: [CheckoutItem]?
                    try json.object(keys: ["items"]) { _, json in
                        var read: [CheckoutItem] = []
                        try json.array { json in
                            var sku: String?
                            var quantity: Int64?
                            try json.object(keys: ["sku", "quantity"]) { key, json in
                                if key == 0 { sku = try json.string() } else { quantity = try json.integer() }
                            }
                            guard let sku, let quantity, let whole = Int(exactly: quantity) else {
                                throw JSONFieldReader.Mismatch()
                            }
                            read.append(CheckoutItem(sku: sku, quantity: whole))
                        }
                        items = read
                    }
                    guard let items else { throw JSONFieldReader.Mismatch() }
                    return Body(items: items)
                }
            }
        }
        struct Answer: Encodable {
            var id: String
            /// The key to the checkout's routes (``secretHeader``), given here only.
            var clientSecret: String?
            var paymentRequest: PaymentRequest
        }
        let body = try JSONBody.decodeScanned(Body.self, from: request) { body, _ in Body.reading(body) }.value
        let checkout: Checkout
        let paymentRequest: PaymentRequest
        do {
            checkout = try Checkout.create(items: body.items, configuration: configuration, now: clock())
            paymentRequest = try pricing.paymentRequest(for: checkout)
        } catch {
            throw HTTPError(error)
        }
        try await storing { () async throws(OrderStoreError) in try await store.insertCheckout(checkout) }
        var response = PaymentRequestJSON.checkoutResponse(
            Answer(id: checkout.id, clientSecret: checkout.clientSecret, paymentRequest: paymentRequest),
            id: checkout.id, clientSecret: checkout.clientSecret, paymentRequest: paymentRequest, status: 201)
        response.logFields["checkoutId"] = checkout.id
        return response
    }

    /// `GET /v1/checkouts/{id}`: the payment request as the checkout now stands (a plan's carries the
    /// `managementURL` with the subscription's secret, hence the client secret this asks for).
    func showCheckout(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        struct Answer: Encodable {
            var id: String
            var paymentRequest: PaymentRequest
        }
        let checkout = try await loadCheckout(request, context)
        do {
            let paymentRequest = try pricing.paymentRequest(for: checkout)
            return PaymentRequestJSON.checkoutResponse(
                Answer(id: checkout.id, paymentRequest: paymentRequest), id: checkout.id, clientSecret: nil,
                paymentRequest: paymentRequest, status: 200)
        } catch {
            throw HTTPError(error)
        }
    }

    func shippingContact(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        let address = try JSONBody.decode(ShippingAddress.self, from: request)
        let checkout = try await loadCheckout(request, context, forUpdate: true)
        return try await update(
            checkout.selectingShippingContact(address, configuration: configuration), after: .shippingContact)
    }

    func shippingMethod(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable { var identifier: String }
        let body = try JSONBody.decode(Body.self, from: request)
        let checkout = try await loadCheckout(request, context, forUpdate: true)
        let updated: Checkout
        do {
            updated = try checkout.selectingShippingMethod(body.identifier, configuration: configuration)
        } catch {
            throw HTTPError(error)
        }
        return try await update(updated, after: .shippingMethod)
    }

    func paymentMethod(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable {
            var type: String?
            var network: String?
        }
        let body = try JSONBody.decode(Body.self, from: request)
        let checkout = try await loadCheckout(request, context, forUpdate: true)
        return try await update(
            checkout.selectingPaymentMethod(type: body.type, network: body.network), after: .paymentMethod)
    }

    func coupon(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable { var couponCode: String? }
        let body = try JSONBody.decode(Body.self, from: request)
        let checkout = try await loadCheckout(request, context, forUpdate: true)
        return try await update(checkout.applyingCoupon(body.couponCode), after: .couponCode)
    }

    private func update(_ checkout: Checkout, after event: SheetEvent) async throws(HTTPError) -> HTTPResponse {
        let answer: SheetUpdate
        do {
            answer = try pricing.update(for: checkout, after: event)
        } catch {
            throw HTTPError(error)
        }
        try await storing { () async throws(OrderStoreError) in try await store.updateCheckout(checkout) }
        return .encoding(answer)
    }

    /// The checkout of the path's `{id}`, for the holder of its client secret (``secretHeader``): without it, or
    /// with a wrong one, the answer is the 404 of an unknown checkout. For a sheet update (`forUpdate`), one past
    /// its lifetime is then `410 checkoutExpired`.
    private func loadCheckout(
        _ request: HTTPRequest, _ context: RequestContext, forUpdate: Bool = false
    ) async throws(HTTPError) -> Checkout {
        let id = try context.parameter("id")
        let checkout = try await storing { () async throws(OrderStoreError) in try await store.checkout(id: id) }
        guard let checkout, checkout.acceptsClientSecret(request.headers[Self.secretHeader]) else {
            throw .checkoutNotFound(id)
        }
        if forUpdate, let lifetime = checkoutLifetime,
            checkout.createdAt.addingTimeInterval(Double(lifetime.components.seconds)) < clock()
        {
            throw HTTPError(
                status: 410, code: "checkoutExpired", message: "Checkout \(id) has expired; create a new one.")
        }
        return checkout
    }

    private func storing<T>(_ body: () async throws(OrderStoreError) -> T) async throws(HTTPError) -> T {
        try await MerchantHTTP.storing(logger: logger, body)
    }
}
