/// One field of the configuration file that cannot be used: where it is, a stable code, and what to do about it,
/// as `applepay request validate` reports an ApplePay `ValidationProblem`. The file is read whole and every
/// problem reported at once (``ServerStartError/problems``).
public struct ConfigurationProblem: Sendable, Hashable, CustomStringConvertible {
    /// The field's path in the file: `server.port`, `processor.url`, `products[1].price`; empty for the file.
    public var path: String
    /// A stable code: the catalog's `StoreConfigurationError` codes (`invalidAmount`, ...) or one of ``Code``.
    public var code: Code
    /// A sentence naming what to fix.
    public var message: String

    public var description: String { "\(path.isEmpty ? "(file)" : path): \(message) [\(code.rawValue)]" }

    /// The stable codes of problems in the file's `server` and `processor` sections.
    public struct Code: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { rawValue = value }

        /// Not JSON, or a field of the wrong JSON type.
        public static let malformed: Code = "malformed"
        /// A number outside its range.
        public static let outOfRange: Code = "outOfRange"
        /// A URL that does not have the required form.
        public static let invalidURL: Code = "invalidURL"
        /// A store location that is not `sqlite:PATH` or a PostgreSQL URI.
        public static let invalidStore: Code = "invalidStore"
        /// A processor kind the server cannot run, or its settings missing.
        public static let invalidProcessor: Code = "invalidProcessor"
        /// The same setting given twice (a key and its old alias).
        public static let conflict: Code = "conflict"
        /// Not an IP address or network (`server.trustedProxies`).
        public static let invalidAddress: Code = "invalidAddress"
        /// Not one of the setting's documented values.
        public static let invalidChoice: Code = "invalidChoice"
        /// A secret shorter than its minimum (`server.adminToken`).
        public static let tooShort: Code = "tooShort"
    }
}
