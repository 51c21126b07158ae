import ApplePay
import Cryptography
import Foundation
import Foundations
import MerchantCore
import PaymentToken

/// Opens tokens with the PaymentToken module: signature, Apple's marker extensions, the chain to the trusted root
/// at the signing time, freshness (the decryptor's maximum age), the merchant key by `publicKeyHash`, then
/// decryption.
package struct DecryptingTokenOpener: PaymentTokenOpening {
    package let decryptor: PaymentTokenDecryptor

    package init(decryptor: PaymentTokenDecryptor) {
        self.decryptor = decryptor
    }

    package func verify(_ token: Data, applicationData: PaymentTokenExpectations.ApplicationData)
        throws(PaymentTokenError) -> VerifiedToken?
    {
        let parsed = try PaymentToken(jsonData: token)
        let verified = try decryptor.verifyIgnoringAge(parsed, applicationData: applicationData)
        let decryptor = decryptor
        return VerifiedToken(transactionID: verified.verification.transactionId) {
            expectations throws(PaymentTokenError) in
            OpenedPaymentToken(
                try decryptor.decrypt(verified, expecting: expectations), network: parsed.paymentMethod?.network)
        }
    }

    package func open(_ token: Data, expecting expectations: PaymentTokenExpectations) throws(PaymentTokenError)
        -> OpenedPaymentToken
    {
        let parsed = try PaymentToken(jsonData: token)
        return OpenedPaymentToken(
            try decryptor.decrypt(parsed, expecting: expectations), network: parsed.paymentMethod?.network)
    }
}
