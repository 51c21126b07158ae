import ApplePay
import Foundation
import Foundations
import HTTPClient

/// The merchant as a server: each sheet event is a POST to the merchant API's checkout routes, whose bodies and
/// answers are the Apple Pay JS dictionaries. The requests go through a `MerchantTransport`: HTTP to a running
/// server (`HTTPClientTransport`), or the merchant API called in process.
///
/// | event | route | body |
/// |---|---|---|
/// | validatemerchant | `POST /v1/apple-pay/merchant-session` | `{"validationURL"}` |
/// | shippingcontactselected | `POST /v1/checkouts/{id}/shipping-contact` | the redacted contact |
/// | shippingmethodselected | `POST /v1/checkouts/{id}/shipping-method` | the shipping method |
/// | paymentmethodselected | `POST /v1/checkouts/{id}/payment-method` | the payment method |
/// | couponcodechanged | `POST /v1/checkouts/{id}/coupon` | `{"couponCode"}` |
/// | paymentauthorized | `POST /v1/checkouts/{id}/payment` | `ApplePayPayment` (token and contacts) |
///
/// Every route under `/v1/checkouts/{id}` is sent with the checkout's client secret (the creation answer's
/// `clientSecret`) in a `Checkout-Secret` header; without it the server answers 404, as for an unknown checkout.
///
/// A non-2xx answer fails the session with the server's `error.code`, except for the payment route, whose
/// refusals carry an `ApplePayPaymentAuthorizationResult` (`status` failure and `errors`).
public struct HTTPMerchantDelegate: PaymentSheetDelegate {
    /// The checkout the session pays for.
    public let checkoutID: String
    /// The checkout's client secret, sent as `Checkout-Secret` with every checkout route.
    private let checkoutSecret: String
    private let transport: any MerchantTransport

    /// The request header that carries a checkout's client secret.
    public static let secretHeader = "Checkout-Secret"

    /// - Parameters:
    ///   - transport: how the merchant API is reached.
    ///   - checkoutID: the checkout the session pays for.
    ///   - checkoutSecret: its client secret (`clientSecret` of `POST /v1/checkouts`).
    public init(transport: any MerchantTransport, checkoutID: String, checkoutSecret: String) {
        self.transport = transport
        self.checkoutID = checkoutID
        self.checkoutSecret = checkoutSecret
    }

    /// The merchant server at `baseURL` (for example `http://127.0.0.1:8080`) over HTTP.
    public init(baseURL: String, checkoutID: String, checkoutSecret: String, client: HTTPClient = HTTPClient()) {
        self.init(
            transport: HTTPClientTransport(baseURL: baseURL, client: client), checkoutID: checkoutID,
            checkoutSecret: checkoutSecret)
    }

    /// A checkout made on the server: its id, its client secret and the payment request to show.
    public struct Checkout: Sendable, CustomStringConvertible {
        public var id: String
        /// The key to the checkout's routes: never printed (``description`` shows the id only).
        public var secret: String
        public var paymentRequest: PaymentRequest

        public var description: String { "Checkout(\(id))" }
    }

    private struct CheckoutAnswer: Decodable {
        var id: String
        var paymentRequest: PaymentRequest
    }

    private struct CreatedAnswer: Decodable {
        var id: String
        var clientSecret: String
        var paymentRequest: PaymentRequest
    }

    /// `POST /v1/checkouts {"items": [{"sku", "quantity"}]}` → `201 {"id", "clientSecret", "paymentRequest"}`.
    /// - Throws: `PaymentSheetError.merchantFailed` naming the server's error code, or the transport failure.
    public static func createCheckout(
        transport: any MerchantTransport, items: [ScenarioCartItem]
    ) async throws -> Checkout {
        struct Body: Encodable { var items: [ScenarioCartItem] }
        let response = try await transport.send(
            method: "POST", path: "/v1/checkouts", body: try encode(Body(items: items)))
        guard (200..<300).contains(response.status) else { throw failure(response, route: "POST /v1/checkouts") }
        do {
            let answer = try JSONDecoder().decode(CreatedAnswer.self, from: response.body)
            return Checkout(id: answer.id, secret: answer.clientSecret, paymentRequest: answer.paymentRequest)
        } catch {
            throw PaymentSheetError(
                .merchantFailed, "POST /v1/checkouts answered JSON that is not {id, clientSecret, paymentRequest}")
        }
    }

    /// `GET /v1/checkouts/{id}` with its `Checkout-Secret` → `{"id", "paymentRequest"}`: an existing checkout, to
    /// pay it.
    /// - Parameters:
    ///   - secret: the checkout's client secret (`clientSecret` of `POST /v1/checkouts`).
    ///   - server: names the server in messages (its base URL).
    /// - Throws: `PaymentSheetError` `unknownCheckout` when the server has no such checkout or it is not this
    ///   checkout's secret (404: the server tells the two apart to no one), `merchantFailed` for any other error
    ///   answer or an answer of the wrong shape, or the transport failure.
    public static func fetchCheckout(
        transport: any MerchantTransport, id: String, secret: String, server: String = "the merchant server"
    ) async throws -> Checkout {
        let route = "GET /v1/checkouts/\(id)"
        let unreserved = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        let escaped = id.addingPercentEncoding(withAllowedCharacters: unreserved) ?? id
        let response = try await transport.send(
            method: "GET", path: "/v1/checkouts/" + escaped, headers: [secretHeader: secret], body: nil)
        if response.status == 404 {
            let object = try? JSONValue(parsing: response.body)
            let message = object?["error"]?["message"]?.stringValue ?? "not found"
            throw PaymentSheetError(
                .unknownCheckout,
                "\(server) has no checkout '\(id)' with that secret (\(route) answered 404: \(message)); "
                    + "create one with POST /v1/checkouts and pass its clientSecret")
        }
        guard (200..<300).contains(response.status) else { throw failure(response, route: route) }
        do {
            let answer = try JSONDecoder().decode(CheckoutAnswer.self, from: response.body)
            return Checkout(id: answer.id, secret: secret, paymentRequest: answer.paymentRequest)
        } catch {
            throw PaymentSheetError(.merchantFailed, "\(route) answered JSON that is not {id, paymentRequest}")
        }
    }

    public func validateMerchant(_ event: MerchantValidationEvent) async throws -> MerchantSession {
        try await post("/v1/apple-pay/merchant-session", event, as: MerchantSession.self)
    }

    public func didSelectPaymentMethod(_ paymentMethod: PaymentMethod) async throws -> PaymentMethodUpdate {
        try await post(checkoutPath("payment-method"), paymentMethod, as: PaymentMethodUpdate.self)
    }

    public func didSelectShippingContact(_ contact: Contact) async throws -> ShippingContactUpdate {
        try await post(checkoutPath("shipping-contact"), contact, as: ShippingContactUpdate.self)
    }

    public func didSelectShippingMethod(_ method: ShippingMethod) async throws -> ShippingMethodUpdate {
        try await post(checkoutPath("shipping-method"), method, as: ShippingMethodUpdate.self)
    }

    public func didChangeCouponCode(_ couponCode: String) async throws -> CouponCodeUpdate {
        struct Body: Encodable { var couponCode: String }
        return try await post(checkoutPath("coupon"), Body(couponCode: couponCode), as: CouponCodeUpdate.self)
    }

    public func didAuthorizePayment(_ payment: Payment) async throws -> PaymentAuthorizationResult {
        try await authorizePayment(payment).result
    }

    /// `POST /v1/checkouts/{id}/payment`: the server's `ApplePayPaymentAuthorizationResult` and its `orderId`.
    public func authorizePayment(_ payment: Payment) async throws -> PaymentAuthorizationAnswer {
        struct OrderReference: Decodable { var orderId: String? }
        let path = checkoutPath("payment")
        let response = try await transport.send(
            method: "POST", path: path, headers: checkoutHeaders, body: try Self.encode(payment))
        if let result = try? JSONDecoder().decode(PaymentAuthorizationResult.self, from: response.body) {
            let orderID = (try? JSONDecoder().decode(OrderReference.self, from: response.body))?.orderId
            return PaymentAuthorizationAnswer(result: result, orderID: orderID)
        }
        throw Self.failure(response, route: "POST \(path)")
    }

    /// What every checkout route is sent with.
    private var checkoutHeaders: [String: String] { [Self.secretHeader: checkoutSecret] }

    private func checkoutPath(_ route: String) -> String {
        let id = checkoutID.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? checkoutID
        return "/v1/checkouts/\(id)/\(route)"
    }

    /// Posts `body` to `path`, with the checkout's secret when `path` is one of its routes.
    private func post<Body: Encodable, Answer: Decodable>(
        _ path: String, _ body: Body, as type: Answer.Type
    ) async throws -> Answer {
        let headers = path.hasPrefix("/v1/checkouts/") ? checkoutHeaders : [:]
        let response = try await transport.send(
            method: "POST", path: path, headers: headers, body: try Self.encode(body))
        guard (200..<300).contains(response.status) else { throw Self.failure(response, route: "POST \(path)") }
        do {
            return try JSONDecoder().decode(Answer.self, from: response.body)
        } catch {
            throw PaymentSheetError(.merchantFailed, "POST \(path) answered JSON of an unexpected shape")
        }
    }

    private static func encode(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    /// The server's `{"error": {"code", "message"}}` as a `merchantFailed` error.
    static func failure(_ response: MerchantTransportResponse, route: String) -> PaymentSheetError {
        let object = try? JSONValue(parsing: response.body)
        let code = object?["error"]?["code"]?.stringValue ?? "http\(response.status)"
        let message = object?["error"]?["message"]?.stringValue ?? "no error message"
        return PaymentSheetError(.merchantFailed, "\(route) answered \(response.status) \(code): \(message)")
    }
}
