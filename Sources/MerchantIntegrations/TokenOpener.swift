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
        return OpenedPaymentToken(
            try decryptor.decrypt(parsed, expecting: expectations), network: parsed.paymentMethod?.network)
    }
}
