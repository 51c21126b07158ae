import Foundation
import Foundations

/// The domain of ``PaymentTokenError``: its codes are ``ErrorCode`` of it.
public enum PaymentTokenErrorDomain {}

/// Why a payment token was refused. `code` is stable (switch on it, log it); `message` says what to check and never
/// contains key bytes, plaintext, the PAN or the cryptogram. Two errors are equal when their codes are equal.
public typealias PaymentTokenError = CodedFailure<PaymentTokenErrorDomain>

/// The stable codes of ``PaymentTokenError``.
extension ErrorCode<PaymentTokenError> {
    /// The token is not JSON of the expected shape, or a field is not valid base64/hex.
    public static var malformedToken: Self { Self("malformedToken") }
    /// `version` is neither EC_v1 nor RSA_v1.
    public static var unsupportedVersion: Self { Self("unsupportedVersion") }
    /// `signature` is not a readable CMS SignedData of the form Apple produces.
    public static var malformedSignature: Self { Self("malformedSignature") }
    /// The CMS signature or message digest does not verify over the token's fields.
    public static var signatureInvalid: Self { Self("signatureInvalid") }
    /// The certificates do not chain to a trusted root, or one is not valid at the signing time.
    public static var untrustedCertificateChain: Self { Self("untrustedCertificateChain") }
    /// The leaf or intermediate certificate lacks Apple's marker extension.
    public static var missingAppleExtension: Self { Self("missingAppleExtension") }
    /// The signing time is too far from now (a possible replay) or in the future.
    public static var signingTimeOutOfRange: Self { Self("signingTimeOutOfRange") }
    /// No configured merchant key matches the token's `publicKeyHash` (or a key does not match its certificate).
    public static var merchantKeyMismatch: Self { Self("merchantKeyMismatch") }
    /// The key could not be recovered or the ciphertext does not authenticate.
    public static var decryptionFailed: Self { Self("decryptionFailed") }
    /// The decrypted payload is not the JSON Apple documents.
    public static var malformedPayload: Self { Self("malformedPayload") }
    /// `applicationData` differs from what the caller expected.
    public static var applicationDataMismatch: Self { Self("applicationDataMismatch") }
    /// The amount or currency differs from what the caller expected.
    public static var amountMismatch: Self { Self("amountMismatch") }

    /// Every code, for documentation and tests.
    public static var all: [Self] {
        [
            .malformedToken, .unsupportedVersion, .malformedSignature, .signatureInvalid, .untrustedCertificateChain,
            .missingAppleExtension, .signingTimeOutOfRange, .merchantKeyMismatch, .decryptionFailed, .malformedPayload,
            .applicationDataMismatch, .amountMismatch,
        ]
    }
}
