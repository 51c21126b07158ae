// Example 1 of docs/LIBRARY.md: build an Apple Pay JS payment request, validate it, and check request JSON that
// came from elsewhere (a CMS, another service, a file).
import ApplePay
import Foundation
import Foundations

// [request]
/// An order as the merchant's own store keeps it: what the payment request asks for and what the token must carry.
struct Order: Sendable {
    var id: String
    var total: Money

    /// The request's `applicationData` (base64, as Apple Pay JS sends it): here the order id, so that a token made
    /// for one order cannot pay for another. Apple puts its SHA-256 in the token's header.
    var applicationData: String { Data(id.utf8).base64EncodedString() }
}

/// The `ApplePayPaymentRequest` for an order, ready to be sent to the page as JSON (`JSONEncoder().encode(request)`).
func makePaymentRequest(for order: Order) -> PaymentRequest {
    var request = PaymentRequest(
        countryCode: "US", currencyCode: order.total.currency.code,
        supportedNetworks: [.visa, .masterCard, .amex, .discover], merchantCapabilities: [.supports3DS],
        total: PaymentSummaryItem(label: "Example Shop", amount: order.total.amountString))
    request.requiredShippingContactFields = [.postalAddress, .name]
    request.applicationData = order.applicationData
    return request
}

/// A request this server built and Apple's rules refuse: the server's own bug, so log it and show no sheet.
struct InvalidPaymentRequest: Error, CustomStringConvertible {
    var problems: [ValidationProblem]
    var description: String { problems.map(\.description).joined(separator: "; ") }
}

/// The JSON for `new ApplePaySession(version, request)`, what a `GET /orders/{id}/apple-pay-request` route returns.
/// - Throws: `InvalidPaymentRequest` with every error at once; warnings alone do not stop the request.
func paymentRequestJSON(for request: PaymentRequest) throws -> Data {
    let problems = request.validate()
    guard problems.isValid else { throw InvalidPaymentRequest(problems: problems.errors) }
    return try JSONEncoder().encode(request)
}
// [/request]

// [request-json]
/// The problems in a request document from elsewhere: its JSON shape first (a number where Apple wants a string,
/// a missing `total`), then Apple's rules. Bytes that are not JSON at all give one `notJSON` problem here.
func problemsInRequestDocument(_ json: Data) -> [ValidationProblem] {
    do {
        return try PaymentRequest.problems(decodingJSON: json)
    } catch {
        return [
            ValidationProblem(
                path: "", code: .init(rawValue: error.code.rawValue), severity: .error,
                message: error.message)
        ]
    }
}
// [/request-json]
