import ApplePay
import Foundation

/// A small, strict JSON reader for tokens and payloads: no Foundation bridging, bounded depth, never traps.
/// Numbers keep their text so that integers are read exactly.
enum TokenJSON: Sendable {
    case null
    case bool(Bool)
    case number(String)
    /// A string's UTF-8 bytes, unescaped; a slice of the document when it had no escapes (no copy). Converted to
    /// a `String` only when asked, so that large base64 fields are decoded straight from the document's bytes.
    case string(ArraySlice<UInt8>)
    case array([TokenJSON])
    case object(JSONObject)

    struct ParseError: Error {
        let message: String
    }

    static let maximumDepth = 32
    /// The most members an object may have (tokens have a handful; this bounds the duplicate-key check).
    static let maximumMembers = 512

    /// An object's members in document order; looked up by a 64-bit fingerprint of the key and a linear scan,
    /// which beats hashing into a dictionary for the handful of members tokens and payloads have. One array of
    /// members (one allocation per object).
    struct JSONObject: Sendable {
        struct Member: Sendable {
            let key: ArraySlice<UInt8>
            let value: TokenJSON
            let fingerprint: UInt64
        }
        private(set) var storage: [Member] = []

        var count: Int { storage.count }
        var members: [(ArraySlice<UInt8>, TokenJSON)] { storage.map { ($0.key, $0.value) } }

        /// FNV-1a over the key's bytes.
        static func fingerprint(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            return hash
        }

        func index(of key: UnsafeBufferPointer<UInt8>, fingerprint: UInt64) -> Int? {
            var index = 0
            while index < storage.count {
                if storage[index].fingerprint == fingerprint,
                    storage[index].key.withUnsafeBufferPointer({ $0.elementsEqual(key) })
                {
                    return index
                }
                index += 1
            }
            return nil
        }

        /// Adds a member; false when the key is already present.
        mutating func append(key: ArraySlice<UInt8>, value: TokenJSON) -> Bool {
            let found = key.withUnsafeBufferPointer { bytes -> (Int?, UInt64) in
                let fingerprint = JSONObject.fingerprint(bytes)
                return (index(of: bytes, fingerprint: fingerprint), fingerprint)
            }
            guard found.0 == nil else { return false }
            if storage.isEmpty { storage.reserveCapacity(8) }
            storage.append(Member(key: key, value: value, fingerprint: found.1))
            return true
        }

        subscript(key: StaticString) -> TokenJSON? {
            key.withUTF8Buffer { wanted in
                index(of: wanted, fingerprint: JSONObject.fingerprint(wanted)).map { storage[$0].value }
            }
        }

        subscript(key: String) -> TokenJSON? {
            var key = key
            return key.withUTF8 { wanted in
                index(of: wanted, fingerprint: JSONObject.fingerprint(wanted)).map { storage[$0].value }
            }
        }
    }

    var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// Parses a whole document.
    static func parse(_ bytes: [UInt8]) throws(ParseError) -> TokenJSON {
        var parser = Parser(bytes: bytes)
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == bytes.count else { throw ParseError(message: "trailing characters after the JSON value") }
        return value
    }

    subscript(key: String) -> TokenJSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    subscript(key: StaticString) -> TokenJSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The string value (nil when not a string or not valid UTF-8).
    var string: String? {
        if case .string(let bytes) = self { return bytes.withUnsafeBufferPointer(TokenJSON.validatedString) }
        return nil
    }

    /// The bytes as a `String`, nil when they are not valid UTF-8 (`String(validating:as:)`, with a direct path
    /// for ASCII, which is what tokens and payloads hold).
    static func validatedString(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        if bytes.allSatisfy({ $0 < 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The string value's UTF-8 bytes.
    var stringBytes: ArraySlice<UInt8>? {
        if case .string(let bytes) = self { return bytes }
        return nil
    }

    var object: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The value as ApplePay's `JSONValue` (numbers become `Decimal`).
    var jsonValue: JSONValue {
        switch self {
        case .null: .null
        case .bool(let value): .bool(value)
        case .number(let text): .number(Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) ?? 0)
        case .string(let bytes): .string(String(decoding: bytes, as: UTF8.self))
        case .array(let values): .array(values.map(\.jsonValue))
        case .object(let object):
            .object(
                Dictionary(
                    object.members.map { (String(decoding: $0.0, as: UTF8.self), $0.1.jsonValue) },
                    uniquingKeysWith: { first, _ in first }))
        }
    }

    /// The index of the first quote, backslash or control byte at or after `start` (the end of a string without
    /// escapes), or `buffer.count`.
    static func scanPlainString(_ buffer: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var cursor = start
        // Sixteen bytes at a time: stop at the first block holding a quote, a backslash or a control byte.
        if let base = buffer.baseAddress {
            let quote = SIMD16<UInt8>(repeating: 0x22)
            let backslash = SIMD16<UInt8>(repeating: 0x5c)
            let space = SIMD16<UInt8>(repeating: 0x20)
            while cursor + 16 <= buffer.count {
                let block = UnsafeRawPointer(base + cursor).loadUnaligned(as: SIMD16<UInt8>.self)
                if any((block .== quote) .| (block .== backslash) .| (block .< space)) { break }
                cursor += 16
            }
        }
        while cursor < buffer.count {
            let byte = buffer[cursor]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            cursor += 1
        }
        return cursor
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count,
                bytes[index] == 0x20 || bytes[index] == 0x0a || bytes[index] == 0x0d || bytes[index] == 0x09
            {
                index += 1
            }
        }

        mutating func value(depth: Int) throws(ParseError) -> TokenJSON {
            guard depth < TokenJSON.maximumDepth else { throw ParseError(message: "JSON nested too deeply") }
            guard index < bytes.count else { throw ParseError(message: "unexpected end of JSON") }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var members = JSONObject()
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return .object(members)
                }
                while true {
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                        throw ParseError(message: "expected a member name")
                    }
                    let key = try string()
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                        throw ParseError(message: "expected ':'")
                    }
                    index += 1
                    skipSpace()
                    let member = try value(depth: depth + 1)
                    guard members.count < TokenJSON.maximumMembers else {
                        throw ParseError(message: "a JSON object has too many members")
                    }
                    guard members.append(key: key, value: member) else {
                        throw ParseError(
                            message: "member \"\(String(decoding: key.prefix(40), as: UTF8.self))\" appears twice")
                    }
                    skipSpace()
                    guard index < bytes.count else { throw ParseError(message: "unexpected end of JSON") }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    guard bytes[index] == UInt8(ascii: "}") else { throw ParseError(message: "expected ',' or '}'") }
                    index += 1
                    return .object(members)
                }
            case UInt8(ascii: "["):
                index += 1
                var elements: [TokenJSON] = []
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .array(elements)
                }
                while true {
                    skipSpace()
                    elements.append(try value(depth: depth + 1))
                    skipSpace()
                    guard index < bytes.count else { throw ParseError(message: "unexpected end of JSON") }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    guard bytes[index] == UInt8(ascii: "]") else { throw ParseError(message: "expected ',' or ']'") }
                    index += 1
                    return .array(elements)
                }
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                return .null
            default:
                return .number(try number())
            }
        }

        mutating func literal(_ word: StaticString) throws(ParseError) {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw ParseError(message: "unexpected end of JSON") }
            let matches = word.withUTF8Buffer { expected in bytes[index..<(index + count)].elementsEqual(expected) }
            guard matches else { throw ParseError(message: "invalid JSON literal") }
            index += count
        }

        mutating func number() throws(ParseError) -> String {
            let start = index
            var position = index
            defer { index = position }
            try bytes.withUnsafeBufferPointer { buffer throws(ParseError) in
                try TokenJSON.scanNumber(buffer, &position)
            }
            return String(decoding: bytes[start..<position], as: UTF8.self)
        }

        mutating func string() throws(ParseError) -> ArraySlice<UInt8> {
            index += 1  // opening quote
            let start = index
            var position = index
            defer { index = position }
            return try bytes.withUnsafeBufferPointer { buffer throws(ParseError) -> ArraySlice<UInt8> in
                // Fast path: scan for the closing quote; no escapes, no control characters.
                position = TokenJSON.scanPlainString(buffer, from: start)
                if position < buffer.count, buffer[position] == UInt8(ascii: "\"") {
                    position += 1
                    return bytes[start..<(position - 1)]
                }
                return try TokenJSON.unescapedString(buffer, from: start, &position)[...]
            }
        }
    }
}

// MARK: Lexing shared by both readers (this tree and `TokenScanner`)

extension TokenJSON {
    /// Reads a number at `index` (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, at most 64 bytes) and moves
    /// `index` past it.
    static func scanNumber(_ bytes: UnsafeBufferPointer<UInt8>, _ index: inout Int) throws(ParseError) {
        func digits(_ index: inout Int) -> Int {
            let begin = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            return index - begin
        }
        let start = index
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let integerDigits = digits(&index)
        guard integerDigits > 0 else { throw ParseError(message: "invalid JSON value") }
        if integerDigits > 1, bytes[index - integerDigits] == UInt8(ascii: "0") {
            throw ParseError(message: "leading zero in a JSON number")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits(&index) > 0 else { throw ParseError(message: "invalid JSON number") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits(&index) > 0 else { throw ParseError(message: "invalid JSON number") }
        }
        guard index - start <= 64 else { throw ParseError(message: "JSON number too long") }
    }

    /// The rest of a string whose plain part (no escapes) runs from `start` to `index`: escapes resolved, up to and
    /// past the closing quote, which `index` is moved beyond.
    static func unescapedString(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, _ index: inout Int)
        throws(ParseError) -> [UInt8]
    {
        func hex4(_ index: inout Int) throws(ParseError) -> UInt32 {
            guard index + 4 <= bytes.count else { throw ParseError(message: "truncated \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let digit = HexCoding.nibble(bytes[index]) else {
                    throw ParseError(message: "invalid \\u escape")
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }
        var out = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return out
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { break }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0c)
                case UInt8(ascii: "n"): out.append(0x0a)
                case UInt8(ascii: "r"): out.append(0x0d)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4(&index)
                    if (0xd800..<0xdc00).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else {
                            throw ParseError(message: "unpaired surrogate in a JSON string")
                        }
                        index += 2
                        let low = try hex4(&index)
                        guard (0xdc00..<0xe000).contains(low) else {
                            throw ParseError(message: "unpaired surrogate in a JSON string")
                        }
                        scalar = 0x10000 + ((scalar - 0xd800) << 10) + (low - 0xdc00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else {
                        throw ParseError(message: "invalid \\u escape")
                    }
                    out.append(contentsOf: Array(String(Character(unicode)).utf8))
                default:
                    throw ParseError(message: "invalid escape in a JSON string")
                }
            default:
                guard byte >= 0x20 else { throw ParseError(message: "control character in a JSON string") }
                out.append(byte)
            }
        }
        throw ParseError(message: "unterminated JSON string")
    }
}

/// Hexadecimal and base64 decoding that never traps and reports failure as nil.
enum HexCoding {
    static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// Decodes an even-length hex string (either case).
    static func decode(_ text: String) -> [UInt8]? { decode(utf8: Array(text.utf8)[...]) }

    /// Decodes even-length hex given as UTF-8 bytes.
    static func decode(utf8 slice: ArraySlice<UInt8>) -> [UInt8]? {
        slice.withUnsafeBufferPointer { decode(utf8: $0) }
    }

    /// Decodes even-length hex given as UTF-8 bytes.
    static func decode(utf8: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard utf8.count % 2 == 0 else { return nil }
        var valid = true
        let out = [UInt8](unsafeUninitializedCapacity: utf8.count / 2) { out, initialized in
            var index = 0
            while index < utf8.count {
                guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else {
                    valid = false
                    break
                }
                out[index / 2] = high << 4 | low
                index += 2
            }
            initialized = index / 2
        }
        return valid ? out : nil
    }

    static func encode(_ bytes: some Sequence<UInt8>, uppercase: Bool = false) -> String {
        let digits: StaticString = uppercase ? "0123456789ABCDEF" : "0123456789abcdef"
        let input = Array(bytes)
        return digits.withUTF8Buffer { digits in
            String(unsafeUninitializedCapacity: input.count * 2) { out in
                var index = 0
                for byte in input {
                    out[index] = digits[Int(byte >> 4)]
                    out[index + 1] = digits[Int(byte & 0x0f)]
                    index += 2
                }
                return index
            }
        }
    }
}

enum Base64 {
    private static let table: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (index, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(character)] = UInt8(index)
        }
        return table
    }()

    /// Decodes standard base64 (padding optional; no whitespace or other characters).
    static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode(utf8: $0) }
    }

    static func decode(utf8 slice: ArraySlice<UInt8>) -> [UInt8]? {
        slice.withUnsafeBufferPointer { decode(utf8: $0) }
    }

    static func decode(utf8 input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var length = input.count
        while length > 0, input[length - 1] == UInt8(ascii: "=") { length -= 1 }
        guard input.count - length <= 2, length % 4 != 1 else { return nil }
        let outputCount = length / 4 * 3 + max(0, length % 4 - 1)
        return table.withUnsafeBufferPointer { table -> [UInt8]? in
            var valid = true
            let output = [UInt8](unsafeUninitializedCapacity: outputCount) { out, initialized in
                var read = 0
                var written = 0
                while read + 4 <= length {
                    let a = table[Int(input[read])]
                    let b = table[Int(input[read + 1])]
                    let c = table[Int(input[read + 2])]
                    let d = table[Int(input[read + 3])]
                    if (a | b | c | d) & 0x80 != 0 {
                        valid = false
                        break
                    }
                    let value = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    out[written] = UInt8(truncatingIfNeeded: value >> 16)
                    out[written + 1] = UInt8(truncatingIfNeeded: value >> 8)
                    out[written + 2] = UInt8(truncatingIfNeeded: value)
                    read += 4
                    written += 3
                }
                let rest = length - read
                if valid, rest >= 2 {
                    let a = table[Int(input[read])]
                    let b = table[Int(input[read + 1])]
                    let c = rest == 3 ? table[Int(input[read + 2])] : 0
                    if (a | b | c) & 0x80 != 0 {
                        valid = false
                    } else {
                        let value = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6
                        out[written] = UInt8(truncatingIfNeeded: value >> 16)
                        written += 1
                        if rest == 3 {
                            out[written] = UInt8(truncatingIfNeeded: value >> 8)
                            written += 1
                        }
                    }
                }
                if !valid {
                    for index in 0..<written { out[index] = 0 }
                }
                initialized = written
            }
            return valid ? output : nil
        }
    }
}
