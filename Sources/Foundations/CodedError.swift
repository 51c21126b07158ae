/// An error with a stable ``code`` a caller can switch on and a ``message`` a person can act on. Two errors are
/// equal when their codes are; the description is `code: message`. Every module's error type conforms, so the
/// boilerplate lives here once.
public protocol CodedError: Error, Sendable, Equatable, CustomStringConvertible {
    associatedtype Code: ErrorCode
    /// What kind of failure this is.
    var code: Code { get }
    /// What went wrong and what to check. Never contains secret bytes.
    var message: String { get }
}

extension CodedError {
    public var description: String { "\(code): \(message)" }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
}

/// The stable identifier of a kind of failure: a string callers and clients may rely on.
public protocol ErrorCode: Hashable, Sendable, CustomStringConvertible {
    /// The error type whose codes these are.
    associatedtype Owner: CodedError where Owner.Code == Self
    /// The code as a string, e.g. `"invalidKey"`.
    var rawValue: String { get }
}

extension ErrorCode {
    public var description: String { rawValue }

    /// Lets a code match any error in a `catch` or `switch`: `catch CryptographyError.Code.invalidKey`.
    public static func ~= (pattern: Self, error: any Error) -> Bool { (error as? Owner)?.code == pattern }
}
