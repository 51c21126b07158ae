import ApplePay
import Cryptography
import Foundation
import HTTPServer

/// `POST /v1/checkouts/{id}/payment`: verify and decrypt the token, check it against the checkout's current total
/// and `applicationData`, charge once per transaction id, record the order, answer like `completePayment`.
extension Endpoints {
    /// The `ApplePayPayment` body. The token's shape is checked here so that a malformed body is a 400 before any
    /// cryptography; the token bytes themselves go to the `PaymentTokenOpening` untouched.
    struct PaymentBody: Decodable {
        struct Token: Decodable {
            struct PaymentData: Decodable {
                struct Header: Decodable {
                    var transactionId: String
                    var publicKeyHash: String
                    var ephemeralPublicKey: String?
                    var wrappedKey: String?
                    var applicationData: String?
                }
                var version: String
                var data: String
                var signature: String
                var header: Header
            }
            struct Method: Decodable {
                var displayName: String?
                var network: String?
                var type: String?
            }
            var paymentData: PaymentData
            var paymentMethod: Method?
            var transactionIdentifier: String?
        }
        var token: Token
        var shippingContact: OrderContact?
        var billingContact: OrderContact?
    }

    /// The answer: Apple Pay JS `ApplePayPaymentAuthorizationResult` fields plus the API's error object.
    struct PaymentAnswer: Encodable {
        struct ErrorObject: Encodable {
            var code: String
            var message: String
        }
        var status: String
        var orderId: String?
        var errors: [PaymentError]?
        var error: ErrorObject?
    }

    func pay(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        let body = try JSONBody.decode(PaymentBody.self, from: request)
        guard let object = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any],
            let tokenObject = object["token"],
            let tokenJSON = try? JSONSerialization.data(withJSONObject: tokenObject)
        else { throw .invalidRequest("Field token should be an object.") }
        var checkout = try await loadCheckout(request)

        // The token must be Apple's, for this merchant, recent, and decryptable.
        let opened: OpenedPaymentToken
        switch tokenOpener.open(tokenJSON) {
        case .success(let value): opened = value
        case .failure(let refusal):
            return refuse(status: 400, code: refusal.code, message: refusal.message)
        }

        // Price what is being paid for: the authorized shipping address replaces the redacted one.
        if let contact = body.shippingContact, contact.countryCode != nil || contact.postalCode != nil {
            checkout = checkout.selectingShippingContact(
                ShippingAddress(
                    locality: contact.locality, subAdministrativeArea: contact.subAdministrativeArea,
                    administrativeArea: contact.administrativeArea, postalCode: contact.postalCode,
                    country: contact.country, countryCode: contact.countryCode),
                configuration: configuration)
        }
        let breakdown: PriceBreakdown
        do {
            breakdown = try pricing.price(checkout)
        } catch {
            throw Self.httpError(error)
        }
        guard breakdown.isPayable else {
            metrics.recordPayment(outcome: "refused")
            return answer(
                status: 400,
                PaymentAnswer(
                    status: "failure", errors: breakdown.errors.isEmpty ? nil : breakdown.errors,
                    error: .init(
                        code: "checkoutNotPayable", message: "The checkout has errors to resolve before paying.")))
        }

        // The token must pay exactly this checkout's total, in its currency, for this checkout.
        let expectedCurrency = Currency(code: breakdown.currencyCode)?.numericCode
        guard let expectedCurrency, Int(opened.currencyNumericCode) == Int(expectedCurrency) else {
            return refuse(
                status: 400, code: "amountMismatch",
                message: "The token's currency is not the checkout's (\(breakdown.currencyCode)).")
        }
        guard opened.amount == breakdown.total else {
            return refuse(
                status: 400, code: "amountMismatch",
                message: "The token's amount is not the checkout's current total "
                    + "\(Money(minorUnits: breakdown.total, currency: breakdown.currency))."
            )
        }
        guard let hash = opened.applicationDataHash,
            checkout.applicationDataCandidates.contains(where: { Digest.sha256($0) == hash })
        else {
            return refuse(
                status: 400, code: "applicationDataMismatch",
                message: "The token was not made for this checkout (its applicationData does not match).")
        }

        // Charge at most once per transaction id, and record the order with its payment.
        let newOrder = NewOrder(
            checkout: checkout, breakdown: breakdown, transactionID: opened.transactionID, token: opened.networkToken,
            shippingContact: body.shippingContact, billingContact: body.billingContact, configuration: configuration)
        let result: PaymentService.Result
        do {
            result = try await payments.pay(newOrder, token: opened.networkToken)
        } catch {
            logger.log(
                "error", "store failure during payment", ["code": error.code.rawValue, "checkoutId": checkout.id])
            metrics.recordPayment(outcome: "error")
            RequestNotes.note(paymentOutcome: "storeFailure")
            throw .storeUnavailable()
        }
        return answer(for: result)
    }

    private func answer(for result: PaymentService.Result) -> HTTPResponse {
        let order = result.order
        RequestNotes.note(orderID: order.id)
        switch result.disposition {
        case .checkoutAlreadyPaid:
            metrics.recordPayment(outcome: "refused")
            return failure(
                status: 409, code: "checkoutAlreadyPaid", message: "This checkout was already paid with another token.",
                orderID: order.id)
        case .inProgress:
            metrics.recordPayment(outcome: "inProgress")
            return failure(
                status: 409, code: "paymentInProgress",
                message: "A payment with this token is still being processed; ask again shortly.", orderID: order.id)
        case .processed, .replayed:
            break
        }
        let replayed = result.disposition == .replayed
        switch order.status {
        case .paid:
            metrics.recordPayment(outcome: replayed ? "replayed" : "approved")
            RequestNotes.note(paymentOutcome: replayed ? "replayed" : "approved")
            return answer(status: 200, PaymentAnswer(status: "success", orderId: order.id))
        case .failed:
            let code = order.payment.failureCode ?? "paymentFailed"
            let declined = order.payment.status == .declined
            metrics.recordPayment(outcome: replayed ? "replayed" : declined ? "declined" : "error")
            RequestNotes.note(paymentOutcome: replayed ? "replayed" : declined ? "declined" : "error")
            let status = declined ? 402 : code == "processorTimeout" ? 504 : 502
            let message =
                declined
                ? "The card was declined (\(code)); nothing was charged."
                : "The payment processor failed (\(code)); nothing was charged."
            return failure(status: status, code: code, message: message, orderID: order.id)
        case .pending:
            metrics.recordPayment(outcome: "inProgress")
            return failure(
                status: 409, code: "paymentInProgress", message: "The payment is still being processed.",
                orderID: order.id)
        }
    }

    /// A refusal before anything is written or charged.
    private func refuse(status: Int, code: String, message: String) -> HTTPResponse {
        metrics.recordPayment(outcome: "refused")
        RequestNotes.note(paymentOutcome: "refused")
        return failure(status: status, code: code, message: message, orderID: nil)
    }

    private func failure(status: Int, code: String, message: String, orderID: String?) -> HTTPResponse {
        RequestNotes.note(errorCode: code)
        return answer(
            status: status,
            PaymentAnswer(
                status: "failure", orderId: orderID, errors: [PaymentError(code: .unknown, message: message)],
                error: .init(code: code, message: message)))
    }

    private func answer(status: Int, _ value: PaymentAnswer) -> HTTPResponse { .encoding(value, status: status) }
}
