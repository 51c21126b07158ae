import Cryptography
import Foundation
import Foundations
import PaymentToken

/// What a payment needs from a token once it is verified, decrypted and checked against the checkout.
public struct OpenedPaymentToken: Sendable {
    /// The header's `transactionId` (hex): the idempotency key.
    public var transactionID: String
    /// The decrypted network token for the processor.
    public var networkToken: NetworkToken
    /// SHA-256 (lowercase hex) of the root certificate the token's signature chained to.
    public var rootFingerprint: String

    /// What a payment keeps of a decrypted token: its transaction id, the network token (the PAN or merchant token,
    /// its expiry, cryptogram or EMV data, and the merchant token's card details) and the root it chained to.
    /// - Parameters:
    ///   - decrypted: the verified, decrypted token.
    ///   - network: the token's `paymentMethod.network` (`Visa`, ...), outside the encrypted payload.
    public init(_ decrypted: DecryptedPaymentToken, network: String?) {
        let payload = decrypted.payload
        let authentication: NetworkToken.Authentication
        switch payload.credentials {
        case .threeDSecure(let cryptogram, let eci):
            authentication = .threeDSecure(cryptogram: Data(base64Encoded: cryptogram) ?? Data(), eciIndicator: eci)
        case .emv(let emvData, let pin):
            authentication = .emv(data: Data(base64Encoded: emvData) ?? Data(), encryptedPINData: pin)
        }
        transactionID = decrypted.verification.transactionId
        networkToken = NetworkToken(
            primaryAccountNumber: payload.applicationPrimaryAccountNumber,
            expirationDate: payload.applicationExpirationDate, authentication: authentication, network: network,
            merchantToken: payload.merchantTokenIdentifier.map {
                MerchantTokenInfo(identifier: $0, metadata: payload.merchantTokenMetadata)
            })
        rootFingerprint = lowercaseHex(decrypted.verification.root.sha256Fingerprint)
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
