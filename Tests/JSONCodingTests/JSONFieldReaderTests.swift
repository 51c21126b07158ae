import Foundation
import JSONCoding
import Testing

/// Reading one known shape: values as asked, anything else a mismatch (nil from `read`).
@Suite("JSONFieldReader and JSONTextWriter")
struct JSONFieldReaderTests {
    static func integer(_ text: String) -> Int64? {
        JSONFieldReader.read(text) { json in try json.integer() }
    }

    @Test("integers: whole numbers within Int64 only")
    func integers() {
        #expect(Self.integer("0") == 0)
        #expect(Self.integer(" -42 ") == -42)
        #expect(Self.integer("9223372036854775807") == .max)
        #expect(Self.integer("-9223372036854775807") == -.max)
        for text in ["9223372036854775808", "1.0", "1e3", "-", "\"1\"", "null", "01", "1 2"] {
            #expect(Self.integer(text) == nil, "\(text)")
        }
    }

    @Test("objects: asked members by index, others skipped, a name twice or escaped is a mismatch")
    func objects() {
        func read(_ text: String) -> [Int: String]? {
            JSONFieldReader.read(text) { json in
                var found: [Int: String] = [:]
                try json.object(keys: ["a", "b"]) { index, json in found[index] = try json.optionalString() ?? "nil" }
                return found
            }
        }
        #expect(read(#"{"b":"2","x":[{"y":[]}],"a":null}"#) == [0: "nil", 1: "2"])
        #expect(read(#"{}"#) == [:])
        #expect(read(#"{"a":"1","a":"2"}"#) == nil)
        #expect(read(#"{"\u0061":"1"}"#) == nil)
        #expect(read(#"{"a":1}"#) == nil)
        #expect(read(#"{"a":"1"} x"#) == nil)
    }

    @Test("skipNull reads null only; other values stay to be read")
    func skipNull() {
        let values = JSONFieldReader.read(#"[null,"x"]"#) { json in
            var seen: [String?] = []
            try json.array { json in seen.append(try json.skipNull() ? nil : try json.string()) }
            return seen
        }
        #expect(values == [nil, "x"])
    }

    @Test("the writer escapes as SortedJSONEncoder and leaves nil members out")
    func writer() throws {
        struct Value: Encodable {
            var a: Int64
            var b: String?
            var c: Bool?
            var d: String
        }
        let value = Value(a: -7, b: nil, c: false, d: "q\"\\/\n\u{1}é")
        var out = JSONTextWriter()
        out.openObject()
        out.member("a", value.a)
        out.member("b", value.b)
        out.member("c", value.c)
        out.member("d", value.d)
        out.closeObject()
        #expect(out.string == String(decoding: try SortedJSONEncoder().encode(value), as: UTF8.self))
    }

    @Test("strings escape byte for byte as JSONEncoder: every byte below 0x80 alone and inside text, and Unicode")
    func stringEscapes() throws {
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var texts = (0..<0x80).map { String(UnicodeScalar(UInt8($0))) }
        texts += (0..<0x80).map { "ab" + String(UnicodeScalar(UInt8($0))) + "cd" }
        texts += [
            "", "no escapes at all, a long run of plain text", "é 日本 🇫🇷", "\u{0}\u{1F}\"\\end\"",
            String(repeating: "x\n", count: 40),
        ]
        for text in texts {
            #expect(try SortedJSONEncoder().encode([text]) == foundation.encode([text]), "\(text.debugDescription)")
        }
    }
}
