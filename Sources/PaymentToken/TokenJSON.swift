import ApplePay
import Foundation
import JSONCoding

/// A small, strict JSON tree for tokens and payloads, read with JSONCoding's `JSONReader` within ``limits``: no
/// Foundation bridging, never traps. Numbers keep their text so that integers are read exactly.
enum TokenJSON: Sendable {
    case null
    case bool(Bool)
    case number(String)
    /// A string's UTF-8 bytes, unescaped; a slice of the document when it had no escapes (no copy). Converted to
    /// a `String` only when asked, so that large base64 fields are decoded straight from the document's bytes.
    case string(ArraySlice<UInt8>)
    case array([TokenJSON])
    case object(JSONObject)

    /// Why a document is not JSON: the grammar's message.
    struct ParseError: Error {
        let message: String
    }

    /// The most members an object may have (tokens have a handful; this bounds the duplicate-name check).
    static let maximumMembers = 512

    /// Tokens and payloads: 32 levels, 512 members an object, no name twice, numbers of at most 64 bytes. String
    /// bytes are passed through: a string's UTF-8 is checked where it is read as text (`validatedString`), so a
    /// name or a value that is not UTF-8 is refused by the field that needs it, not by the grammar.
    static var limits: JSONLimits {
        JSONLimits(
            maximumDepth: 32, maximumMembers: maximumMembers, maximumNumberLength: 64, validatesUTF8: false,
            rejectsDuplicateNames: true)
    }

    /// The tree checks members' count and names itself, in the index it builds anyway (in the order and with the
    /// errors of the reader's own checks), so that its reader keeps no second list of names.
    private static var treeLimits: JSONLimits {
        var limits = limits
        limits.maximumMembers = .max
        limits.rejectsDuplicateNames = false
        return limits
    }

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
            JSONReader.fingerprint(UnsafeRawBufferPointer(bytes))
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
        let result = bytes.withUnsafeBytes { raw -> Result<TokenJSON, JSONGrammarError> in
            Result { () throws(JSONGrammarError) -> TokenJSON in
                var parser = Parser(bytes: bytes, reader: try JSONReader(raw, limits: TokenJSON.treeLimits))
                let value = try parser.value()
                try parser.reader.finish()
                return value
            }
        }
        switch result {
        case .success(let value): return value
        case .failure(let error): throw ParseError(message: error.message)
        }
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

    private struct Parser {
        /// The document (strings without escapes are slices of it) and the reader over it.
        let bytes: [UInt8]
        var reader: JSONReader

        mutating func value() throws(JSONGrammarError) -> TokenJSON {
            switch try reader.readValue() {
            case .object(var object):
                var members = JSONObject()
                while let name = try reader.nextMember(&object) {
                    let key = slice(name)
                    let member = try value()
                    guard members.count < TokenJSON.maximumMembers else {
                        throw JSONGrammarError(.tooManyMembers, offset: reader.offset)
                    }
                    guard members.append(key: key, value: member) else {
                        throw JSONGrammarError(
                            .duplicateMemberName, offset: reader.offset,
                            message: "member \"\(String(decoding: key.prefix(40), as: UTF8.self))\" appears twice")
                    }
                }
                return .object(members)
            case .array(var array):
                var elements: [TokenJSON] = []
                while try reader.nextElement(&array) { elements.append(try value()) }
                return .array(elements)
            case .string(let string): return .string(slice(string))
            case .number(let range): return .number(String(decoding: bytes[range], as: UTF8.self))
            case .bool(let value): return .bool(value)
            case .null: return .null
            }
        }

        /// A string's bytes: a slice of the document when it has no escapes.
        func slice(_ string: JSONString) -> ArraySlice<UInt8> {
            string.hasEscapes ? reader.unescaped(string)[...] : bytes[string.range]
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
    /// Each character's six bits already shifted to where they go in a group's 24 bits, one table per position in
    /// the group of four; a character outside the alphabet has a top byte set, so one test over the four ORed
    /// values checks the whole group.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0xff00_0000, count: 4 * 256)
        for (index, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            for position in 0..<4 {
                tables[position * 256 + Int(character)] = UInt32(index) << (18 - 6 * UInt32(position))
            }
        }
        return tables
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
        guard let source = input.baseAddress, outputCount > 0 else { return [] }
        return tables.withUnsafeBufferPointer { tables -> [UInt8]? in
            guard let table = tables.baseAddress else { return nil }
            var valid = true
            let output = [UInt8](unsafeUninitializedCapacity: outputCount) { out, initialized in
                guard let target = out.baseAddress else { return }
                var read = 0
                var written = 0
                while read + 4 <= length {
                    let value =
                        table[Int(source[read])] | table[256 + Int(source[read + 1])]
                        | table[512 + Int(source[read + 2])] | table[768 + Int(source[read + 3])]
                    if value & 0xff00_0000 != 0 {
                        valid = false
                        break
                    }
                    target[written] = UInt8(truncatingIfNeeded: value >> 16)
                    target[written + 1] = UInt8(truncatingIfNeeded: value >> 8)
                    target[written + 2] = UInt8(truncatingIfNeeded: value)
                    read += 4
                    written += 3
                }
                let rest = length - read
                if valid, rest >= 2 {
                    let value =
                        table[Int(source[read])] | table[256 + Int(source[read + 1])]
                        | (rest == 3 ? table[512 + Int(source[read + 2])] : 0)
                    if value & 0xff00_0000 != 0 {
                        valid = false
                    } else {
                        target[written] = UInt8(truncatingIfNeeded: value >> 16)
                        written += 1
                        if rest == 3 {
                            target[written] = UInt8(truncatingIfNeeded: value >> 8)
                            written += 1
                        }
                    }
                }
                if !valid { target.initialize(repeating: 0, count: written) }
                initialized = written
            }
            return valid ? output : nil
        }
    }
}
