/// An error with a stable ``code`` a caller can switch on and a ``message`` a person can act on. Two errors are
/// equal when their codes are; the description is `code: message`. Every module's error type conforms, so the
/// boilerplate lives here once.
public protocol CodedError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The error's codes: `CryptographyError.Code.invalidKey`.
    typealias Code = ErrorCode<Self>

    /// What kind of failure this is.
    var code: ErrorCode<Self> { get }
    /// What went wrong and what to check. Never contains secret bytes.
    var message: String { get }
}

extension CodedError {
    public var description: String { "\(code): \(message)" }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
}

/// The stable identifier of a kind of `Owner` failure: a string callers and clients may rely on. A module lists its
/// codes once, in an extension of the owner's codes:
///
/// ```swift
/// extension ErrorCode<CryptographyError> {
///     /// A key could not be parsed, generated, or is of an unsupported kind.
///     public static var invalidKey: Self { Self("invalidKey") }
/// }
/// ```
public struct ErrorCode<Owner: CodedError>: Hashable, Sendable, CustomStringConvertible {
    /// The code as a string, e.g. `"invalidKey"`.
    public let rawValue: String

    /// A code of `Owner`; the module that declares `Owner` names its codes.
    package init(_ rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    /// Lets a code match any error in a `catch` or `switch`: `catch CryptographyError.Code.invalidKey`.
    public static func ~= (pattern: Self, error: any Error) -> Bool { (error as? Owner)?.code == pattern }
}
