import Foundation

/// What the payment endpoint needs from a token once it is verified and decrypted.
public struct OpenedPaymentToken: Sendable {
    /// The header's `transactionId` (hex): the idempotency key.
    public var transactionID: String
    /// The header's `applicationData` (SHA-256 of the request's application data), decoded from hex; `nil` when
    /// the token has none.
    public var applicationDataHash: Data?
    /// `transactionAmount`, minor units.
    public var amount: Int64
    /// `currencyCode`: ISO 4217 numeric, as a string (`"840"`).
    public var currencyNumericCode: String
    /// The decrypted network token for the processor.
    public var networkToken: NetworkToken

    public init(
        transactionID: String, applicationDataHash: Data?, amount: Int64, currencyNumericCode: String,
        networkToken: NetworkToken
    ) {
        self.transactionID = transactionID
        self.applicationDataHash = applicationDataHash
        self.amount = amount
        self.currencyNumericCode = currencyNumericCode
        self.networkToken = networkToken
    }
}

/// Why a token was refused (bad signature, untrusted chain, too old, not for this merchant, undecryptable...).
/// `code` is stable; `message` never contains token material.
public struct PaymentTokenRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public var description: String { "\(code): \(message)" }
}

/// Verifies and decrypts an Apple Pay token (`ApplePayPaymentToken` JSON: `paymentData`, `paymentMethod`,
/// `transactionIdentifier`). Keys are loaded once by the implementation; this is called for every payment.
public protocol PaymentTokenOpening: Sendable {
    /// The opened token, or why it is refused.
    /// - Parameter token: the token object's JSON bytes.
    func open(_ token: Data) -> Result<OpenedPaymentToken, PaymentTokenRefusal>
}
