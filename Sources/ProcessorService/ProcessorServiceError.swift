import Foundations

/// The stable identifier of a kind of ``ProcessorServiceError``.
public struct ProcessorServiceErrorCode: ErrorCode {
    public typealias Owner = ProcessorServiceError
    public let rawValue: String
    private init(_ rawValue: String) { self.rawValue = rawValue }

    /// The ledger file cannot be created, opened or migrated.
    public static let cannotOpenLedger = Self("cannotOpenLedger")
    /// The address does not parse or the port cannot be bound.
    public static let cannotListen = Self("cannotListen")
    /// A fault with a count below 1 or a delay outside 0...3600 s.
    public static let invalidFault = Self("invalidFault")
}

/// Why the processor service did not start. Equality on the code.
public typealias ProcessorServiceError = CodedFailure<ProcessorServiceErrorCode>
