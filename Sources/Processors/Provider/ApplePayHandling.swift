import Foundation
import MerchantCore

/// Who decrypts the Apple Pay token: the provider (`passThrough`: the sealed token is forwarded) or we
/// (`decrypted`: the network token, its cryptogram and ECI are sent). Either way the merchant server verified the
/// token first (signature, chain, freshness, amount, currency, application data, replay).
public enum ApplePayHandling: String, Sendable, CaseIterable {
    case passThrough, decrypted
}

extension ChargeRequest {
    /// The sealed token a pass-through connector forwards.
    /// - Throws: `invalidRequest` when the caller did not hand it over (nothing is sent).
    func sealed(for provider: String) throws(ProcessorError) -> SealedApplePayToken {
        guard let sealedToken else {
            throw ProcessorError(.invalidRequest, "\(provider) in passThrough mode needs the sealed Apple Pay token")
        }
        return sealedToken
    }
}

extension NetworkToken {
    /// `applicationExpirationDate` (`YYMMDD`) as month (`MM`) and four-digit year.
    var expiry: (month: String, year: String) {
        let digits = Array(expirationDate)
        guard digits.count >= 4 else { return ("", "") }
        return (String(digits[2..<4]), "20" + String(digits[0..<2]))
    }

    /// The 3-D Secure cryptogram (base64) and ECI, when this is a 3-D Secure token.
    var threeDSecure: (cryptogram: String, eci: String?)? {
        guard case .threeDSecure(let cryptogram, let eci) = authentication else { return nil }
        return (cryptogram.base64EncodedString(), eci)
    }
}
