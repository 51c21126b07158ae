import Foundation
import Foundations

/// Why a payment token was refused. `code` is stable (switch on it, log it); `message` says what to check and never
/// contains key bytes, plaintext, the PAN or the cryptogram. Two errors are equal when their codes are equal.
public struct PaymentTokenError: CodedError {
    /// The stable identifier of a kind of failure.
    public struct Code: ErrorCode {
        public typealias Owner = PaymentTokenError
        /// The code as a string, e.g. `"signatureInvalid"`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// The token is not JSON of the expected shape, or a field is not valid base64/hex.
        public static let malformedToken = Code("malformedToken")
        /// `version` is neither EC_v1 nor RSA_v1.
        public static let unsupportedVersion = Code("unsupportedVersion")
        /// `signature` is not a readable CMS SignedData of the form Apple produces.
        public static let malformedSignature = Code("malformedSignature")
        /// The CMS signature or message digest does not verify over the token's fields.
        public static let signatureInvalid = Code("signatureInvalid")
        /// The certificates do not chain to a trusted root, or one is not valid at the signing time.
        public static let untrustedCertificateChain = Code("untrustedCertificateChain")
        /// The leaf or intermediate certificate lacks Apple's marker extension.
        public static let missingAppleExtension = Code("missingAppleExtension")
        /// The signing time is too far from now (a possible replay) or in the future.
        public static let signingTimeOutOfRange = Code("signingTimeOutOfRange")
        /// No configured merchant key matches the token's `publicKeyHash` (or a key does not match its certificate).
        public static let merchantKeyMismatch = Code("merchantKeyMismatch")
        /// The key could not be recovered or the ciphertext does not authenticate.
        public static let decryptionFailed = Code("decryptionFailed")
        /// The decrypted payload is not the JSON Apple documents.
        public static let malformedPayload = Code("malformedPayload")
        /// `applicationData` differs from what the caller expected.
        public static let applicationDataMismatch = Code("applicationDataMismatch")
        /// The amount or currency differs from what the caller expected.
        public static let amountMismatch = Code("amountMismatch")

        /// Every code, for documentation and tests.
        public static let all: [Code] = [
            .malformedToken, .unsupportedVersion, .malformedSignature, .signatureInvalid, .untrustedCertificateChain,
            .missingAppleExtension, .signingTimeOutOfRange, .merchantKeyMismatch, .decryptionFailed, .malformedPayload,
            .applicationDataMismatch, .amountMismatch,
        ]

    }

    /// What kind of failure this is.
    public let code: Code
    /// What went wrong and what to check.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

}
