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

/// A token whose signature, chain, merchant key and application data are checked, but not yet its age, nor
/// anything that needs decrypting it: what a payment looks up to recognise a retry before it spends a decryption.
public struct VerifiedToken: Sendable {
    /// The header's `transactionId` (hex): the idempotency key. Apple's signature binds it because the application
    /// data, which the opener checked, is known to be present.
    public let transactionID: String
    private let opening: @Sendable (PaymentTokenExpectations) throws(PaymentTokenError) -> OpenedPaymentToken

    /// - Parameters:
    ///   - transactionID: the verified header's `transactionId` (hex).
    ///   - opening: checks the age, decrypts and checks the expectations (amount, currency).
    public init(
        transactionID: String,
        opening: @escaping @Sendable (PaymentTokenExpectations) throws(PaymentTokenError) -> OpenedPaymentToken
    ) {
        self.transactionID = transactionID
        self.opening = opening
    }

    /// Checks the token's age, decrypts it and checks it against the expectations.
    /// - Throws: `PaymentTokenError` with a stable code (never token material in its message).
    public func open(expecting expectations: PaymentTokenExpectations) throws(PaymentTokenError) -> OpenedPaymentToken {
        try opening(expectations)
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

    /// The token verified but not decrypted, whatever its age, or `nil` when the opener cannot verify apart from
    /// opening (the payment then calls ``open(_:expecting:)``). A payment looks its transaction id up: a retry of a
    /// payment already recorded gets its first answer, even once the token is too old to be charged; any other
    /// token is opened with ``VerifiedToken/open(expecting:)``, which checks its age, so that it is verified once.
    /// - Parameters:
    ///   - token: the token object's JSON bytes.
    ///   - applicationData: the application data the token must carry.
    /// - Throws: `PaymentTokenError` when a check fails.
    func verify(_ token: Data, applicationData: PaymentTokenExpectations.ApplicationData)
        throws(PaymentTokenError) -> VerifiedToken?
}

extension PaymentTokenOpening {
    public func verify(_ token: Data, applicationData: PaymentTokenExpectations.ApplicationData)
        throws(PaymentTokenError) -> VerifiedToken?
    {
        nil
    }
}
