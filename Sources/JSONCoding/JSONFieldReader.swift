import Foundation

/// Reads a document of one known shape value by value over ``JSONReader``, with no `Decoder` and no tree: for the
/// few bodies and columns a hot path reads, each read by a small function that says which members it wants. Anything
/// but the expected shape (a missing value, another type, a number with a fraction where an integer is expected, a
/// member twice, names with escapes) throws ``Mismatch``; callers then fall back to `JSONDecoder`, so that the result
/// (or the error) stays what it was. Members it was not asked for are skipped, as `JSONDecoder` skips them.
public struct JSONFieldReader {
    /// The document is not the expected shape, or not JSON.
    public struct Mismatch: Error, Sendable {
        public init() {}
    }

    private var reader: JSONReader

    /// A reader at the start of `bytes`, within `limits` (by default: UTF-8 checked, 16 levels deep at most).
    public init(_ bytes: UnsafeRawBufferPointer, limits: JSONLimits = JSONLimits(maximumDepth: 16)) throws {
        do {
            reader = try JSONReader(bytes, limits: limits)
        } catch {
            throw Mismatch()
        }
    }

    /// `body`'s value for the whole document, or `nil` when it throws or the document goes on after the value.
    public static func read<T>(
        _ bytes: UnsafeRawBufferPointer, limits: JSONLimits = JSONLimits(maximumDepth: 16),
        _ body: (inout JSONFieldReader) throws -> T
    ) -> T? {
        do {
            var json = try JSONFieldReader(bytes, limits: limits)
            let value = try body(&json)
            try json.finish()
            return value
        } catch {
            return nil
        }
    }

    /// `read(_:_:)` over a string's UTF-8.
    public static func read<T>(_ text: String, _ body: (inout JSONFieldReader) throws -> T) -> T? {
        var text = text
        return text.withUTF8 { read(UnsafeRawBufferPointer($0), body) }
    }

    /// `read(_:_:)` over data's bytes.
    public static func read<T>(_ data: Data, _ body: (inout JSONFieldReader) throws -> T) -> T? {
        data.withUnsafeBytes { read($0, body) }
    }

    private mutating func value() throws -> JSONToken {
        do {
            return try reader.readValue()
        } catch {
            throw Mismatch()
        }
    }

    /// Nothing but whitespace left.
    public mutating func finish() throws {
        do { try reader.finish() } catch { throw Mismatch() }
    }

    /// An object: for each member named in `keys`, `body` reads its value, given the name's index in `keys` (at
    /// most 64 keys); other members are skipped; a name given twice, or one with escapes, is a mismatch.
    public mutating func object(keys: [StaticString], _ body: (Int, inout JSONFieldReader) throws -> Void)
        throws
    {
        guard keys.count <= 64, case .object(var object) = try value() else { throw Mismatch() }
        var seen: UInt64 = 0
        while let name = try nextName(&object) {
            guard !name.hasEscapes else { throw Mismatch() }
            let text = reader.bytes(in: name.range)
            guard let index = keys.firstIndex(where: { Self.equal($0, text) }) else {
                do { try reader.skipValue() } catch { throw Mismatch() }
                continue
            }
            guard seen & (1 << UInt64(index)) == 0 else { throw Mismatch() }
            seen |= 1 << UInt64(index)
            try body(index, &self)
        }
    }

    /// An array: `body` reads each element.
    public mutating func array(_ body: (inout JSONFieldReader) throws -> Void) throws {
        guard case .array(var array) = try value() else { throw Mismatch() }
        while true {
            let more: Bool
            do {
                more = try reader.nextElement(&array)
            } catch {
                throw Mismatch()
            }
            guard more else { return }
            try body(&self)
        }
    }

    /// A string.
    public mutating func string() throws -> String {
        guard case .string(let string) = try value() else { throw Mismatch() }
        return reader.text(string)
    }

    /// A string, or `nil` for `null`.
    public mutating func optionalString() throws -> String? {
        switch try value() {
        case .string(let string): return reader.text(string)
        case .null: return nil
        default: throw Mismatch()
        }
    }

    /// `true` or `false`, or `nil` for `null`.
    public mutating func optionalBool() throws -> Bool? {
        switch try value() {
        case .bool(let value): return value
        case .null: return nil
        default: throw Mismatch()
        }
    }

    /// A string's text, or a number's text as written; `nil` for `null`, `true` or `false`.
    public mutating func scalarText() throws -> (text: String, isNumber: Bool)? {
        switch try value() {
        case .string(let string): return (reader.text(string), false)
        case .number(let range): return (String(decoding: reader.bytes(in: range), as: UTF8.self), true)
        case .null, .bool: return nil
        case .object, .array: throw Mismatch()
        }
    }

    /// `null`, and nothing else.
    public mutating func null() throws {
        guard case .null = try value() else { throw Mismatch() }
    }

    /// Reads a `null` and answers true; answers false, having read nothing, for any other value.
    public mutating func skipNull() throws -> Bool {
        let saved = reader
        if case .null = try value() { return true }
        reader = saved
        return false
    }

    /// A whole number written without fraction or exponent, within `Int64`.
    public mutating func integer() throws -> Int64 {
        guard case .number(let range) = try value() else { throw Mismatch() }
        let digits = reader.bytes(in: range)
        let negative = digits.first == UInt8(ascii: "-")
        var index = negative ? 1 : 0
        guard index < digits.count else { throw Mismatch() }
        var magnitude: Int64 = 0
        while index < digits.count {
            let digit = digits[index]
            guard digit >= 0x30, digit <= 0x39 else { throw Mismatch() }
            let (times, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(Int64(digit - 0x30))
            guard !overflow, !carry else { throw Mismatch() }
            magnitude = sum
            index += 1
        }
        return negative ? -magnitude : magnitude
    }

    /// A number, as `Double(_:)` reads its text.
    public mutating func double() throws -> Double {
        guard case .number(let range) = try value(),
            let number = Double(String(decoding: reader.bytes(in: range), as: UTF8.self))
        else { throw Mismatch() }
        return number
    }

    /// An object of strings.
    public mutating func stringMap() throws -> [String: String] {
        guard case .object(var object) = try value() else { throw Mismatch() }
        var map: [String: String] = [:]
        while let name = try nextName(&object) {
            let key = reader.text(name)
            guard map[key] == nil else { throw Mismatch() }
            map[key] = try string()
        }
        return map
    }

    /// The object's next member name, nil after its last member.
    private mutating func nextName(_ object: inout JSONObjectCursor) throws -> JSONString? {
        do {
            return try reader.nextMember(&object)
        } catch {
            throw Mismatch()
        }
    }

    private static func equal(_ key: StaticString, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard key.utf8CodeUnitCount == bytes.count else { return false }
        guard let base = bytes.baseAddress else { return bytes.isEmpty }
        return memcmp(key.utf8Start, base, bytes.count) == 0
    }
}

/// JSON text written member by member into one byte buffer, with ``SortedJSONEncoder``'s string escapes: for the
/// few values a hot path writes, in the key order the caller gives (sorted, to match ``SortedJSONEncoder``).
public struct JSONTextWriter {
    /// The text so far.
    public private(set) var bytes: [UInt8] = []
    /// Whether the next member is the first of its object.
    private var first = true

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    /// The text as a string.
    public var string: String { String(decoding: bytes, as: UTF8.self) }

    /// A structural byte: `[`, `]` or `,` between array elements.
    public mutating func byte(_ byte: UInt8) { bytes.append(byte) }

    public mutating func openObject() {
        bytes.append(UInt8(ascii: "{"))
        first = true
    }

    public mutating func closeObject() {
        bytes.append(UInt8(ascii: "}"))
        first = false
    }

    /// A string value.
    public mutating func string(_ text: String) { SortedJSONEncoder.appendString(text, to: &bytes) }

    /// A member's name (and the comma before it when it is not the first): its value comes next.
    public mutating func key(_ name: String) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        SortedJSONEncoder.appendString(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    /// A string member; nothing for `nil`.
    public mutating func member(_ name: String, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
    }

    /// An integer member.
    public mutating func member(_ name: String, _ value: Int64) {
        key(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    /// A boolean member; nothing for `nil`.
    public mutating func member(_ name: String, _ value: Bool?) {
        guard let value else { return }
        key(name)
        bytes.append(contentsOf: value ? Array("true".utf8) : Array("false".utf8))
    }
}
