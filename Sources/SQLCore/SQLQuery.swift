/// A statement and its bound values, written as one string interpolation so that each value stands where its
/// placeholder does (binds never drift from their places):
/// ```swift
/// let query: SQLQuery = "SELECT state_json FROM checkouts WHERE id = \(bind: id)"
/// ```
/// `\(bind:)` adds a placeholder and its value; `\(raw:)` adds trusted SQL text (a column list, a dialect's
/// `FOR UPDATE`, a fixed list of enum values: never input); `\(query)` adds another query with its values.
///
/// The text keeps `?` at each placeholder, which is SQLite's form as it is; ``sql(for:)`` renders PostgreSQL's
/// `$1, $2, ...`. So a literal part must not hold a `?` of its own.
public struct SQLQuery: Sendable, Hashable, ExpressibleByStringInterpolation {
    /// The SQL with `?` at each placeholder.
    public private(set) var text: String
    /// The values, in placeholder order.
    public private(set) var binds: [SQLValue]
    /// The UTF-8 offset of each placeholder's `?` in ``text``.
    private var placeholders: [Int]

    /// A query of trusted SQL text and no values.
    public init(stringLiteral value: String) {
        text = value
        binds = []
        placeholders = []
    }

    public init(stringInterpolation: StringInterpolation) {
        text = String(decoding: stringInterpolation.utf8, as: UTF8.self)
        binds = stringInterpolation.binds
        placeholders = stringInterpolation.placeholders
    }

    /// Trusted SQL text with no values (built from constants, never from input).
    public init(raw text: String) { self.init(stringLiteral: text) }

    /// The statement in `dialect`'s placeholder form.
    public func sql(for dialect: SQLDialect) -> String {
        guard dialect.placeholderStyle == .dollarNumbered, !placeholders.isEmpty else { return text }
        var rendered = ""
        rendered.reserveCapacity(text.utf8.count + placeholders.count * 2)
        let utf8 = text.utf8
        var start = utf8.startIndex
        for (index, offset) in placeholders.enumerated() {
            let mark = utf8.index(utf8.startIndex, offsetBy: offset)
            rendered += Substring(utf8[start..<mark])
            rendered += "$\(index + 1)"
            start = utf8.index(after: mark)
        }
        rendered += Substring(utf8[start...])
        return rendered
    }

    /// Appends another query (its text and values) to this one.
    public mutating func append(_ other: SQLQuery) {
        let shift = text.utf8.count
        text += other.text
        binds += other.binds
        placeholders += other.placeholders.map { $0 + shift }
    }

    /// Builds the query piece by piece as Swift reads the interpolation, into bytes that become the text once at the
    /// end: a payment builds some thirty queries of a few hundred bytes, and appending each piece to a `String`
    /// took about 2 % of its instructions.
    public struct StringInterpolation: StringInterpolationProtocol {
        var utf8: [UInt8] = []
        var binds: [SQLValue] = []
        var placeholders: [Int] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            utf8.reserveCapacity(literalCapacity + interpolationCount * 2)
            binds.reserveCapacity(interpolationCount)
            placeholders.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) { append(literal) }

        /// A placeholder bound to `value`.
        public mutating func appendInterpolation(bind value: some SQLBindable) {
            placeholders.append(utf8.count)
            utf8.append(UInt8(ascii: "?"))
            binds.append(value.sqlValue)
        }

        /// A placeholder bound to `value`, NULL for `nil`.
        public mutating func appendInterpolation<Value: SQLBindable>(bind value: Value?) {
            appendInterpolation(bind: value.sqlValue)
        }

        /// Trusted SQL text: identifiers, fixed fragments, a dialect's clauses. Never a value from input.
        public mutating func appendInterpolation(raw sql: String) { append(sql) }

        /// Another query, its values following this one's.
        public mutating func appendInterpolation(_ query: SQLQuery) {
            let shift = utf8.count
            append(query.text)
            binds += query.binds
            placeholders += query.placeholders.map { $0 + shift }
        }

        private mutating func append(_ text: String) {
            let copied: Void? = text.utf8.withContiguousStorageIfAvailable { utf8.append(contentsOf: $0) }
            if copied == nil { utf8.append(contentsOf: text.utf8) }
        }
    }
}

extension SQLQuery: CustomStringConvertible {
    /// The SQL text and the kinds of its values (never the values: they may be personal data).
    public var description: String { "\(text) [\(binds.map(\.description).joined(separator: ", "))]" }
}
