/// An error that is a stable code, a message and, where one is at fault, the field: the one home of that shape
/// (a configuration's or a scenario's path, `products[1].price`, or a parameter's name). A module declares its
/// codes (an ``ErrorCode`` whose `Owner` is `FieldFailure` of them) and names its error with a type alias, as for
/// ``CodedFailure``.
public struct FieldFailure<Code: ErrorCode>: CodedError {
    public let code: Code
    public let message: String
    /// The bad field, when there is one; `nil` when the input as a whole is at fault.
    public let field: String?

    public init(_ code: Code, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    /// `code at field: message`, or `code: message` without a field.
    public var description: String {
        field.map { "\(code) at \($0): \(message)" } ?? "\(code): \(message)"
    }
}
