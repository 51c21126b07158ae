import Foundation
import PaymentToken

/// What a payment needs from a token once it is verified, decrypted and checked against the checkout.
public struct OpenedPaymentToken: Sendable {
    /// The header's `transactionId` (hex): the idempotency key.
    public var transactionID: String
    /// The decrypted network token for the processor.
    public var networkToken: NetworkToken
    /// SHA-256 (lowercase hex) of the root certificate the token's signature chained to.
    public var rootFingerprint: String

    public init(transactionID: String, networkToken: NetworkToken, rootFingerprint: String) {
        self.transactionID = transactionID
        self.networkToken = networkToken
        self.rootFingerprint = rootFingerprint
    }
}

/// Verifies and decrypts an Apple Pay token (`ApplePayPaymentToken` JSON: `paymentData`, `paymentMethod`,
/// `transactionIdentifier`) and checks it against what the merchant expects (amount, currency, application
/// data). Keys are loaded once by the implementation; this is called for every payment.
public protocol PaymentTokenOpening: Sendable {
    /// The opened token.
    /// - Parameters:
    ///   - token: the token object's JSON bytes.
    ///   - expectations: the amount, currency and application data the token must carry.
    /// - Throws: `PaymentTokenError` with a stable code (never token material in its message).
    func open(_ token: Data, expecting expectations: PaymentTokenExpectations) throws(PaymentTokenError)
        -> OpenedPaymentToken

    /// The transaction id of a token that passes every check but its freshness (signature, chain, merchant key,
    /// decryption, expectations), or `nil` when it fails another one or the opener cannot tell. Used only to answer
    /// a late retry of a payment that was already charged with its first answer: a stale token is never charged.
    func transactionIDIgnoringAge(_ token: Data, expecting expectations: PaymentTokenExpectations) -> String?
}

extension PaymentTokenOpening {
    public func transactionIDIgnoringAge(_ token: Data, expecting expectations: PaymentTokenExpectations) -> String? {
        nil
    }
}
