import ApplePay
import Foundation

/// The Apple Pay token as the device sealed it, for a processor that decrypts it itself (pass-through): the
/// `paymentData` object as JSON, and the `paymentMethod` and `transactionIdentifier` beside it.
///
/// Only ever built from a token that the merchant server verified and decrypted first (signature, chain, freshness,
/// amount, currency, application data, replay). Secret material: ``description`` names the network only, and
/// nothing here is `Codable`, so it cannot reach a log line or the database by accident.
public struct SealedApplePayToken: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The token's `paymentData` object (`version`, `data`, `signature`, `header`) as JSON text.
    public let paymentDataJSON: String
    /// `paymentData.version` (`EC_v1`, `RSA_v1`).
    public let version: String
    /// `paymentData.data`, `signature` and the `header` members, as the device gave them.
    public let data: String
    public let signature: String
    public let header: [String: String]
    /// `paymentMethod.displayName` (such as `Visa 0224`), `network` and `type`.
    public let displayName: String?
    public let network: String?
    public let type: String?
    /// The token's `transactionIdentifier` (hex).
    public let transactionIdentifier: String?

    /// Reads a whole token object (`paymentData`, `paymentMethod`, `transactionIdentifier`); `nil` when it has no
    /// `paymentData` object (or a bare one) with string `version`, `data`, `signature` and a `header` of strings.
    public init?(tokenJSON: Data) {
        guard let object = (try? JSONSerialization.jsonObject(with: tokenJSON)) as? [String: Any],
            // A bare paymentData is read too, as PaymentToken reads it.
            let paymentData = object["paymentData"] as? [String: Any] ?? (object["header"] != nil ? object : nil),
            let version = paymentData["version"] as? String, let data = paymentData["data"] as? String,
            let signature = paymentData["signature"] as? String,
            let header = paymentData["header"] as? [String: String],
            let json = try? JSONSerialization.data(
                withJSONObject: paymentData, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return nil }
        self.paymentDataJSON = String(decoding: json, as: UTF8.self)
        self.version = version
        self.data = data
        self.signature = signature
        self.header = header
        let method = object["paymentMethod"] as? [String: Any]
        displayName = method?["displayName"] as? String
        network = method?["network"] as? String
        type = method?["type"] as? String
        transactionIdentifier = object["transactionIdentifier"] as? String
    }

    public var description: String { "SealedApplePayToken(\(version), \(network ?? "unknown network"))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["version": version, "network": network as Any]) }
}

/// How a processor settles a charge whose answer was lost (``PaymentProcessor/unknownOutcomes``).
public enum UnknownOutcomeResolution: Sendable, Equatable {
    /// Looked up (or the same request sent again with the same idempotency key, which answers the first outcome)
    /// by ``PaymentProcessor/charge(lookingUp:)``, for as long as the processor keeps a key (`nil`: forever).
    case lookUp(keyLifetime: Duration?)
    /// The processor has no look-up: its webhook settles the payment. Past `keyLifetime` nobody can tell.
    case webhook(keyLifetime: Duration)

    /// How long the processor keeps an idempotency key, when it forgets them.
    public var keyLifetime: Duration? {
        switch self {
        case .lookUp(let lifetime): lifetime
        case .webhook(let lifetime): lifetime
        }
    }
}

/// What the reconciler knows of a payment whose outcome it looks up.
public struct ChargeLookup: Sendable, Equatable {
    /// The payment's idempotency key (the token's `transactionId`).
    public var idempotencyKey: String
    /// The amount that was charged.
    public var amount: Money
    /// The processor's id for it, when the connector recorded one before the answer was lost.
    public var processorReference: String?
    /// Whether the charge was sent to keep its payment method (``ChargeRequest/storePaymentMethod``: a plan's first
    /// payment): a connector that sends its first request again to learn the payment's id sends it as it was.
    public var keepsPaymentMethod: Bool

    public init(
        idempotencyKey: String, amount: Money, processorReference: String? = nil, keepsPaymentMethod: Bool = false
    ) {
        self.idempotencyKey = idempotencyKey
        self.amount = amount
        self.processorReference = processorReference
        self.keepsPaymentMethod = keepsPaymentMethod
    }
}
