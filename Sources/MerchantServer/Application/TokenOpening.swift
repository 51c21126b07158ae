import Cryptography
import Foundation
import Foundations
import MerchantCore
import MerchantIntegrations
import PaymentToken

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
        return DecryptingTokenOpener(decryptor: decryptor)
    } catch {
        throw ServerStartError(
            .keyMismatch, "the Payment Processing certificates cannot decrypt tokens: \(error.message)")
    }
}
