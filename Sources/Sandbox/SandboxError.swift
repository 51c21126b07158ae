import Foundation

/// A failure of the sandbox: a stable `code` to switch on and a message a person can act on.
///
/// Messages never carry a PAN, a cryptogram, a key or a token.
public struct SandboxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable code, for example `sandbox.folder-missing`.
    public let code: String
    /// What went wrong and what to do about it.
    public let message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) [\(code)]" }

    /// Equality on the code only, so that `catch` patterns and tests compare what matters.
    public static func == (lhs: SandboxError, rhs: SandboxError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// Lets `catch SandboxError.folderMissing` match any error with that code.
    public static func ~= (pattern: SandboxError, value: any Error) -> Bool {
        (value as? SandboxError)?.code == pattern.code
    }

    // Codes, as prototypes for `~=` and `#expect(throws:)`.
    public static let folderMissing = SandboxError(
        code: "sandbox.folder-missing", message: "the sandbox folder does not exist")
    public static let alreadyExists = SandboxError(
        code: "sandbox.already-exists", message: "a sandbox already exists there")
    public static let fileMissing = SandboxError(code: "sandbox.file-missing", message: "a sandbox file is missing")
    public static let invalidFile = SandboxError(code: "sandbox.invalid-file", message: "a sandbox file cannot be read")
    public static let writeFailed = SandboxError(code: "sandbox.write-failed", message: "a file could not be written")
    public static let invalidMerchantIdentifier = SandboxError(
        code: "sandbox.invalid-merchant-identifier", message: "the merchant identifier is not valid")
    public static let unknownCurrency = SandboxError(code: "sandbox.unknown-currency", message: "unknown currency")
    public static let invalidAmount = SandboxError(code: "sandbox.invalid-amount", message: "invalid amount")
    public static let amountPrecision = SandboxError(
        code: "sandbox.amount-precision", message: "the amount has more decimals than the currency allows")
    public static let invalidApplicationData = SandboxError(
        code: "sandbox.invalid-application-data", message: "applicationData is not valid base64")
    public static let invalidCard = SandboxError(code: "sandbox.invalid-card", message: "the card is not valid")
    public static let notACertificate = SandboxError(
        code: "sandbox.not-a-certificate", message: "the file is not an X.509 certificate")
    public static let notAPaymentProcessingCertificate = SandboxError(
        code: "sandbox.not-a-payment-processing-certificate",
        message: "the certificate is not a Payment Processing certificate")
    public static let invalidRequest = SandboxError(
        code: "sandbox.invalid-request", message: "the certificate signing request is not valid")
    public static let cryptography = SandboxError(
        code: "sandbox.cryptography", message: "a cryptographic operation failed")
}
