import Foundation
import HTTPServer
import MerchantCore

/// One pass over a request body's bytes that checks it is JSON (RFC 8259, any value at the top, UTF-8) and applies
/// ``FieldLimits`` to every string, array and field name as it goes, without building any object: what
/// `JSONSerialization` followed by a walk of its objects did, at a fraction of the cost. It also notes where the
/// top-level object's members begin and end, so that a caller can hand one on as bytes (the payment token).
struct JSONScanner {
    /// Where each top-level member's value lies in the body (the last one for a name given twice).
    private(set) var members: [String: Range<Int>] = [:]

    /// Deeper nesting than this is refused as `invalidJSON` (the decoders' own limit is 512).
    static let maximumDepth = 512

    private let bytes: UnsafeRawBufferPointer
    private var position = 0
    /// The path of the value being read, for limits and messages: member names and array indexes.
    private var path: [PathComponent] = []

    private enum PathComponent {
        case member(String)
        case index(Int)
    }

    /// Checks `body`; returns the scanner with ``members`` filled in.
    /// - Throws: `400 invalidJSON` when it is not JSON, `400 fieldTooLong` (naming the field) past a limit.
    static func scan(_ body: Data) throws(HTTPError) -> JSONScanner {
        let result: Result<JSONScanner, HTTPError> = body.withUnsafeBytes { buffer in
            var scanner = JSONScanner(bytes: buffer)
            do throws(HTTPError) {
                scanner.skipWhitespace()
                try scanner.value(name: "", depth: 0)
                scanner.skipWhitespace()
                guard scanner.position == buffer.count else { throw Self.invalid }
                return .success(scanner)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    private static let invalid = HTTPError.invalidJSON("The request body is not valid JSON.")

    // MARK: Values

    /// Reads one value; `name` is the member it belongs to (an array's elements share their array's name).
    private mutating func value(name: String, depth: Int) throws(HTTPError) {
        guard depth < Self.maximumDepth else {
            throw .invalidJSON("The request body is nested more than \(Self.maximumDepth) deep.")
        }
        guard let byte = peek() else { throw Self.invalid }
        switch byte {
        case UInt8(ascii: "{"): try object(depth: depth)
        case UInt8(ascii: "["): try array(name: name, depth: depth)
        case UInt8(ascii: "\""):
            let length = try string()
            let limit = FieldLimits.strings[name] ?? FieldLimits.defaultString
            if length > limit, !isExempt {
                throw FieldLimits.tooLong(pathText, "Field \(pathOrBody) is longer than \(limit) bytes.")
            }
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: try number()
        }
    }

    private mutating func object(depth: Int) throws(HTTPError) {
        position += 1
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            position += 1
            return
        }
        while true {
            guard peek() == UInt8(ascii: "\"") else { throw Self.invalid }
            let keyStart = position + 1
            let keyLength = try string()
            let key = try memberName(from: keyStart, to: position - 1)
            if keyLength > FieldLimits.defaultString, !isExempt {
                throw FieldLimits.tooLong(
                    pathText, "A field name in \(path.isEmpty ? "the body" : pathText) is too long.")
            }
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw Self.invalid }
            position += 1
            skipWhitespace()
            path.append(.member(key))
            let valueStart = position
            try value(name: key, depth: depth + 1)
            if depth == 0 { members[key] = valueStart..<position }
            path.removeLast()
            if try closes(with: UInt8(ascii: "}")) { return }
        }
    }

    private mutating func array(name: String, depth: Int) throws(HTTPError) {
        position += 1
        skipWhitespace()
        var count = 0
        let limit = FieldLimits.arrays[name] ?? FieldLimits.defaultArray
        if peek() == UInt8(ascii: "]") {
            position += 1
            return
        }
        while true {
            count += 1
            if count > limit, !isExempt {
                throw FieldLimits.tooLong(pathText, "Field \(pathOrBody) has more than \(limit) entries.")
            }
            path.append(.index(count - 1))
            try value(name: name, depth: depth + 1)
            path.removeLast()
            if try closes(with: UInt8(ascii: "]")) { return }
        }
    }

    /// After a member or an element: reads the comma that continues the container (false) or its `closing`
    /// bracket (true).
    private mutating func closes(with closing: UInt8) throws(HTTPError) -> Bool {
        skipWhitespace()
        switch peek() {
        case UInt8(ascii: ","):
            position += 1
            skipWhitespace()
            return false
        case closing:
            position += 1
            return true
        default: throw Self.invalid
        }
    }

    private mutating func literal(_ text: StaticString) throws(HTTPError) {
        let count = text.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw Self.invalid }
        for index in 0..<count where bytes[position + index] != text.utf8Start[index] { throw Self.invalid }
        position += count
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    private mutating func number() throws(HTTPError) {
        if peek() == UInt8(ascii: "-") { position += 1 }
        guard let first = peek(), isDigit(first) else { throw Self.invalid }
        position += 1
        if first != UInt8(ascii: "0") { skipDigits() }
        if peek() == UInt8(ascii: ".") {
            position += 1
            guard let digit = peek(), isDigit(digit) else { throw Self.invalid }
            skipDigits()
        }
        if let exponent = peek(), exponent == UInt8(ascii: "e") || exponent == UInt8(ascii: "E") {
            position += 1
            if let sign = peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { position += 1 }
            guard let digit = peek(), isDigit(digit) else { throw Self.invalid }
            skipDigits()
        }
    }

    /// Reads a string (the opening quote is at `position`) and returns its length in UTF-8 bytes once unescaped.
    private mutating func string() throws(HTTPError) -> Int {
        position += 1
        var length = 0
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                return length
            case UInt8(ascii: "\\"):
                length += try escape()
            case 0..<0x20:
                throw Self.invalid
            case 0x80...:
                let count = try utf8Sequence()
                length += count
            default:
                position += 1
                length += 1
            }
        }
        throw Self.invalid
    }

    /// Reads an escape (the backslash is at `position`); returns the UTF-8 length of what it stands for.
    private mutating func escape() throws(HTTPError) -> Int {
        position += 1
        guard let byte = peek() else { throw Self.invalid }
        position += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return 1
        case UInt8(ascii: "u"):
            let unit = try hexQuad()
            switch unit {
            case 0..<0x80: return 1
            case 0x80..<0x800: return 2
            case 0xD800..<0xDC00:
                // A high surrogate: a low one must follow, and the pair is one four-byte scalar.
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                    bytes[position + 1] == UInt8(ascii: "u")
                else { throw Self.invalid }
                position += 2
                guard (0xDC00..<0xE000).contains(try hexQuad()) else { throw Self.invalid }
                return 4
            case 0xDC00..<0xE000: throw Self.invalid
            default: return 3
            }
        default:
            throw Self.invalid
        }
    }

    private mutating func hexQuad() throws(HTTPError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw Self.invalid }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw Self.invalid
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    /// Checks one multi-byte UTF-8 sequence (no overlong forms, surrogates or values past U+10FFFF); returns its
    /// length.
    private mutating func utf8Sequence() throws(HTTPError) -> Int {
        let lead = bytes[position]
        let count: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: count = 2
        case 0xE0:
            count = 3
            low = 0xA0
        case 0xED:
            count = 3
            high = 0x9F
        case 0xE1...0xEF: count = 3
        case 0xF0:
            count = 4
            low = 0x90
        case 0xF4:
            count = 4
            high = 0x8F
        case 0xF1...0xF3: count = 4
        default: throw Self.invalid
        }
        guard position + count <= bytes.count else { throw Self.invalid }
        for index in 1..<count {
            let byte = bytes[position + index]
            let (from, to) = index == 1 ? (low, high) : (UInt8(0x80), UInt8(0xBF))
            guard byte >= from && byte <= to else { throw Self.invalid }
        }
        position += count
        return count
    }

    // MARK: Helpers

    /// A member name as text; escapes are resolved only for names that have them (rare), through Foundation.
    private func memberName(from start: Int, to end: Int) throws(HTTPError) -> String {
        let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
        guard raw.contains(UInt8(ascii: "\\")) else { return String(decoding: raw, as: UTF8.self) }
        let quoted = UnsafeRawBufferPointer(rebasing: bytes[(start - 1)..<(end + 1)])
        guard let name = try? JSONDecoder().decode(String.self, from: Data(quoted)) else { throw Self.invalid }
        return name
    }

    /// Whether the current value is inside a subtree ``FieldLimits`` leaves alone (the token's `paymentData`).
    private var isExempt: Bool {
        guard path.count >= 2, case .member(let first) = path[0], case .member(let second) = path[1] else {
            return false
        }
        return FieldLimits.exempt.contains("\(first).\(second)")
    }

    private var pathText: String {
        var text = ""
        for component in path {
            switch component {
            case .member(let name): text += text.isEmpty ? name : ".\(name)"
            case .index(let index): text += "[\(index)]"
            }
        }
        return text
    }

    private var pathOrBody: String { path.isEmpty ? "(the body)" : pathText }

    private func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while let byte = peek(), isDigit(byte) { position += 1 }
    }

    private mutating func skipWhitespace() {
        while let byte = peek(),
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
                || byte == UInt8(ascii: "\t")
        {
            position += 1
        }
    }
}
