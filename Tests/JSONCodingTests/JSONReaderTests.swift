import Foundation
import Foundations
import JSONCoding
import Testing

@Suite("JSONReader: the one JSON grammar, with limits")
struct JSONReaderTests {
    /// The error code for `bytes`, nil when they are one valid value.
    static func code(_ bytes: [UInt8], _ limits: JSONLimits = JSONLimits()) -> JSONGrammarError.Code? {
        error(bytes, limits)?.code
    }

    static func code(_ text: String, _ limits: JSONLimits = JSONLimits()) -> JSONGrammarError.Code? {
        code(Array(text.utf8), limits)
    }

    static func error(_ bytes: [UInt8], _ limits: JSONLimits = JSONLimits()) -> JSONGrammarError? {
        bytes.withUnsafeBytes { raw in
            do throws(JSONGrammarError) {
                try JSONReader.validate(raw, limits: limits)
                return nil
            } catch {
                return error
            }
        }
    }

    /// The first value of `text`, as a string's unescaped bytes.
    static func unescaped(_ text: String) throws -> [UInt8] {
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBytes { raw throws -> [UInt8] in
            var reader = try JSONReader(raw)
            guard case .string(let string) = try reader.readValue() else {
                throw JSONGrammarError(.invalidValue, offset: 0)
            }
            try reader.finish()
            let unescaped = reader.unescaped(string)
            #expect(unescaped.count == string.unescapedCount)
            #expect(reader.text(string) == String(decoding: unescaped, as: UTF8.self))
            return unescaped
        }
    }

    @Test(
        "accepts JSON, whatever Foundation accepts too",
        arguments: [
            "{}", "[]", "0", "-0", "1.5e-3", "-12.25E+7", "1e01", "true", "false", "null", #""""#, " \n\t{ } \r",
            #"{"a":[1,2,{"b":null}],"c":"\u00e9\ud83d\ude00\/\b\f\n\r\t\"\\"}"#, "[[[[]]]]", #"{"é":"😀"}"#,
            #"{"a":1,"a":2}"#, #"["\u0000"]"#, "123456789012345678901234567890",
        ])
    func accepts(_ text: String) throws {
        #expect(Self.code(text) == nil)
        #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) != nil)
    }

    @Test("numbers")
    func numbers() {
        for valid in ["0", "-0", "7", "-7", "10", "0.5", "-0.5e+10", "1E-2", "1e400", "9007199254740993"] {
            #expect(Self.code(valid) == nil, "\(valid)")
        }
        let invalid: [(String, JSONGrammarError.Code)] = [
            ("01", .leadingZero), ("-01", .leadingZero), ("00", .leadingZero), ("1.", .invalidNumber),
            (".5", .invalidValue), ("-", .invalidValue), ("-a", .invalidValue), ("+1", .invalidValue),
            ("1e", .invalidNumber), ("1e+", .invalidNumber), ("1.e5", .invalidNumber), ("NaN", .invalidValue),
            ("Infinity", .invalidValue), ("0x10", .trailingCharacters), ("1 2", .trailingCharacters),
            ("[1 2]", .expectedCommaOrBracket),
        ]
        for (text, code) in invalid { #expect(Self.code(text) == code, "\(text)") }
        // The length limit counts the whole number's text.
        let limits = JSONLimits(maximumNumberLength: 64)
        #expect(Self.code(String(repeating: "9", count: 64), limits) == nil)
        #expect(Self.code("-" + String(repeating: "9", count: 63), limits) == nil)
        #expect(Self.code(String(repeating: "9", count: 65), limits) == .numberTooLong)
        #expect(Self.code("1." + String(repeating: "0", count: 63), limits) == .numberTooLong)
    }

    @Test("literals and structure")
    func structure() {
        let invalid: [(String, JSONGrammarError.Code)] = [
            ("", .unexpectedEnd), (" ", .unexpectedEnd), ("tru", .unexpectedEnd), ("trux", .invalidLiteral),
            ("[tru]", .invalidLiteral), ("nul", .unexpectedEnd), ("True", .invalidValue), ("'a'", .invalidValue),
            ("{", .expectedMemberName), ("}", .invalidValue), ("{a:1}", .expectedMemberName),
            (#"{"a" 1}"#, .expectedColon), (#"{"a"}"#, .expectedColon), (#"{"a":}"#, .invalidValue),
            (#"{"a":1,}"#, .expectedMemberName), (#"{"a":1 "b":2}"#, .expectedCommaOrBrace), ("[1,]", .invalidValue),
            ("[1", .unexpectedEnd), (#"{"a":1"#, .unexpectedEnd), ("{,}", .expectedMemberName),
            ("[", .unexpectedEnd), ("{} x", .trailingCharacters), ("{}{}", .trailingCharacters),
            ("[]]", .trailingCharacters), ("\u{FEFF}{}", .invalidValue),
        ]
        for (text, code) in invalid { #expect(Self.code(text) == code, "\(text)") }
    }

    @Test("escapes, surrogate pairs, and what they stand for")
    func escapes() throws {
        #expect(try Self.unescaped(#""a\"b\\c\/d\be\ff\ng\rh\ti""#) == Array("a\"b\\c/d\u{8}e\u{c}f\ng\rh\ti".utf8))
        #expect(try Self.unescaped(#""\u0041\u00e9\u20AC\ud83d\ude00""#) == Array("Aé€😀".utf8))
        #expect(try Self.unescaped(#""\u0000""#) == [0])
        #expect(try Self.unescaped(#""plain é""#) == Array("plain é".utf8))
        let invalid: [(String, JSONGrammarError.Code)] = [
            (#""\x""#, .invalidEscape), (#""\U0041""#, .invalidEscape), (#""\u12""#, .truncatedEscape),
            (#""\u12g4""#, .invalidUnicodeEscape), (#""\"#, .unterminatedString), (#""abc"#, .unterminatedString),
            ("\"a\u{01}b\"", .controlCharacter), ("\"a\nb\"", .controlCharacter), ("\"\t\"", .controlCharacter),
        ]
        for (text, code) in invalid { #expect(Self.code(text) == code, "\(text)") }
    }

    @Test("lone surrogates are refused, high or low")
    func loneSurrogates() {
        for text in [
            #""\ud800""#, #""\udbff""#, #""\udc00""#, #""\udfff""#, #""\ud800\u0041""#, #""\ud800\ud800""#,
            #""\ud800x""#, #""\udc00\ud800""#, #""\ud800\n""#,
        ] {
            #expect(Self.code(text) == .unpairedSurrogate, "\(text)")
        }
        #expect(Self.code(#""\ud800\u12""#) == .truncatedEscape)
        #expect(Self.code(#""\ud7ff\ue000""#) == nil)
        #expect(Self.code(#""\udbff\udfff""#) == nil)
    }

    @Test("bad UTF-8 inside strings is refused, unless passed through")
    func utf8() throws {
        let bad: [[UInt8]] = [
            [0xC0, 0x80], [0xC1, 0xBF], [0xFF], [0xFE], [0x80], [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF],
            [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF], [0xF0, 0x80, 0x80, 0x80], [0xF4, 0x90, 0x80, 0x80],
            [0xF5, 0x80, 0x80, 0x80], [0xC3], [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0xC3, 0x28],
        ]
        let quote = UInt8(ascii: "\"")
        for bytes in bad {
            #expect(Self.code([quote] + bytes + [quote]) == .invalidUTF8, "\(bytes)")
            // Inside a long run too (past the sixteen-byte blocks).
            let long = Array(repeating: UInt8(ascii: "a"), count: 40)
            #expect(Self.code([quote] + long + bytes + long + [quote]) == .invalidUTF8, "\(bytes)")
            #expect(Self.code([quote] + bytes + [quote], JSONLimits(validatesUTF8: false)) == nil, "\(bytes)")
        }
        let good: [[UInt8]] = [
            [0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80],
            [0xEF, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],
        ]
        for bytes in good {
            #expect(Self.code([quote] + bytes + [quote]) == nil, "\(bytes)")
            let text = [quote, UInt8(ascii: "x")] + bytes + [quote]
            text.withUnsafeBytes { raw in
                var reader = try? JSONReader(raw)
                guard case .string(let string)? = try? reader?.readValue() else {
                    Issue.record("not a string")
                    return
                }
                #expect(string.unescapedCount == bytes.count + 1)
                #expect(!string.hasEscapes)
            }
        }
        // Outside strings, bytes past ASCII are not JSON at all.
        #expect(Self.code([0xC3, 0xA9]) == .invalidValue)
    }

    @Test("depth: a value inside maximumDepth containers is refused, without exhausting the stack")
    func depth() {
        let limits = JSONLimits(maximumDepth: 32)
        #expect(Self.code(String(repeating: "[", count: 32) + String(repeating: "]", count: 32), limits) == nil)
        #expect(Self.code(String(repeating: "[", count: 31) + "1" + String(repeating: "]", count: 31), limits) == nil)
        #expect(
            Self.code(String(repeating: "[", count: 32) + "1" + String(repeating: "]", count: 32), limits) == .tooDeep)
        #expect(Self.code(String(repeating: "[", count: 33) + String(repeating: "]", count: 33), limits) == .tooDeep)
        #expect(
            Self.code(String(repeating: #"{"a":"#, count: 32) + "{}" + String(repeating: "}", count: 32), limits)
                == .tooDeep)
        #expect(
            Self.code(String(repeating: #"{"a":"#, count: 31) + "{}" + String(repeating: "}", count: 31), limits) == nil
        )
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let error = Self.error(Array(deep.utf8))
        #expect(error?.code == .tooDeep)
        #expect(error?.offset == 512)
    }

    @Test("trailing bytes after the value")
    func trailing() {
        for text in ["{} x", "1 1", "\"a\"\"b\"", "null,", "[]\u{0}", "true false"] {
            #expect(Self.code(text) == .trailingCharacters, "\(text)")
        }
        #expect(Self.code(" {} \n\t\r") == nil)
        #expect(Self.error(Array("[1]  x".utf8))?.offset == 5)
    }

    @Test("members, duplicate names (compared unescaped) and the size limit")
    func membersAndSize() {
        let limits = JSONLimits(maximumMembers: 3, rejectsDuplicateNames: true)
        #expect(Self.code(#"{"a":1,"b":2,"c":3}"#, limits) == nil)
        #expect(Self.code(#"{"a":1,"b":2,"c":3,"d":4}"#, limits) == .tooManyMembers)
        #expect(Self.code(#"{"a":1,"b":{"a":1,"b":2,"c":3},"c":3}"#, limits) == nil)
        #expect(Self.code(#"{"a":1,"a":2}"#) == nil)
        #expect(Self.code(#"{"a":1,"a":2}"#, limits) == .duplicateMemberName)
        #expect(Self.code(#"{"a":1,"\u0061":2}"#, limits) == .duplicateMemberName)
        #expect(Self.code(#"{"\u0061":1,"a":2}"#, limits) == .duplicateMemberName)
        #expect(Self.code(#"{"a":{"a":1},"b":[{"a":1},{"a":2}]}"#, limits) == nil)
        let error = Self.error(Array(#"{"name":1,"name":2}"#.utf8), limits)
        #expect(error?.message == #"member "name" appears twice"#)
        #expect(Self.code("[1, 2]", JSONLimits(maximumBytes: 6)) == nil)
        #expect(Self.code("[1, 2] ", JSONLimits(maximumBytes: 6)) == .tooLarge)
    }

    @Test("walking a document: tokens, ranges, offsets")
    func walking() throws {
        let text = #" {"a": [1, "x\n", true, null], "b": {"c": -2.5}} "#
        let bytes = Array(text.utf8)
        try bytes.withUnsafeBytes { raw throws in
            var reader = try JSONReader(raw)
            guard case .object(var object) = try reader.readValue() else {
                throw JSONGrammarError(.invalidValue, offset: 0)
            }
            var seen: [String] = []
            while let name = try reader.nextMember(&object) {
                seen.append(reader.text(name))
                switch try reader.readValue() {
                case .array(var array):
                    #expect(reader.valueOffset == 7)
                    var elements: [String] = []
                    while try reader.nextElement(&array) {
                        switch try reader.readValue() {
                        case .number(let range):
                            elements.append(String(decoding: reader.bytes(in: range), as: UTF8.self))
                        case .string(let string):
                            #expect(string.hasEscapes)
                            elements.append(reader.text(string))
                        case .bool(let value): elements.append("\(value)")
                        case .null: elements.append("null")
                        default: Issue.record("unexpected value")
                        }
                    }
                    #expect(array.count == 4)
                    #expect(elements == ["1", "x\n", "true", "null"])
                case .object(var inner):
                    while let name = try reader.nextMember(&inner) {
                        #expect(reader.text(name) == "c")
                        try reader.skipValue()
                    }
                default: Issue.record("unexpected value")
                }
            }
            #expect(object.count == 2)
            #expect(reader.depth == 0)
            try reader.finish()
            #expect(seen == ["a", "b"])
        }
    }

    @Test("errors: stable codes, offsets, CodedError")
    func errors() {
        #expect(Set(JSONGrammarError.Code.all.map(\.rawValue)).count == JSONGrammarError.Code.all.count)
        let error = Self.error(Array(#"{"a":tru}"#.utf8))
        #expect(error?.code == .invalidLiteral)
        #expect(error?.offset == 5)
        #expect(error?.description == "invalidLiteral at byte 5: invalid JSON literal")
        #expect(error == JSONGrammarError(.invalidLiteral, offset: 0))
        #expect(Self.error(Array(#""\ud800x""#.utf8))?.offset == 7)
        let thrown: any Error = JSONGrammarError(.tooDeep, offset: 3)
        switch thrown {
        case JSONGrammarError.Code.tooDeep: break
        default: Issue.record("the code does not match in a switch")
        }
    }
}
