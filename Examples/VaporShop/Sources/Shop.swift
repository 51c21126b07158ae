// Examples/VaporShop (docs/LIBRARY.md, "Apple Pay in a Vapor app"): a Vapor 4 app adds Apple Pay in a
// RouteCollection of its own, over the merchant's services on SQLite, answering Apple Pay JS's JSON shapes.
import ApplePay
import Foundation
import Foundations
import Logging
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantStore
import Vapor

import struct HTTPCore.HTTPError

// [services]
/// The merchant's services over an SQLite file: pricing, payments, the reconciler and the rest, assembled once.
/// - Parameters:
///   - storePath: the SQLite file of checkouts and orders (created when missing).
///   - processor: where payments are charged (`Processors`' Stripe, Adyen or Checkout.com connector in production).
///   - tokenOpener: decrypts tokens with the merchant's Payment Processing keys.
///   - validator: obtains merchant sessions from Apple with the Merchant Identity certificate.
public func makeServices(
    configuration: StoreConfiguration, storePath: String, processor: any PaymentProcessor,
    tokenOpener: any PaymentTokenOpening, validator: MerchantValidator,
    logger: Logger = Logger(label: "shop.applepay")
) throws -> MerchantServices {
    MerchantServices(
        configuration: configuration, store: try SQLiteOrderStore(path: storePath), processor: processor,
        tokenOpener: tokenOpener, validator: validator, logger: logger)
}

/// The shop's app: its own route, and Apple Pay's.
public func configure(_ app: Application, services: MerchantServices) throws {
    app.get("hello") { _ in "Hello from the shop." }
    try app.register(collection: ApplePayController(services: services))
}
// [/services]

// [routes]
/// Apple Pay in the shop's routes: a checkout and its `ApplePayPaymentRequest`, Apple's merchant validation, and
/// the payment, answered with Apple Pay JS's `ApplePayPaymentAuthorizationResult`.
public struct ApplePayController: RouteCollection {
    public let services: MerchantServices

    public init(services: MerchantServices) { self.services = services }

    public func boot(routes: any RoutesBuilder) throws {
        let applePay = routes.grouped("apple-pay")
        applePay.post("checkouts", use: createCheckout)
        applePay.post("merchant-session", use: merchantSession)
        applePay.on(.POST, "checkouts", ":id", "payment", body: .collect(maxSize: "64kb"), use: pay)
    }

    /// `POST /apple-pay/checkouts` `{"items": [{"sku", "quantity"}]}`: the checkout, its secret (for the payment's
    /// `Checkout-Secret` header) and the payment request for `new ApplePaySession(version, paymentRequest)`.
    func createCheckout(req: Request) async throws -> Response {
        struct Body: Decodable { var items: [CheckoutItem] }
        struct Answer: Content {
            var id: String
            var clientSecret: String?
            var paymentRequest: PaymentRequest
        }
        let items = try req.content.decode(Body.self).items
        let checkout: Checkout
        let paymentRequest: PaymentRequest
        do {
            checkout = try Checkout.create(items: items, configuration: services.configuration, now: services.clock())
            paymentRequest = try services.pricing.paymentRequest(for: checkout)
        } catch {
            throw Abort(.badRequest, reason: "\(error.code.rawValue): \(error.message)")
        }
        try await services.store.insertCheckout(checkout)
        let answer = Answer(id: checkout.id, clientSecret: checkout.clientSecret, paymentRequest: paymentRequest)
        return try await answer.encodeResponse(status: .created, for: req)
    }

    /// `POST /apple-pay/merchant-session` `{"validationURL"}` (from `onvalidatemerchant`): Apple's merchant session,
    /// passed back untouched for `completeMerchantValidation`.
    func merchantSession(req: Request) async throws -> Response {
        struct Body: Decodable { var validationURL: String? }
        let validationURL = try req.content.decode(Body.self).validationURL
        let json: HTTPHeaders = ["Content-Type": "application/json"]
        do {
            let session = try await services.validator.session(
                validationURL: validationURL, requestHost: req.headers.first(name: .host))
            return Response(status: .ok, headers: json, body: .init(data: session))
        } catch {
            // 400 validationURLNotAllowed, 503 merchantValidationUnavailable, 502, 504: `{"error": {"code", ...}}`.
            return Response(
                status: .init(statusCode: error.status), headers: json, body: .init(data: error.response.body))
        }
    }

    /// `POST /apple-pay/checkouts/:id/payment` with the checkout's `Checkout-Secret`: Apple Pay JS's
    /// `ApplePayPayment` (from `onpaymentauthorized`) paid by `CheckoutPayments`.
    func pay(req: Request) async throws -> Response {
        let payment = try req.content.decode(Payment.self)
        let result = try await services.payments.pay(
            checkoutID: try req.parameters.require("id"), clientSecret: req.headers.first(name: "Checkout-Secret"),
            tokenJSON: try JSONEncoder().encode(payment.token), billingContact: payment.billingContact,
            shippingContact: payment.shippingContact)
        let (status, answer) = Self.answer(for: result)
        return try await answer.encodeResponse(status: status, for: req)
    }

    /// Apple Pay JS's `ApplePayPaymentAuthorizationResult` (`status` 0 for success, 1 for failure, and `errors`), with
    /// the order's id when there is one.
    struct PaymentAnswer: Content {
        var status: PaymentAuthorizationStatus
        var errors: [PaymentError]?
        var orderId: String?
    }

    static func answer(for result: CheckoutPayments.Result) -> (HTTPStatus, PaymentAnswer) {
        func failure(_ status: HTTPStatus, _ message: String, order: Order? = nil) -> (HTTPStatus, PaymentAnswer) {
            let errors = [PaymentError(code: .unknown, message: message)]
            return (status, PaymentAnswer(status: .failure, errors: errors, orderId: order?.id))
        }
        switch result {
        case .refused(.checkoutNotFound): return failure(.notFound, "There is no such checkout.")
        case .refused(.notPayable(let errors)): return (.badRequest, PaymentAnswer(status: .failure, errors: errors))
        case .refused(.processorBusy): return failure(.serviceUnavailable, "Busy; try again in a moment.")
        case .refused(let refusal): return failure(.badRequest, refusal.message)
        case .subscribed: return (.ok, PaymentAnswer(status: .success))
        case .processed(let processed):
            let order = processed.order
            switch (processed.disposition, order.status) {
            case (.checkoutLocked, _), (.inProgress, _):
                return failure(.conflict, "This checkout is already paid or being paid.", order: order)
            case (_, .paid): return (.ok, PaymentAnswer(status: .success, orderId: order.id))
            case (_, .declined): return failure(.paymentRequired, "The card was declined.", order: order)
            default: return failure(.accepted, "The payment is being confirmed; do not pay again.", order: order)
            }
        }
    }
}
// [/routes]
