/// An error that is a stable code and a message, nothing more: the one home of that shape. A module declares its
/// codes (an ``ErrorCode`` whose `Owner` is `CodedFailure` of them) and names its error with a type alias:
///
/// ```swift
/// public typealias OrderStoreError = CodedFailure<OrderStoreErrorCode>
/// ```
///
/// Its codes read `OrderStoreError.Code.notFound`, it is thrown as `OrderStoreError(.notFound, "…")` and caught
/// by `catch OrderStoreError.Code.notFound`, like every ``CodedError``. An error that carries more (a path, a
/// reference) declares its own struct.
public struct CodedFailure<Code: ErrorCode>: CodedError {
    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
