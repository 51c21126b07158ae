import Foundation
import Foundations

/// A failure of the sandbox: a stable `code` to switch on and a message a person can act on.
///
/// Messages never carry a PAN, a cryptogram, a key or a token. Two errors are equal when their codes are equal.
public struct SandboxError: CodedError {
    /// The stable identifier of a kind of failure.
    public struct Code: ErrorCode {
        public typealias Owner = SandboxError
        /// The code as a string, e.g. `"folderMissing"`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// The sandbox folder does not exist.
        public static let folderMissing = Code("folderMissing")
        /// A sandbox (or something else) already exists where one would be created.
        public static let alreadyExists = Code("alreadyExists")
        /// A file of the sandbox is missing.
        public static let fileMissing = Code("fileMissing")
        /// A file of the sandbox cannot be read or used.
        public static let invalidFile = Code("invalidFile")
        /// A file could not be written.
        public static let writeFailed = Code("writeFailed")
        /// The merchant identifier is not valid.
        public static let invalidMerchantIdentifier = Code("invalidMerchantIdentifier")
        /// The currency code is not an ISO 4217 code.
        public static let unknownCurrency = Code("unknownCurrency")
        /// The amount is negative, too large or not a number.
        public static let invalidAmount = Code("invalidAmount")
        /// The amount has more decimals than the currency allows.
        public static let amountPrecision = Code("amountPrecision")
        /// `applicationData` is not valid base64.
        public static let invalidApplicationData = Code("invalidApplicationData")
        /// The card's number or expiration date is not valid (``SandboxError/field`` says which).
        public static let invalidCard = Code("invalidCard")
        /// The file is not an X.509 certificate.
        public static let notACertificate = Code("notACertificate")
        /// The certificate is not a Payment Processing certificate.
        public static let notAPaymentProcessingCertificate = Code("notAPaymentProcessingCertificate")
        /// The certificate signing request is not valid.
        public static let invalidRequest = Code("invalidRequest")
        /// A cryptographic operation failed.
        public static let cryptography = Code("cryptography")

    }

    /// What kind of failure this is.
    public let code: Code
    /// What went wrong and what to do about it. Never contains a PAN, key or token.
    public let message: String
    /// The input field at fault, when there is one (`devicePAN`, `expirationDate`).
    public let field: String?
    /// The file or folder at fault, when there is one.
    public let path: String?

    /// Creates an error with a code, a message, and where known the failing field or file.
    public init(_ code: Code, _ message: String, field: String? = nil, path: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.path = path
    }

}
