import ApplePay
import Foundation

/// One line of a session's transcript: an Apple Pay JS event name (`validatemerchant`, `paymentmethodselected`,
/// `shippingcontactselected`, `shippingmethodselected`, `couponcodechanged`, `paymentauthorized`, `cancel`),
/// the sheet's own notes (`authorizationblocked`, `actionrefused`) or the final `finished`, with what the sheet
/// asked and what the merchant answered.
///
/// A transcript never holds a card number, a cryptogram or a whole token: cards appear by display name and last
/// four digits, tokens by transaction identifier.
public struct TranscriptEntry: Sendable, Hashable {
    public var event: String
    /// Every other member of the line.
    public var fields: [String: JSONValue] = [:]

    /// The entry as one line of JSON, `event` first, the other members in key order.
    public var jsonLine: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let event = (try? encoder.encode(self.event)).map { String(decoding: $0, as: UTF8.self) } ?? "\"?\""
        var line = "{\"event\":\(event)"
        if !fields.isEmpty, let data = try? encoder.encode(fields) {
            let rest = String(decoding: data, as: UTF8.self)
            line += "," + rest.dropFirst().dropLast()
        }
        return line + "}"
    }
}

/// Receives transcript lines as they happen.
public typealias TranscriptSink = @Sendable (TranscriptEntry) -> Void

extension JSONValue {
    /// Any `Encodable` as a `JSONValue` (nil when it cannot be encoded).
    static func encoding(_ value: some Encodable) -> JSONValue? {
        guard let data = try? JSONEncoder().encode(value) else { return nil }
        return try? JSONValue(parsing: data)
    }

    /// The object without its null members (shorter transcript lines).
    var withoutNulls: JSONValue {
        switch self {
        case .object(let members):
            return .object(members.filter { $0.value != .null }.mapValues { $0.withoutNulls })
        case .array(let elements): return .array(elements.map { $0.withoutNulls })
        default: return self
        }
    }
}

/// How the transcript writes the merchant's answers: the update dictionaries as JSON, the authorization status by
/// name.
enum TranscriptFormat {
    static func value(_ encodable: some Encodable) -> JSONValue {
        (JSONValue.encoding(encodable) ?? .null).withoutNulls
    }

    static func errors(_ errors: [PaymentError]) -> JSONValue { value(errors) }

    static func result(_ result: PaymentAuthorizationResult, orderID: String? = nil) -> JSONValue {
        var members: [String: JSONValue] = ["status": .string(result.status.description)]
        if let orderID { members["orderId"] = .string(orderID) }
        if let errors = result.errors, !errors.isEmpty { members["errors"] = value(errors) }
        if let details = result.orderDetails {
            members["orderDetails"] = .object([
                "orderTypeIdentifier": .string(details.orderTypeIdentifier),
                "orderIdentifier": .string(details.orderIdentifier),
            ])
        }
        return .object(members)
    }

    static func total(_ item: PaymentSummaryItem) -> JSONValue { value(item) }
}
