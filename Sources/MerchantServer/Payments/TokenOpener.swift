import ApplePay
import Cryptography
import Foundation
import PaymentToken

/// Opens tokens with the PaymentToken module: signature, Apple's marker extensions, the chain to the trusted root
/// at the signing time, freshness (5 minutes), the merchant key by `publicKeyHash`, then decryption.
struct DecryptingTokenOpener: PaymentTokenOpening {
    let decryptor: PaymentTokenDecryptor
    /// The same keys and roots with no limit on the token's age: only to recognise a late retry of a payment.
    var lenient: PaymentTokenDecryptor? = nil

    func transactionIDIgnoringAge(_ token: Data, expecting expectations: PaymentTokenExpectations) -> String? {
        guard let lenient, let parsed = try? PaymentToken(jsonData: token) else { return nil }
        return (try? lenient.decrypt(parsed, expecting: expectations))?.verification.transactionId
    }

    func open(_ token: Data, expecting expectations: PaymentTokenExpectations) throws(PaymentTokenError)
        -> OpenedPaymentToken
    {
        let parsed = try PaymentToken(jsonData: token)
        let decrypted = try decryptor.decrypt(parsed, expecting: expectations)
        let payload = decrypted.payload
        let authentication: NetworkToken.Authentication
        switch payload.credentials {
        case .threeDSecure(let cryptogram, let eci):
            authentication = .threeDSecure(cryptogram: Data(base64Encoded: cryptogram) ?? Data(), eciIndicator: eci)
        case .emv(let emvData, let pin):
            authentication = .emv(data: Data(base64Encoded: emvData) ?? Data(), encryptedPINData: pin)
        }
        return OpenedPaymentToken(
            transactionID: decrypted.verification.transactionId,
            networkToken: NetworkToken(
                primaryAccountNumber: payload.applicationPrimaryAccountNumber,
                expirationDate: payload.applicationExpirationDate, authentication: authentication,
                network: parsed.paymentMethod?.network,
                merchantToken: payload.merchantTokenIdentifier.map {
                    MerchantTokenInfo(identifier: $0, metadata: payload.merchantTokenMetadata)
                }),
            rootFingerprint: lowercaseHex(decrypted.verification.root.sha256Fingerprint))
    }
}

/// The token opener for the configured Payment Processing credentials and trusted root (`nil`: Apple Root CA - G3).
func makeTokenOpener(
    credentials: [MerchantCredential], trustedRoot: Certificate?, clock: @escaping @Sendable () -> Date
) throws(ServerStartError) -> any PaymentTokenOpening {
    do {
        let identities = try credentials.map { credential throws(PaymentTokenError) in
            try MerchantIdentity(certificate: credential.certificate, privateKey: credential.privateKey)
        }
        let decryptor = try PaymentTokenDecryptor(
            merchants: identities, roots: trustedRoot.map { [$0] }, maximumAge: 300, now: clock)
        let lenient = try PaymentTokenDecryptor(
            merchants: identities, roots: trustedRoot.map { [$0] }, maximumAge: .infinity, now: clock)
        return DecryptingTokenOpener(decryptor: decryptor, lenient: lenient)
    } catch {
        throw ServerStartError(
            .keyMismatch, "the Payment Processing certificates cannot decrypt tokens: \(error.message)")
    }
}
