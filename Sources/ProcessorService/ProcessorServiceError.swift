import Foundations

/// The stable codes of ``ProcessorServiceError``.
extension ErrorCode<ProcessorServiceError> {
    /// The ledger file cannot be created, opened or migrated.
    public static var cannotOpenLedger: Self { Self("cannotOpenLedger") }
    /// The address does not parse or the port cannot be bound.
    public static var cannotListen: Self { Self("cannotListen") }
    /// A fault with a count below 1 or a delay outside 0...3600 s.
    public static var invalidFault: Self { Self("invalidFault") }
}

/// The domain of ``ProcessorServiceError``: its codes are ``ErrorCode`` of it.
public enum ProcessorServiceErrorDomain {}

/// Why the processor service did not start. Equality on the code.
public typealias ProcessorServiceError = CodedFailure<ProcessorServiceErrorDomain>
