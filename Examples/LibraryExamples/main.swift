// Runs every example of docs/LIBRARY.md end to end against a sandbox in a temporary folder: one line per check
// ("ok" or "FAIL"), exit status 1 when any check fails. Prints no PAN, cryptogram, key or token.
import ApplePay
import Foundation
import Foundations
import PaymentToken
import Sandbox
import Synchronization

/// Counts and prints the checks.
struct Checks {
    private(set) var failures = 0

    /// Runs one check: `body` returns nil when it passed, or what went wrong.
    mutating func check(_ name: String, _ body: () throws -> String?) {
        let failure: String?
        do {
            failure = try body()
        } catch {
            failure = "unexpected error: \(error)"
        }
        if let failure {
            failures += 1
            print("FAIL \(name): \(failure)")
        } else {
            print("ok   \(name)")
        }
    }

    /// A check that `body` is refused with exactly `code`.
    mutating func refused(_ name: String, _ code: PaymentTokenError.Code, _ body: () throws -> Any) {
        check(name) {
            do {
                _ = try body()
                return "accepted, expected \(code)"
            } catch let error as PaymentTokenError {
                let answer = refusal(for: error)
                let expectedBody = #"{"error":{"code":"\#(code)"}}"#
                guard error.code == code else { return "refused with \(error.code), expected \(code)" }
                guard answer.status == 400, answer.body == Data(expectedBody.utf8) else {
                    return "the refusal is \(answer.status) \(String(decoding: answer.body, as: UTF8.self))"
                }
                return nil
            }
        }
    }
}

/// The body with `header.transactionId` changed in its last hex digit: still well formed, no longer Apple's.
func tampered(_ body: Data) throws -> Data {
    guard var payment = try JSONSerialization.jsonObject(with: body) as? [String: Any],
        var token = payment["token"] as? [String: Any], var paymentData = token["paymentData"] as? [String: Any],
        var header = paymentData["header"] as? [String: Any], let transactionId = header["transactionId"] as? String
    else { throw CocoaError(.coderReadCorrupt) }
    header["transactionId"] = transactionId.dropLast() + (transactionId.hasSuffix("0") ? "1" : "0")
    paymentData["header"] = header
    token["paymentData"] = paymentData
    payment["token"] = token
    return try JSONSerialization.data(withJSONObject: payment)
}

/// The token object inside an `ApplePayPayment` body, as JSON.
func tokenJSON(of body: Data) throws -> Data {
    guard let payment = try JSONSerialization.jsonObject(with: body) as? [String: Any], let token = payment["token"]
    else { throw CocoaError(.coderReadCorrupt) }
    return try JSONSerialization.data(withJSONObject: token)
}

var checks = Checks()
let usd = Currency.usDollar
let order = Order(id: "order-1001", total: Money(minorUnits: 3569, currency: usd))

// 1. Payment requests.
checks.check("request: the order's request validates and encodes with total 35.69") {
    let json = try paymentRequestJSON(for: makePaymentRequest(for: order))
    let decoded = try JSONDecoder().decode(PaymentRequest.self, from: json)
    return decoded.total.amount == "35.69" && decoded.applicationData == order.applicationData
        ? nil : "the encoded request has total \(decoded.total.amount ?? "none")"
}
checks.check(
    "request: a broken request is refused with amount.tooManyDecimals, networks.empty, capabilities.missing3DS"
) {
    var request = makePaymentRequest(for: order)
    request.total.amount = "35.699"
    request.supportedNetworks = []
    request.merchantCapabilities = [.supportsCredit]
    do {
        _ = try paymentRequestJSON(for: request)
        return "the request was accepted"
    } catch let error as InvalidPaymentRequest {
        let codes = Set(error.problems.map(\.code))
        let expected: Set<ValidationProblem.Code> = [.amountTooManyDecimals, .networksEmpty, .capabilityMissing3DS]
        return codes == expected ? nil : "codes \(codes.map(\.rawValue).sorted())"
    }
}
checks.check("request JSON: a number for total.amount is json.wrongType at total.amount") {
    let json =
        #"{"countryCode":"US","currencyCode":"USD","supportedNetworks":["visa"],"#
        + #""merchantCapabilities":["supports3DS"],"total":{"label":"Example Shop","amount":35.69}}"#
    let problems = problemsInRequestDocument(Data(json.utf8))
    return problems.map { "\($0.code)@\($0.path)" } == ["json.wrongType@total.amount"]
        ? nil : "problems \(problems)"
}
checks.check("request JSON: bytes that are not JSON are notJSON") {
    let problems = problemsInRequestDocument(Data("{\"countryCode\": ".utf8))
    return problems.map(\.code.rawValue) == ["notJSON"] ? nil : "problems \(problems)"
}

// 2. to 4. Tokens, from a sandbox in a temporary folder.
let sandbox = try makeTestSandbox()
let handler = try makeTestHandler(sandbox)

checks.check("payment: an EC_v1 token for 35.69 USD is decrypted (Visa …0492)") {
    let receipt = try handler.handlePayment(body: try paymentBody(for: order, sandbox: sandbox), order: order)
    return receipt.amount == "35.69 USD" && receipt.network == "Visa" && receipt.lastFour == "0492"
        && receipt.transactionId.count == 64 && receipt.paymentDataType == "3DSecure"
        ? nil : "receipt \(receipt)"
}
checks.check("payment: an RSA_v1 token for 35.69 USD is decrypted") {
    let body = try paymentBody(for: order, sandbox: sandbox, version: .rsaV1)
    let receipt = try handler.handlePayment(body: body, order: order)
    return receipt.amount == "35.69 USD" && receipt.lastFour == "0492" ? nil : "receipt \(receipt)"
}
checks.refused("payment: a token for 30.00 USD is refused with amountMismatch", .amountMismatch) {
    let body = try paymentBody(for: order, sandbox: sandbox, amount: Money(minorUnits: 3000, currency: usd))
    return try handler.handlePayment(body: body, order: order)
}
checks.refused(
    "payment: a token made for another order is refused with applicationDataMismatch", .applicationDataMismatch
) {
    let other = Order(id: "order-1002", total: order.total)
    return try handler.handlePayment(body: try paymentBody(for: other, sandbox: sandbox), order: order)
}
checks.refused("payment: a tampered token is refused with signatureInvalid", .signatureInvalid) {
    try handler.handlePayment(body: try tampered(try paymentBody(for: order, sandbox: sandbox)), order: order)
}
checks.refused("payment: a token signed 10 minutes ago is refused with signingTimeOutOfRange", .signingTimeOutOfRange) {
    let body = try paymentBody(for: order, sandbox: sandbox, signingTime: Date().addingTimeInterval(-600))
    return try handler.handlePayment(body: body, order: order)
}
checks.refused("payment: a body without a token is refused with malformedToken", .malformedToken) {
    try handler.handlePayment(body: Data(#"{"billingContact":{}}"#.utf8), order: order)
}
checks.check("payment: one shared handler decrypts 8 payments at once") {
    let bodies = try (0..<8).map { _ in try paymentBody(for: order, sandbox: sandbox) }
    let results = Mutex([Bool](repeating: false, count: bodies.count))
    DispatchQueue.concurrentPerform(iterations: bodies.count) { index in
        let receipt = try? handler.handlePayment(body: bodies[index], order: order)
        results.withLock { $0[index] = receipt?.amount == "35.69 USD" }
    }
    let decrypted = results.withLock { $0.filter { $0 }.count }
    return decrypted == bodies.count ? nil : "\(decrypted) of \(bodies.count) decrypted"
}
checks.check("verify only: a token's signature checks without the merchant key") {
    let body = try paymentBody(for: order, sandbox: sandbox)
    let info = try checkSignature(tokenJSON: try tokenJSON(of: body), verifier: handler.decryptor.verifier)
    return info.transactionId.count == 64 && abs(info.signingTime.timeIntervalSinceNow) < 60
        ? nil : "transaction id of \(info.transactionId.count) characters, signed at \(info.signingTime)"
}
checks.refused("verify only: a tampered token is refused with signatureInvalid", .signatureInvalid) {
    let body = try tampered(try paymentBody(for: order, sandbox: sandbox))
    return try checkSignature(tokenJSON: try tokenJSON(of: body), verifier: handler.decryptor.verifier)
}

try? FileManager.default.removeItem(at: sandbox.folder)
print(checks.failures == 0 ? "all checks passed" : "\(checks.failures) checks failed")
exit(checks.failures == 0 ? 0 : 1)
