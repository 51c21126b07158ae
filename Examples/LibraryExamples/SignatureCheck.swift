// Example 3 of docs/LIBRARY.md: check a token's signature without the merchant key, e.g. in a gateway that
// forwards tokens to a processor which decrypts them.
import Foundation
import PaymentToken

// [verify]
/// What a forwarding service learns from a token it cannot decrypt.
struct SignedTokenInfo: Sendable {
    var transactionId: String
    var signingTime: Date
}

/// Checks that a token (bare `paymentData` or a whole PKPaymentToken) is Apple's and recent: Apple's marker
/// extensions, the chain to the root at the signing time, the CMS signature, the signing time within the window.
/// Nothing is decrypted, so the amount, currency and card are not checked: whoever decrypts must still do that.
/// - Throws: `PaymentTokenError` with the code of the first check that failed.
func checkSignature(tokenJSON: Data, verifier: PaymentTokenVerifier) throws(PaymentTokenError) -> SignedTokenInfo {
    let verification = try verifier.verify(jsonData: tokenJSON)
    return SignedTokenInfo(transactionId: verification.transactionId, signingTime: verification.signingTime)
}
// [/verify]
