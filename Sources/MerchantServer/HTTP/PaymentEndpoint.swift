import ApplePay
import Foundation
import HTTPServer
import PaymentToken

/// `POST /v1/checkouts/{id}/payment`: the body is decoded once as ApplePay's `Payment`, ``CheckoutPayments``
/// decides, and this file maps its result to a status and an Apple Pay JS `ApplePayPaymentAuthorizationResult`.
extension Endpoints {
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

    func pay(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        let payment = try JSONBody.decode(Payment.self, from: request)
        guard case .object = payment.token else { throw .invalidRequest("Field token should be an object.") }
        let checkoutID = context.parameters["id"] ?? ""
        let result = try await storing { () async throws(OrderStoreError) in
            try await payments.pay(checkoutID: checkoutID, payment: payment)
        }
        switch result {
        case .refused(let refusal): return try refused(refusal)
        case .processed(let processed): return answer(for: processed)
        }
    }

    /// A refusal before anything was written. An unknown checkout and a token that is not shaped like Apple's
    /// are errors in the request (not counted as payments); the rest are refused payments.
    private func refused(_ refusal: PaymentRefusal) throws(HTTPError) -> HTTPResponse {
        switch refusal {
        case .checkoutNotFound(let id):
            throw .checkoutNotFound(id)
        case .tokenRefused(let error, _) where error.code == .malformedToken:
            throw .invalidRequest("The token is not an Apple Pay token: \(error.message).")
        default:
            break
        }
        metrics.recordPayment(outcome: "refused")
        switch refusal {
        case .checkoutNotFound(let id):
            throw .checkoutNotFound(id)
        case .notPayable(let errors):
            return answer(
                status: 400, code: refusal.code, outcome: "refused",
                PaymentAnswer(
                    status: "failure", errors: errors.isEmpty ? nil : errors,
                    error: .init(code: refusal.code, message: refusal.message)))
        case .pricingFailed(let error):
            return Self.httpError(error).response
        case .tokenRefused:
            return failure(status: 400, code: refusal.code, message: refusal.message, outcome: "refused")
        }
    }

    private func answer(for result: PaymentService.Result) -> HTTPResponse {
        let order = result.order
        switch result.disposition {
        case .checkoutAlreadyPaid:
            metrics.recordPayment(outcome: "refused")
            return failure(
                status: 409, code: "checkoutAlreadyPaid", message: "This checkout was already paid with another token.",
                order: order, outcome: "refused")
        case .inProgress:
            metrics.recordPayment(outcome: "inProgress")
            return failure(
                status: 409, code: "paymentInProgress",
                message: "A payment with this token is still being processed; ask again shortly.", order: order,
                outcome: "inProgress")
        case .processed, .replayed:
            break
        }
        let replayed = result.disposition == .replayed
        switch order.status {
        case .paid:
            let outcome = replayed ? "replayed" : "approved"
            metrics.recordPayment(outcome: outcome)
            var response = answer(
                status: 200, code: nil, outcome: outcome, PaymentAnswer(status: "success", orderId: order.id))
            response.logFields["orderId"] = order.id
            return response
        case .failed:
            let code = order.payment.failureCode ?? "paymentFailed"
            let declined = order.payment.status == .declined
            let outcome = replayed ? "replayed" : declined ? "declined" : "error"
            metrics.recordPayment(outcome: outcome)
            let status = declined ? 402 : code == ProcessorError.Code.timeout.rawValue ? 504 : 502
            let message =
                declined
                ? "The card was declined (\(code)); nothing was charged."
                : "The payment processor failed (\(code)); nothing was charged."
            return failure(status: status, code: code, message: message, order: order, outcome: outcome)
        case .pending:
            metrics.recordPayment(outcome: "inProgress")
            return failure(
                status: 409, code: "paymentInProgress", message: "The payment is still being processed.",
                order: order, outcome: "inProgress")
        }
    }

    private func failure(status: Int, code: String, message: String, order: Order? = nil, outcome: String)
        -> HTTPResponse
    {
        var response = answer(
            status: status, code: code, outcome: outcome,
            PaymentAnswer(
                status: "failure", orderId: order?.id, errors: [PaymentError(code: .unknown, message: message)],
                error: .init(code: code, message: message)))
        if let order { response.logFields["orderId"] = order.id }
        return response
    }

    private func answer(status: Int, code: String?, outcome: String, _ value: PaymentAnswer) -> HTTPResponse {
        var response = HTTPResponse.encoding(value, status: status)
        response.logFields["payment"] = outcome
        if let code { response.logFields["code"] = code }
        return response
    }
}
