import ApplePay
import Foundation
import Foundations
import HTTPCore
import JSONCoding
import Logging
import MerchantCore
import MerchantWallet
import PaymentToken

/// `POST /v1/checkouts/{id}/payment`: the body is decoded once as ApplePay's `Payment`, ``CheckoutPayments``
/// decides (for the holder of the checkout's client secret, ``CheckoutRoutes/secretHeader``: anyone else gets the
/// 404 of an unknown checkout), and this file maps its result to a status and an Apple Pay JS
/// `ApplePayPaymentAuthorizationResult`.
struct PaymentRoutes: RouteCollection {
    let payments: CheckoutPayments
    let metrics: MerchantMetrics
    let logger: Logger
    /// Where the subscription management links point (the configuration's `publicBaseURL`).
    let publicBaseURL: String
    /// Wallet orders, for the answer's `orderDetails`; nil: off.
    let walletOrders: WalletOrdersService?

    func register(on group: inout RouterGroup) {
        group.add(.post, "/v1/checkouts/{id}/payment") { request, context in try await pay(request, context) }
    }

    /// The answer: Apple Pay JS `ApplePayPaymentAuthorizationResult` fields plus the API's error object.
    struct PaymentAnswer: Encodable {
        struct ErrorObject: Encodable {
            var code: String
            var message: String
        }
        var status: String
        var orderId: String?
        /// The order's view secret: `GET /v1/orders/{orderId}?secret=...` shows the order to its customer.
        var orderSecret: String?
        /// Apple Pay JS `ApplePayPaymentOrderDetails`: where Wallet finds the order (when Wallet orders are on).
        var orderDetails: PaymentOrderDetails?
        var errors: [PaymentError]?
        var error: ErrorObject?
        /// A plan checkout's subscription, its management secret and page.
        var subscriptionId: String?
        var subscriptionSecret: String?
        var managementURL: String?
        /// Whether the token carried a merchant token (MPAN) rather than a device token.
        var merchantToken: Bool?
    }

    func pay(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        // Apple Pay JS's payment: the contacts are decoded; the token goes to the token parser as the bytes it
        // came as (never decoded into a tree and encoded again).
        struct Contacts: Decodable {
            var billingContact: Contact?
            var shippingContact: Contact?

            /// The two contacts read over JSONCoding from the members the scan found, so that the token (most of
            /// the body) is not read a second time; `nil` for a contact of another shape, and the body then goes to
            /// `JSONDecoder`, which reports on it.
            static func reading(_ body: Data, members: [String: Range<Int>]) -> Contacts? {
                var contacts = Contacts(billingContact: nil, shippingContact: nil)
                for (name, field) in [
                    ("billingContact", \Contacts.billingContact), ("shippingContact", \.shippingContact),
                ] {
                    guard let range = members[name] else { continue }
                    let value = body[(body.startIndex + range.lowerBound)..<(body.startIndex + range.upperBound)]
                    guard let read = JSONFieldReader.read(value, readContact) else { return nil }
                    contacts[keyPath: field] = read
                }
                return contacts
            }

            private static func readContact(_ json: inout JSONFieldReader) throws -> Contact? {
                try json.skipNull() ? nil : try json.contact()
            }
        }
        let (contacts, members) = try JSONBody.decodeScanned(Contacts.self, from: request, reading: Contacts.reading)
        guard let tokenRange = members["token"] else { throw .invalidRequest("Missing field token.") }
        guard request.body[request.body.startIndex + tokenRange.lowerBound] == UInt8(ascii: "{") else {
            throw .invalidRequest("Field token should be an object.")
        }
        let token = request.body.subdata(
            in: (request.body.startIndex + tokenRange.lowerBound)..<(request.body.startIndex + tokenRange.upperBound))
        let checkoutID = try context.parameter("id")
        let result = try await storing(logger: logger) { () async throws(OrderStoreError) in
            try await payments.pay(
                checkoutID: checkoutID, clientSecret: request.headers[CheckoutRoutes.secretHeader], tokenJSON: token,
                billingContact: contacts.billingContact, shippingContact: contacts.shippingContact)
        }
        switch result {
        case .refused(let refusal): return try refused(refusal)
        case .processed(let processed): return answer(for: processed, host: request.headers["Host"])
        case .subscribed(let subscription):
            metrics.recordPayment(outcome: "approved")
            var response = answer(
                status: 200, code: nil, outcome: "approved",
                PaymentAnswer(status: "success", subscription: subscription, publicBaseURL: publicBaseURL)
            )
            response.logFields["subscriptionId"] = subscription.id
            return response
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
        case .checkoutExpired:
            return failure(status: 410, code: refusal.code, message: refusal.message, outcome: "refused")
        case .notPayable(let errors):
            return answer(
                status: 400, code: refusal.code, outcome: "refused",
                PaymentAnswer(
                    status: "failure", errors: errors.isEmpty ? nil : errors,
                    error: .init(code: refusal.code, message: refusal.message)))
        case .pricingFailed(let error):
            return HTTPError(error).response
        case .tokenRefused:
            return failure(status: 400, code: refusal.code, message: refusal.message, outcome: "refused")
        case .plansUnavailable:
            return failure(status: 422, code: refusal.code, message: refusal.message, outcome: "refused")
        case .paymentMethodNotKept:
            return failure(status: 502, code: refusal.code, message: refusal.message, outcome: "refused")
        case .processorBusy:
            var response = failure(status: 503, code: refusal.code, message: refusal.message, outcome: "refused")
            response.headers["Retry-After"] = "1"
            return response
        }
    }

    private func answer(for result: PaymentService.Result, host: String?) -> HTTPResponse {
        let order = result.order
        switch result.disposition {
        case .checkoutLocked where order.status.isUnsettled:
            metrics.recordPayment(outcome: "refused")
            return failure(
                status: 409, code: "checkoutPaymentUnconfirmed",
                message: "An earlier payment for this checkout is still being confirmed; it cannot be paid again now.",
                order: order, outcome: "refused")
        case .checkoutLocked:
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
        case .unrecorded:
            return outcomeUnknown(order, replayed: false)
        case .processed, .replayed:
            break
        }
        let replayed = result.disposition == .replayed
        switch order.status {
        case .paid, .refunded, .partiallyRefunded, .voided:
            let outcome = replayed ? "replayed" : "approved"
            metrics.recordPayment(outcome: outcome)
            var body = PaymentAnswer(
                status: "success", orderId: order.id, orderSecret: order.viewSecret,
                orderDetails: walletOrders?.orderDetails(for: order, host: host))
            if let subscription = result.subscription {
                body = PaymentAnswer(
                    status: "success", subscription: subscription, publicBaseURL: publicBaseURL)
                body.orderId = order.id
                body.orderSecret = order.viewSecret
            }
            var response = answer(status: 200, code: nil, outcome: outcome, body)
            response.logFields["orderId"] = order.id
            if let subscription = result.subscription { response.logFields["subscriptionId"] = subscription.id }
            return response
        case .declined:
            let code = order.payment.failureCode ?? "paymentDeclined"
            metrics.recordPayment(outcome: replayed ? "replayed" : "declined")
            return failure(
                status: 402, code: code, message: "The card was declined (\(code)); nothing was charged.", order: order,
                outcome: replayed ? "replayed" : "declined")
        case .unknown, .pending:
            return outcomeUnknown(order, replayed: replayed)
        case .processing:
            return beingConfirmed(order, replayed: replayed)
        }
    }

    /// `202 paymentProcessing`: the provider took the payment and decides later. Not a decline: the customer is told
    /// it is being confirmed, and the order page shows the provider's decision once its webhook or a look-up came.
    private func beingConfirmed(_ order: Order, replayed: Bool) -> HTTPResponse {
        metrics.recordPayment(outcome: replayed ? "replayed" : "processing")
        let message =
            "The payment is being confirmed by the payment provider. Do not pay again: the order page will show "
            + "when it is confirmed."
        var response = answer(
            status: 202, code: "paymentProcessing", outcome: replayed ? "replayed" : "processing",
            PaymentAnswer(
                status: "failure", orderId: order.id, orderSecret: order.viewSecret,
                errors: [PaymentError(code: .unknown, message: message)],
                error: .init(code: "paymentProcessing", message: message)))
        response.logFields["orderId"] = order.id
        return response
    }

    /// `202 paymentOutcomeUnknown`: the processor's answer was not seen (or not recorded). The customer must not
    /// be told that nothing was charged: the order is being confirmed, and `GET /v1/orders/{id}` with the order's
    /// secret shows the final state once the reconciler has settled it.
    private func outcomeUnknown(_ order: Order, replayed: Bool) -> HTTPResponse {
        metrics.recordPayment(outcome: replayed ? "replayed" : "unknown")
        let message =
            "The payment could not be confirmed yet and is being checked with the processor. Do not pay again: "
            + "the order page will show whether it went through."
        var response = answer(
            status: 202, code: "paymentOutcomeUnknown", outcome: replayed ? "replayed" : "unknown",
            PaymentAnswer(
                status: "failure", orderId: order.id, orderSecret: order.viewSecret,
                errors: [PaymentError(code: .unknown, message: message)],
                error: .init(code: "paymentOutcomeUnknown", message: message)))
        response.logFields["orderId"] = order.id
        return response
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
        let body = value.json
        #if DEBUG
            assert(body == (try? SortedJSONEncoder().encode(value)), "PaymentAnswer.json differs from the encoder")
        #endif
        var response = HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: body)
        response.logFields["payment"] = outcome
        if let code { response.logFields["code"] = code }
        return response
    }
}

extension PaymentRoutes.PaymentAnswer {
    /// The answer's JSON without Codable: byte for byte what ``SortedJSONEncoder`` writes (members in the byte
    /// order of their names, `nil` ones left out), which a debug build checks on every answer.
    var json: Data {
        var out = JSONTextWriter(capacity: 512)
        out.openObject()
        if let error {
            out.key("error")
            out.openObject()
            out.member("code", error.code)
            out.member("message", error.message)
            out.closeObject()
        }
        if let errors {
            out.key("errors")
            out.byte(UInt8(ascii: "["))
            for (index, error) in errors.enumerated() {
                if index > 0 { out.byte(UInt8(ascii: ",")) }
                out.openObject()
                out.member("code", error.code.rawValue)
                out.member("contactField", error.contactField?.rawValue)
                out.member("message", error.message)
                out.closeObject()
            }
            out.byte(UInt8(ascii: "]"))
        }
        out.member("managementURL", managementURL)
        out.member("merchantToken", merchantToken)
        if let orderDetails {
            out.key("orderDetails")
            out.openObject()
            out.member("authenticationToken", orderDetails.authenticationToken)
            out.member("orderIdentifier", orderDetails.orderIdentifier)
            out.member("orderTypeIdentifier", orderDetails.orderTypeIdentifier)
            out.member("webServiceURL", orderDetails.webServiceURL)
            out.closeObject()
        }
        out.member("orderId", orderId)
        out.member("orderSecret", orderSecret)
        out.member("status", status)
        out.member("subscriptionId", subscriptionId)
        out.member("subscriptionSecret", subscriptionSecret)
        out.closeObject()
        return Data(out.bytes)
    }

    /// The success answer of a plan checkout.
    init(status: String, subscription: Subscription, publicBaseURL: String) {
        self.init(
            status: status, subscriptionId: subscription.id, subscriptionSecret: subscription.secret,
            managementURL: "\(publicBaseURL)/v1/subscriptions/\(subscription.id)/manage?secret=\(subscription.secret)",
            merchantToken: subscription.merchantTokenIdentifier != nil)
    }
}
