/// An error that is a stable code and a message, nothing more: the one home of that shape. A module names its error
/// with a type alias over an empty domain type and lists its codes:
///
/// ```swift
/// public enum OrderStoreErrorDomain {}
/// public typealias OrderStoreError = CodedFailure<OrderStoreErrorDomain>
///
/// extension ErrorCode<OrderStoreError> {
///     public static var notFound: Self { Self("notFound") }
/// }
/// ```
///
/// Its codes read `OrderStoreError.Code.notFound`, it is thrown as `OrderStoreError(.notFound, "…")` and caught
/// by `catch OrderStoreError.Code.notFound`, like every ``CodedError``. An error that carries more (a path, a
/// reference) declares its own struct.
public struct CodedFailure<Domain>: CodedError {
    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
