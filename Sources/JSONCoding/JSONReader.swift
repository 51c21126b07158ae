import Foundations

/// What a ``JSONReader`` accepts beyond RFC 8259's grammar.
public struct JSONLimits: Sendable, Hashable {
    /// A value inside this many open objects and arrays is refused (`tooDeep`): 32 allows 32 nested containers,
    /// the innermost empty.
    public var maximumDepth: Int
    /// The most members one object may have (`tooManyMembers`).
    public var maximumMembers: Int
    /// The longest number, in bytes of text (`numberTooLong`).
    public var maximumNumberLength: Int
    /// The longest text, in bytes (`tooLarge`).
    public var maximumBytes: Int
    /// Whether the bytes of strings must be UTF-8 (`invalidUTF8`); without it they are passed through, and escapes
    /// alone are checked.
    public var validatesUTF8: Bool
    /// Whether an object may not name a member twice, compared once unescaped (`duplicateMemberName`).
    public var rejectsDuplicateNames: Bool

    /// Limits; by default only the depth is bounded (512) and strings must be UTF-8.
    @inlinable
    public init(
        maximumDepth: Int = 512, maximumMembers: Int = .max, maximumNumberLength: Int = .max,
        maximumBytes: Int = .max, validatesUTF8: Bool = true, rejectsDuplicateNames: Bool = false
    ) {
        self.maximumDepth = maximumDepth
        self.maximumMembers = maximumMembers
        self.maximumNumberLength = maximumNumberLength
        self.maximumBytes = maximumBytes
        self.validatesUTF8 = validatesUTF8
        self.rejectsDuplicateNames = rejectsDuplicateNames
    }
}

/// A string value or member name as read: where its text lies between the quotes, and what it holds once unescaped.
public struct JSONString: Sendable, Hashable {
    /// The bytes between the quotes.
    public let range: Range<Int>
    /// Whether the text has escapes (otherwise `range` is the string's UTF-8 as is).
    public let hasEscapes: Bool
    /// The string's length in UTF-8 bytes once unescaped.
    public let unescapedCount: Int

    @inlinable
    init(range: Range<Int>, hasEscapes: Bool, unescapedCount: Int) {
        self.range = range
        self.hasEscapes = hasEscapes
        self.unescapedCount = unescapedCount
    }
}

/// An object being read: pass it to ``JSONReader/nextMember(_:)`` until that returns nil.
public struct JSONObjectCursor: Sendable {
    @usableFromInline var members = 0
    /// Where this object's names start in the reader's list (duplicate check).
    @usableFromInline let firstName: Int
    /// The name of the member whose value is being read, recorded once the value is read.
    @usableFromInline var pending = JSONString(range: 0..<0, hasEscapes: false, unescapedCount: 0)

    @inlinable init(firstName: Int) { self.firstName = firstName }

    /// The members read so far, the current one included.
    @inlinable public var count: Int { members }
}

/// An array being read: pass it to ``JSONReader/nextElement(_:)`` until that returns false.
public struct JSONArrayCursor: Sendable {
    @usableFromInline var elements = 0

    @inlinable init() {}

    /// The elements begun so far, the current one included.
    @inlinable public var count: Int { elements }
}

/// The start of a value, as ``JSONReader/readValue()`` returns it: scalars whole, containers opened.
public enum JSONToken: Sendable {
    /// `{` was read: read the members with ``JSONReader/nextMember(_:)``.
    case object(JSONObjectCursor)
    /// `[` was read: read the elements with ``JSONReader/nextElement(_:)``.
    case array(JSONArrayCursor)
    case string(JSONString)
    /// The number's text.
    case number(Range<Int>)
    case bool(Bool)
    case null
}

/// The one JSON grammar (RFC 8259) of the package, over bytes in place: whitespace, literals, numbers, strings with
/// their escapes (surrogate pairs included) and, with ``JSONLimits/validatesUTF8``, their UTF-8, objects and arrays,
/// within ``JSONLimits``. It builds nothing: callers walk the document with ``readValue()``, ``nextMember(_:)`` and
/// ``nextElement(_:)``, keep what they need as ranges of the bytes, and end with ``finish()``:
///
/// ```swift
/// switch try reader.readValue() {
/// case .object(var object): while let name = try reader.nextMember(&object) { /* read the value */ }
/// case .array(var array): while try reader.nextElement(&array) { /* read the element */ }
/// case .string(let string): ...
/// }
/// ```
///
/// It allocates nothing, except for a list of member names with ``JSONLimits/rejectsDuplicateNames`` (and a copy of
/// a name that has escapes). Inlinable, so that callers in other modules get it specialized.
public struct JSONReader {
    /// The text.
    public let bytes: UnsafeRawBufferPointer
    /// What is accepted beyond the grammar.
    public let limits: JSONLimits
    @usableFromInline var position = 0
    @usableFromInline var openContainers = 0
    /// A member name was read: its `:` comes before the value.
    @usableFromInline var nameRead = false
    @usableFromInline var lastValueStart = 0
    /// The names of the members read in the objects open, innermost last (with `rejectsDuplicateNames`).
    @usableFromInline var names: [MemberName] = []

    @usableFromInline
    struct MemberName {
        @usableFromInline let fingerprint: UInt64
        @usableFromInline let range: Range<Int>
        /// The name unescaped, when it has escapes.
        @usableFromInline let unescaped: [UInt8]?

        @inlinable init(fingerprint: UInt64, range: Range<Int>, unescaped: [UInt8]?) {
            self.fingerprint = fingerprint
            self.range = range
            self.unescaped = unescaped
        }
    }

    /// A reader at the start of `bytes`.
    /// - Throws: `tooLarge` past ``JSONLimits/maximumBytes``.
    @inlinable
    public init(_ bytes: UnsafeRawBufferPointer, limits: JSONLimits = JSONLimits()) throws(JSONGrammarError) {
        guard bytes.count <= limits.maximumBytes else {
            throw JSONGrammarError(
                .tooLarge, offset: limits.maximumBytes,
                message: "JSON text of \(bytes.count) bytes, over the limit of \(limits.maximumBytes)")
        }
        self.bytes = bytes
        self.limits = limits
        if limits.rejectsDuplicateNames { names.reserveCapacity(32) }
    }

    /// Checks that `bytes` are one JSON value within `limits`.
    @inlinable
    public static func validate(_ bytes: UnsafeRawBufferPointer, limits: JSONLimits = JSONLimits())
        throws(JSONGrammarError)
    {
        var reader = try JSONReader(bytes, limits: limits)
        try reader.skipValue()
        try reader.finish()
    }

    /// Where reading is.
    @inlinable public var offset: Int { position }
    /// Where the value ``readValue()`` last read begins.
    @inlinable public var valueOffset: Int { lastValueStart }
    /// The objects and arrays open.
    @inlinable public var depth: Int { openContainers }

    // MARK: Values

    /// Reads the start of the next value (whitespace before it, and the `:` after a member name): a scalar whole,
    /// an object's `{` or an array's `[`.
    @inlinable @inline(__always)
    public mutating func readValue() throws(JSONGrammarError) -> JSONToken {
        if nameRead {
            nameRead = false
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw fail(.expectedColon) }
            position += 1
        }
        skipWhitespace()
        guard openContainers < limits.maximumDepth else { throw fail(.tooDeep) }
        guard position < bytes.count else { throw fail(.unexpectedEnd) }
        lastValueStart = position
        switch bytes[position] {
        case UInt8(ascii: "{"):
            position += 1
            openContainers += 1
            return .object(JSONObjectCursor(firstName: names.count))
        case UInt8(ascii: "["):
            position += 1
            openContainers += 1
            return .array(JSONArrayCursor())
        case UInt8(ascii: "\""):
            return .string(try readString())
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
            return .number(try readNumber())
        }
    }

    /// The next member's name (its value comes next, from ``readValue()``), or nil after the closing `}`. Called
    /// after each value, it also checks the member count and, with ``JSONLimits/rejectsDuplicateNames``, the name
    /// just read.
    @inlinable @inline(__always)
    public mutating func nextMember(_ object: inout JSONObjectCursor) throws(JSONGrammarError) -> JSONString? {
        skipWhitespace()
        if object.members == 0 {
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
                openContainers -= 1
                return nil
            }
        } else {
            guard object.members <= limits.maximumMembers else { throw fail(.tooManyMembers) }
            if limits.rejectsDuplicateNames { try record(object.pending, from: object.firstName) }
            guard position < bytes.count else { throw fail(.unexpectedEnd) }
            switch bytes[position] {
            case UInt8(ascii: ","):
                position += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                position += 1
                openContainers -= 1
                if limits.rejectsDuplicateNames { names.removeLast(names.count - object.firstName) }
                return nil
            default:
                throw fail(.expectedCommaOrBrace)
            }
        }
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
            throw fail(.expectedMemberName)
        }
        let name = try readString()
        object.members += 1
        object.pending = name
        nameRead = true
        return name
    }

    /// Whether an element follows (read it with ``readValue()``); false after the closing `]`.
    @inlinable @inline(__always)
    public mutating func nextElement(_ array: inout JSONArrayCursor) throws(JSONGrammarError) -> Bool {
        skipWhitespace()
        if array.elements == 0 {
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
                openContainers -= 1
                return false
            }
        } else {
            guard position < bytes.count else { throw fail(.unexpectedEnd) }
            switch bytes[position] {
            case UInt8(ascii: ","):
                position += 1
                skipWhitespace()
            case UInt8(ascii: "]"):
                position += 1
                openContainers -= 1
                return false
            default:
                throw fail(.expectedCommaOrBracket)
            }
        }
        array.elements += 1
        return true
    }

    /// Reads a whole value and drops it.
    @inlinable
    public mutating func skipValue() throws(JSONGrammarError) {
        switch try readValue() {
        case .object(var object):
            while try nextMember(&object) != nil { try skipValue() }
        case .array(var array):
            while try nextElement(&array) { try skipValue() }
        default:
            break
        }
    }

    /// Checks that only whitespace follows the value.
    @inlinable
    public mutating func finish() throws(JSONGrammarError) {
        skipWhitespace()
        guard position == bytes.count else { throw fail(.trailingCharacters) }
    }

    // MARK: Strings' contents

    /// The bytes of `range` (a string's raw text, a number's).
    @inlinable
    public func bytes(in range: Range<Int>) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[range]) }

    /// A string's UTF-8 bytes once unescaped (`string` must come from this reader).
    @inlinable
    public func unescaped(_ string: JSONString) -> [UInt8] {
        guard string.hasEscapes else { return Array(bytes(in: string.range)) }
        return unescapedBytes(string)
    }

    /// A string as text (with ``JSONLimits/validatesUTF8`` off, bytes that are not UTF-8 are replaced).
    @inlinable
    public func text(_ string: JSONString) -> String {
        if string.hasEscapes { return String(decoding: unescapedBytes(string), as: UTF8.self) }
        return String(decoding: bytes(in: string.range), as: UTF8.self)
    }

    /// FNV-1a over the bytes: the fingerprint names are compared by first.
    @inlinable
    public static func fingerprint(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return hash
    }

    // MARK: Lexing

    @usableFromInline
    func fail(_ code: JSONGrammarError.Code) -> JSONGrammarError { JSONGrammarError(code, offset: position) }

    @inlinable @inline(__always)
    mutating func skipWhitespace() {
        while position < bytes.count {
            let byte = bytes[position]
            guard byte == 0x20 || byte == 0x0a || byte == 0x0d || byte == 0x09 else { return }
            position += 1
        }
    }

    @inlinable
    mutating func literal(_ word: StaticString) throws(JSONGrammarError) {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw fail(.unexpectedEnd) }
        for index in 0..<count where bytes[position + index] != word.utf8Start[index] { throw fail(.invalidLiteral) }
        position += count
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, at most ``JSONLimits/maximumNumberLength`` bytes.
    @inlinable
    mutating func readNumber() throws(JSONGrammarError) -> Range<Int> {
        let start = position
        if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
        let integerDigits = skipDigits()
        guard integerDigits > 0 else { throw fail(.invalidValue) }
        if integerDigits > 1, bytes[position - integerDigits] == UInt8(ascii: "0") { throw fail(.leadingZero) }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard skipDigits() > 0 else { throw fail(.invalidNumber) }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard skipDigits() > 0 else { throw fail(.invalidNumber) }
        }
        guard position - start <= limits.maximumNumberLength else { throw fail(.numberTooLong) }
        return start..<position
    }

    @inlinable
    mutating func skipDigits() -> Int {
        let begin = position
        while position < bytes.count, bytes[position] &- 0x30 < 10 { position += 1 }
        return position - begin
    }

    /// Reads a string whose opening quote is at `position`.
    @inlinable @inline(__always)
    mutating func readString() throws(JSONGrammarError) -> JSONString {
        position += 1
        let start = position
        position = plainEnd(from: start)
        if position < bytes.count, bytes[position] == UInt8(ascii: "\"") {
            position += 1
            return JSONString(range: start..<(position - 1), hasEscapes: false, unescapedCount: position - 1 - start)
        }
        return try readRestOfString(from: start)
    }

    /// The index of the first quote, backslash or control byte at or after `start` (and, validating UTF-8, of the
    /// first byte past ASCII), or `bytes.count`: the end of a run that needs no more than copying.
    @inlinable @inline(__always)
    func plainEnd(from start: Int) -> Int {
        limits.validatesUTF8 ? asciiEnd(from: start) : plainBytesEnd(from: start)
    }

    /// Whether any lane of `mask` is set: the lanes as two 64-bit words, one test (a `movmsk`); the standard
    /// library's `any(_:)` compiled to a reduction of four shuffles and compares, about 35 instructions a block.
    @inlinable @inline(__always)
    static func anySet(_ mask: SIMDMask<SIMD16<Int8>>) -> Bool {
        let words = unsafeBitCast(
            SIMD16<UInt8>(repeating: 0).replacing(with: 0xFF, where: mask), to: SIMD2<UInt64>.self)
        return words[0] | words[1] != 0
    }

    /// `plainEnd(from:)` when bytes past ASCII pass through. Sixteen bytes at a time: it stops at the first block
    /// holding a byte to look at. (Two functions rather than a parameter: each loop stays as tight as it can be.)
    @inlinable
    func plainBytesEnd(from start: Int) -> Int {
        var cursor = start
        if let base = bytes.baseAddress {
            let quote = SIMD16<UInt8>(repeating: 0x22)
            let backslash = SIMD16<UInt8>(repeating: 0x5c)
            let space = SIMD16<UInt8>(repeating: 0x20)
            while cursor + 16 <= bytes.count {
                let block = (base + cursor).loadUnaligned(as: SIMD16<UInt8>.self)
                if Self.anySet((block .== quote) .| (block .== backslash) .| (block .< space)) { break }
                cursor += 16
            }
        }
        while cursor < bytes.count {
            let byte = bytes[cursor]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            cursor += 1
        }
        return cursor
    }

    /// `plainEnd(from:)` when UTF-8 is checked: it also stops at bytes past ASCII.
    @inlinable
    func asciiEnd(from start: Int) -> Int {
        var cursor = start
        if let base = bytes.baseAddress {
            let quote = SIMD16<UInt8>(repeating: 0x22)
            let backslash = SIMD16<UInt8>(repeating: 0x5c)
            let space = SIMD16<UInt8>(repeating: 0x20)
            let ascii = SIMD16<UInt8>(repeating: 0x7f)
            while cursor + 16 <= bytes.count {
                let block = (base + cursor).loadUnaligned(as: SIMD16<UInt8>.self)
                if Self.anySet((block .== quote) .| (block .== backslash) .| (block .< space) .| (block .> ascii)) {
                    break
                }
                cursor += 16
            }
        }
        while cursor < bytes.count {
            let byte = bytes[cursor]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { break }
            cursor += 1
        }
        return cursor
    }

    /// The rest of a string whose plain part runs from `start` to `position`: escapes and UTF-8 checked, up to and
    /// past the closing quote.
    @usableFromInline
    mutating func readRestOfString(from start: Int) throws(JSONGrammarError) -> JSONString {
        var count = position - start
        var escaped = false
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                return JSONString(range: start..<(position - 1), hasEscapes: escaped, unescapedCount: count)
            case UInt8(ascii: "\\"):
                escaped = true
                position += 1
                guard position < bytes.count else { throw fail(.unterminatedString) }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    count += 1
                case UInt8(ascii: "u"):
                    let unit = try hex4()
                    switch unit {
                    case 0..<0x80: count += 1
                    case 0x80..<0x800: count += 2
                    case 0xD800..<0xDC00:
                        // A high surrogate: a low one must follow, and the pair is one four-byte scalar.
                        guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                            bytes[position + 1] == UInt8(ascii: "u")
                        else { throw fail(.unpairedSurrogate) }
                        position += 2
                        guard (0xDC00..<0xE000).contains(try hex4()) else { throw fail(.unpairedSurrogate) }
                        count += 4
                    case 0xDC00..<0xE000: throw fail(.unpairedSurrogate)
                    default: count += 3
                    }
                default:
                    throw fail(.invalidEscape)
                }
            case 0..<0x20:
                throw fail(.controlCharacter)
            case 0x80...:
                if limits.validatesUTF8 {
                    let length = try utf8Sequence()
                    position += length
                    count += length
                } else {
                    position += 1
                    count += 1
                }
            default:
                position += 1
                count += 1
            }
            let end = plainEnd(from: position)
            count += end - position
            position = end
        }
        throw fail(.unterminatedString)
    }

    /// The four hexadecimal digits of a `\u` escape.
    @usableFromInline
    mutating func hex4() throws(JSONGrammarError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw fail(.truncatedEscape) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = JSONReader.hexDigit(bytes[position]) else { throw fail(.invalidUnicodeEscape) }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    @usableFromInline
    static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The length of the UTF-8 sequence at `position` (no overlong forms, surrogates or values past U+10FFFF).
    @usableFromInline
    func utf8Sequence() throws(JSONGrammarError) -> Int {
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
        default: throw fail(.invalidUTF8)
        }
        guard position + count <= bytes.count else { throw fail(.invalidUTF8) }
        for index in 1..<count {
            let byte = bytes[position + index]
            let (from, to) = index == 1 ? (low, high) : (UInt8(0x80), UInt8(0xBF))
            guard byte >= from && byte <= to else { throw fail(.invalidUTF8) }
        }
        return count
    }

    /// A string with escapes, unescaped (it was read by this reader, so it is valid).
    @usableFromInline
    func unescapedBytes(_ string: JSONString) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(string.unescapedCount)
        var index = string.range.lowerBound
        let end = string.range.upperBound
        func hex4() -> UInt32 {
            var value: UInt32 = 0
            for offset in 0..<4 { value = value << 4 | UInt32(JSONReader.hexDigit(bytes[index + offset]) ?? 0) }
            index += 4
            return value
        }
        while index < end {
            let byte = bytes[index]
            index += 1
            guard byte == UInt8(ascii: "\\") else {
                out.append(byte)
                continue
            }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0c)
            case UInt8(ascii: "n"): out.append(0x0a)
            case UInt8(ascii: "r"): out.append(0x0d)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4()
                if (0xD800..<0xDC00).contains(scalar) {
                    index += 2
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (hex4() - 0xDC00)
                }
                switch scalar {
                case 0..<0x80:
                    out.append(UInt8(scalar))
                case 0x80..<0x800:
                    out.append(UInt8(0xC0 | scalar >> 6))
                    out.append(UInt8(0x80 | scalar & 0x3F))
                case 0x800..<0x10000:
                    out.append(UInt8(0xE0 | scalar >> 12))
                    out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
                    out.append(UInt8(0x80 | scalar & 0x3F))
                default:
                    out.append(UInt8(0xF0 | scalar >> 18))
                    out.append(UInt8(0x80 | scalar >> 12 & 0x3F))
                    out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
                    out.append(UInt8(0x80 | scalar & 0x3F))
                }
            default:
                out.append(escape)  // " \ /
            }
        }
        return out
    }

    /// Checks the member name just read against the others of its object, then adds it.
    @inlinable
    mutating func record(_ name: JSONString, from first: Int) throws(JSONGrammarError) {
        let owned = name.hasEscapes ? unescapedBytes(name) : nil
        let fingerprint: UInt64
        if let owned {
            fingerprint = owned.withUnsafeBytes(JSONReader.fingerprint)
        } else {
            fingerprint = JSONReader.fingerprint(bytes(in: name.range))
        }
        let new = MemberName(fingerprint: fingerprint, range: name.range, unescaped: owned)
        var index = first
        while index < names.count {
            if names[index].fingerprint == fingerprint, same(names[index], new) { throw duplicate(new) }
            index += 1
        }
        names.append(new)
    }

    @usableFromInline
    func duplicate(_ name: MemberName) -> JSONGrammarError {
        let text = withBytes(of: name) { String(decoding: $0.prefix(40), as: UTF8.self) }
        return JSONGrammarError(.duplicateMemberName, offset: position, message: "member \"\(text)\" appears twice")
    }

    @usableFromInline
    func withBytes<R>(of name: MemberName, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        if let unescaped = name.unescaped { return unescaped.withUnsafeBytes(body) }
        return body(bytes(in: name.range))
    }

    @usableFromInline
    func same(_ first: MemberName, _ second: MemberName) -> Bool {
        withBytes(of: first) { first in withBytes(of: second) { first.elementsEqual($0) } }
    }
}
