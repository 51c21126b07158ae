import Foundation
import Foundations

/// A failure of the sandbox: a stable `code` to switch on and a message a person can act on.
///
/// Messages never carry a PAN, a cryptogram, a key or a token. Two errors are equal when their codes are equal.
public struct SandboxError: CodedError {
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

/// The stable codes of ``SandboxError``.
extension ErrorCode<SandboxError> {
    /// The sandbox folder does not exist.
    public static var folderMissing: Self { Self("folderMissing") }
    /// A sandbox (or something else) already exists where one would be created.
    public static var alreadyExists: Self { Self("alreadyExists") }
    /// A file of the sandbox is missing.
    public static var fileMissing: Self { Self("fileMissing") }
    /// A file of the sandbox cannot be read or used.
    public static var invalidFile: Self { Self("invalidFile") }
    /// A file could not be written.
    public static var writeFailed: Self { Self("writeFailed") }
    /// The merchant identifier is not valid.
    public static var invalidMerchantIdentifier: Self { Self("invalidMerchantIdentifier") }
    /// The currency code is not an ISO 4217 code.
    public static var unknownCurrency: Self { Self("unknownCurrency") }
    /// The amount is negative, too large or not a number.
    public static var invalidAmount: Self { Self("invalidAmount") }
    /// The amount has more decimals than the currency allows.
    public static var amountPrecision: Self { Self("amountPrecision") }
    /// `applicationData` is not valid base64.
    public static var invalidApplicationData: Self { Self("invalidApplicationData") }
    /// The card's number or expiration date is not valid (``SandboxError/field`` says which).
    public static var invalidCard: Self { Self("invalidCard") }
    /// The file is not an X.509 certificate.
    public static var notACertificate: Self { Self("notACertificate") }
    /// The certificate is not a Payment Processing certificate.
    public static var notAPaymentProcessingCertificate: Self { Self("notAPaymentProcessingCertificate") }
    /// The certificate signing request is not valid.
    public static var invalidRequest: Self { Self("invalidRequest") }
    /// A cryptographic operation failed.
    public static var cryptography: Self { Self("cryptography") }
}
