import ApplePay
import Cryptography
import Foundation
import Foundations
import MerchantCore
import PaymentToken

/// Opens tokens with the PaymentToken module: signature, Apple's marker extensions, the chain to the trusted root
/// at the signing time, freshness (5 minutes), the merchant key by `publicKeyHash`, then decryption.
package struct DecryptingTokenOpener: PaymentTokenOpening {
    package let decryptor: PaymentTokenDecryptor
    /// The same keys and roots with no limit on the token's age: only to recognise a late retry of a payment.
    package var lenient: PaymentTokenDecryptor? = nil

    package init(decryptor: PaymentTokenDecryptor, lenient: PaymentTokenDecryptor? = nil) {
        self.decryptor = decryptor
        self.lenient = lenient
    }

    package func transactionIDIgnoringAge(_ token: Data, expecting expectations: PaymentTokenExpectations) -> String? {
        guard let lenient, let parsed = try? PaymentToken(jsonData: token) else { return nil }
        return (try? lenient.decrypt(parsed, expecting: expectations))?.verification.transactionId
    }

    package func open(_ token: Data, expecting expectations: PaymentTokenExpectations) throws(PaymentTokenError)
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
