/// An error that is a stable code, a message and the failing field, nothing more: ``CodedFailure`` with the path of
/// the field at fault (a configuration's or a scenario's path, `products[1].price`, or a parameter's name), or `nil`
/// when no one field is. A module names its error with a type alias over an empty domain type and lists its codes
/// in an extension of ``ErrorCode`` of it:
///
/// ```swift
/// public enum StoreConfigurationErrorDomain {}
/// public typealias StoreConfigurationError = FieldFailure<StoreConfigurationErrorDomain>
/// ```
///
/// It is thrown as `StoreConfigurationError(.invalidAmount, "…", field: "products[1].price")`.
public struct FieldFailure<Domain>: CodedError {
    public let code: Code
    public let message: String
    /// The failing field's path; `nil` when the input as a whole is at fault.
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
