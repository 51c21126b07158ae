import Cryptography
import Foundation
import Foundations

/// One provider's webhook check as an endpoint runs it: the provider, its secret (from a file readable by its
/// owner alone) and, for Stripe, the timestamp tolerance.
public struct WebhookEndpoint: Sendable {
    public let provider: WebhookProvider
    public let secret: WebhookSecret
    /// Stripe's timestamp tolerance in seconds (``StripeSignature/defaultTolerance``).
    public let tolerance: TimeInterval

    public init(
        provider: WebhookProvider, secret: WebhookSecret, tolerance: TimeInterval = StripeSignature.defaultTolerance
    ) {
        self.provider = provider
        self.secret = secret
        self.tolerance = tolerance
    }

    /// The header that carries the signature (`nil` for Adyen, whose items carry theirs).
    public var signatureHeader: String? {
        switch provider {
        case .stripe: "Stripe-Signature"
        case .checkout: "Cko-Signature"
        case .adyen: nil
        }
    }

    /// Checks a delivery: its raw body and the value of ``signatureHeader``.
    public func verify(body: Data, signatureHeader header: String?, now: Date) -> WebhookVerdict {
        switch provider {
        case .stripe:
            StripeSignature.verify(payload: body, header: header, secret: secret, now: now, tolerance: tolerance)
        case .adyen: AdyenSignature.verify(notification: body, key: secret)
        case .checkout: CheckoutSignature.verify(body: body, header: header, secret: secret)
        }
    }

    /// Reads the provider's secret from `path` with `KeyFile`'s checks (no symbolic link; a regular file of this
    /// user's, not open to group or others).
    /// - Throws: `KeyFile.Failure` naming the file (`unreadable` when it holds no secret of the provider's form);
    ///   never the secret.
    public static func readSecret(_ provider: WebhookProvider, path: String) throws(KeyFile.Failure) -> WebhookSecret {
        let what = provider == .adyen ? "the Adyen webhook HMAC key" : "the \(provider.rawValue) webhook secret"
        let data = try KeyFile.read(path, description: what)
        guard let secret = WebhookSecret(provider, fileContents: data) else {
            throw KeyFile.Failure(
                .unreadable, "\(what) \(path) is empty\(provider == .adyen ? " or not hex" : "")")
        }
        return secret
    }
}
