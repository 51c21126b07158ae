import Foundation
import JSONCoding

// The bodies a payment sends and reads on every charge, written and read without Codable: the same bytes as
// `JSONEncoder` with sorted keys and unescaped slashes, and the answer read over JSONCoding's reader (a caller falls
// back to `JSONDecoder` for an answer of another shape).

extension CreateChargeBody {
    /// The body's JSON, byte for byte what `JSONEncoder` writes with `[.sortedKeys, .withoutEscapingSlashes]`.
    public var jsonData: Data {
        var out = JSONTextWriter(capacity: 512)
        out.openObject()
        out.member("amount", amount)
        out.member("currencyCode", currencyCode)
        out.member("idempotencyKey", idempotencyKey)
        out.key("paymentMethod")
        out.openObject()
        out.member("cryptogram", paymentMethod.cryptogram)
        out.member("eciIndicator", paymentMethod.eciIndicator)
        out.member("emvData", paymentMethod.emvData)
        out.member("encryptedPINData", paymentMethod.encryptedPINData)
        out.member("expirationDate", paymentMethod.expirationDate)
        out.member("network", paymentMethod.network)
        out.member("primaryAccountNumber", paymentMethod.primaryAccountNumber)
        out.closeObject()
        out.member("rootFingerprint", rootFingerprint)
        out.member("storePaymentMethod", storePaymentMethod)
        out.closeObject()
        return Data(out.bytes)
    }
}

extension ChargeEnvelope {
    /// Reads `{"charge": {...}}` as the service writes it; `nil` for any other shape (decode it with `JSONDecoder`,
    /// which gives the same envelope or says what is wrong).
    public init?(wireJSON data: Data) {
        guard
            let charge = JSONFieldReader.read(
                data,
                { json throws -> ChargeResource in
                    var charge: ChargeResource?
                    try json.object(keys: ["charge"]) { _, json in charge = try json.chargeResource() }
                    guard let charge else { throw JSONFieldReader.Mismatch() }
                    return charge
                })
        else { return nil }
        self.init(charge: charge)
    }
}

extension JSONFieldReader {
    /// A ``ChargeResource`` object.
    mutating func chargeResource() throws -> ChargeResource {
        var reference: String?
        var idempotencyKey: String?
        var amount: Int64?
        var currencyCode: String?
        var status: ChargeStatus?
        var refundedAmount: Int64?
        var declineCode: String?
        var network: String?
        var lastFour: String?
        var createdAt: String?
        var paymentMethodReference: String?
        let keys: [StaticString] = [
            "amount", "createdAt", "currencyCode", "declineCode", "idempotencyKey", "lastFour", "network",
            "paymentMethodReference", "reference", "refundedAmount", "status",
        ]
        try object(keys: keys) { key, json in
            switch key {
            case 0: amount = try json.integer()
            case 1: createdAt = try json.string()
            case 2: currencyCode = try json.string()
            case 3: declineCode = try json.optionalString()
            case 4: idempotencyKey = try json.string()
            case 5: lastFour = try json.optionalString()
            case 6: network = try json.optionalString()
            case 7: paymentMethodReference = try json.optionalString()
            case 8: reference = try json.string()
            case 9: refundedAmount = try json.integer()
            default:
                guard let known = ChargeStatus(rawValue: try json.string()) else { throw Mismatch() }
                status = known
            }
        }
        guard let reference, let idempotencyKey, let amount, let currencyCode, let status, let refundedAmount,
            let createdAt
        else { throw Mismatch() }
        return ChargeResource(
            reference: reference, idempotencyKey: idempotencyKey, amount: amount, currencyCode: currencyCode,
            status: status, refundedAmount: refundedAmount, declineCode: declineCode, network: network,
            lastFour: lastFour, createdAt: createdAt, paymentMethodReference: paymentMethodReference)
    }
}
