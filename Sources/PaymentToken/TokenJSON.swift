import ApplePay
import Foundation

/// A small, strict JSON reader for tokens and payloads: no Foundation bridging, bounded depth, never traps.
/// Numbers keep their text so that integers are read exactly.
enum TokenJSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([TokenJSON])
    case object([String: TokenJSON])

    struct ParseError: Error {
        let message: String
    }

    static let maximumDepth = 32

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

    var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var object: [String: TokenJSON]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The value as ApplePay's `JSONValue` (numbers become `Decimal`).
    var jsonValue: JSONValue {
        switch self {
        case .null: .null
        case .bool(let value): .bool(value)
        case .number(let text): .number(Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) ?? 0)
        case .string(let value): .string(value)
        case .array(let values): .array(values.map(\.jsonValue))
        case .object(let members): .object(members.mapValues(\.jsonValue))
        }
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0a || bytes[index] == 0x0d || bytes[index] == 0x09 {
                index += 1
            }
        }

        mutating func value(depth: Int) throws(ParseError) -> TokenJSON {
            guard depth < TokenJSON.maximumDepth else { throw ParseError(message: "JSON nested too deeply") }
            guard index < bytes.count else { throw ParseError(message: "unexpected end of JSON") }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var members: [String: TokenJSON] = [:]
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
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw ParseError(message: "expected ':'") }
                    index += 1
                    skipSpace()
                    let member = try value(depth: depth + 1)
                    guard members.updateValue(member, forKey: key) == nil else {
                        throw ParseError(message: "member \"\(key.prefix(40))\" appears twice")
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
            func digits(_ parser: inout Parser) -> Int {
                let begin = parser.index
                while parser.index < parser.bytes.count, parser.bytes[parser.index] >= 0x30, parser.bytes[parser.index] <= 0x39 {
                    parser.index += 1
                }
                return parser.index - begin
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            let integerDigits = digits(&self)
            guard integerDigits > 0 else { throw ParseError(message: "invalid JSON value") }
            if integerDigits > 1, bytes[index - integerDigits] == UInt8(ascii: "0") {
                throw ParseError(message: "leading zero in a JSON number")
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits(&self) > 0 else { throw ParseError(message: "invalid JSON number") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits(&self) > 0 else { throw ParseError(message: "invalid JSON number") }
            }
            guard index - start <= 64 else { throw ParseError(message: "JSON number too long") }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        mutating func string() throws(ParseError) -> String {
            index += 1  // opening quote
            let start = index
            // Fast path: no escapes.
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let text = bytes[start..<index]
                    index += 1
                    guard let value = String(validating: text, as: UTF8.self) else {
                        throw ParseError(message: "invalid UTF-8 in a JSON string")
                    }
                    return value
                }
                if byte == UInt8(ascii: "\\") { break }
                guard byte >= 0x20 else { throw ParseError(message: "control character in a JSON string") }
                index += 1
            }
            var out = Array(bytes[start..<index])
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let value = String(validating: out, as: UTF8.self) else {
                        throw ParseError(message: "invalid UTF-8 in a JSON string")
                    }
                    return value
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
                        var scalar = try hex4()
                        if (0xd800..<0xdc00).contains(scalar) {
                            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                                throw ParseError(message: "unpaired surrogate in a JSON string")
                            }
                            index += 2
                            let low = try hex4()
                            guard (0xdc00..<0xe000).contains(low) else { throw ParseError(message: "unpaired surrogate in a JSON string") }
                            scalar = 0x10000 + ((scalar - 0xd800) << 10) + (low - 0xdc00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw ParseError(message: "invalid \\u escape") }
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

        mutating func hex4() throws(ParseError) -> UInt32 {
            guard index + 4 <= bytes.count else { throw ParseError(message: "truncated \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let digit = HexCoding.nibble(bytes[index]) else { throw ParseError(message: "invalid \\u escape") }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }
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
    static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    static func encode(_ bytes: some Sequence<UInt8>, uppercase: Bool = false) -> String {
        let digits = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var out = [UInt8]()
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
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
        var input = Array(text.utf8)
        while input.last == UInt8(ascii: "=") { input.removeLast() }
        guard input.count % 4 != 1, text.utf8.count - input.count <= 2 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in input {
            let value = table[Int(character)]
            guard value != 0xff else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return out
    }
}
