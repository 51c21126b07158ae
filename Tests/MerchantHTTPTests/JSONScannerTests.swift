import Foundation
import HTTPCore
import Testing

@testable import MerchantHTTP

@Suite("JSON scanner: request bodies checked in one pass")
struct JSONScannerTests {
    private func scan(_ text: String) -> Result<JSONScanner, HTTPError> {
        Result { () throws(HTTPError) -> JSONScanner in try JSONScanner.scan(Data(text.utf8)) }
    }

    private func code(_ text: String) -> String? {
        if case .failure(let error) = scan(text) { return error.code }
        return nil
    }

    @Test(
        "accepts JSON",
        arguments: [
            "{}", "[]", "0", "-0", "1.5e-3", "-12.25E+7", "true", "false", "null", #""""#, " \n\t{ } ",
            #"{"a":[1,2,{"b":null}],"c":"\u00e9\ud83d\ude00\/\b\f\n\r\t\"\\"}"#, "[[[[]]]]", #"{"é":"😀"}"#,
            #"{"a":1,"a":2}"#,
        ])
    func accepts(_ text: String) throws {
        #expect(code(text) == nil)
        // Whatever the scanner accepts, Foundation's parser accepts too.
        #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) != nil)
    }

    @Test(
        "refuses what is not JSON as invalidJSON",
        arguments: [
            "", "{", "}", "[1,]", #"{"a":1,}"#, "01", "1.", ".5", "-", "+1", "1e", "tru", "nul", "NaN", "{} x",
            #"{"a" 1}"#, #"{a:1}"#, #""abc"#, "\"a\u{01}b\"", #""\x""#, #""\u12""#, #""\ud800""#, #""\udc00x""#,
            #""\ud800\u0041""#, "[1 2]", #"{"a":1 "b":2}"#, "'a'",
        ])
    func refuses(_ text: String) {
        #expect(code(text) == "invalidJSON")
    }

    @Test("refuses malformed UTF-8 inside strings")
    func malformedUTF8() {
        for bytes: [UInt8] in [
            [0xC0, 0x80], [0xFF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xC3],
        ] {
            let body = Data([UInt8(ascii: "\"")] + bytes + [UInt8(ascii: "\"")])
            let refused = Result { () throws(HTTPError) -> JSONScanner in try JSONScanner.scan(body) }
            guard case .failure(let error) = refused else {
                Issue.record("accepted \(bytes)")
                continue
            }
            #expect(error.code == "invalidJSON")
        }
    }

    @Test("refuses nesting deeper than the limit, without exhausting the stack")
    func depth() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(code(deep) == "invalidJSON")
        let fine = String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
        #expect(code(fine) == nil)
    }

    @Test("string limits count UTF-8 bytes once unescaped, and name the field")
    func stringLimits() throws {
        let postalCode = String(repeating: "9", count: 32)
        #expect(code(#"{"shippingContact":{"postalCode":"\#(postalCode)"}}"#) == nil)
        guard case .failure(let error) = scan(#"{"shippingContact":{"postalCode":"\#(postalCode)9"}}"#) else {
            Issue.record("a 33-byte postal code was accepted")
            return
        }
        #expect(error.code == "fieldTooLong")
        #expect(error.field == "shippingContact.postalCode")
        // 16 × "é" is 32 bytes, written raw or escaped; 4 × "😀" through surrogate pairs is 16 bytes.
        #expect(code(#"{"postalCode":"\#(String(repeating: "é", count: 16))"}"#) == nil)
        #expect(code(#"{"postalCode":"\#(String(repeating: "\\u00e9", count: 16))"}"#) == nil)
        #expect(code(#"{"postalCode":"\#(String(repeating: "\\u00e9", count: 17))"}"#) == "fieldTooLong")
        #expect(code(#"{"countryCode":"\#(String(repeating: "\\ud83d\\ude00", count: 2))"}"#) == nil)
        #expect(code(#"{"countryCode":"\#(String(repeating: "\\ud83d\\ude00", count: 2))x"}"#) == "fieldTooLong")
    }

    @Test("array limits go by the array's name; element paths carry their index")
    func arrayLimits() {
        let lines = (0..<8).map { _ in #""x""# }.joined(separator: ",")
        #expect(code(#"{"shippingContact":{"addressLines":[\#(lines)]}}"#) == nil)
        guard case .failure(let error) = scan(#"{"shippingContact":{"addressLines":[\#(lines),"x"]}}"#) else {
            Issue.record("nine address lines were accepted")
            return
        }
        #expect(error.field == "shippingContact.addressLines")
        let long = String(repeating: "a", count: 257)
        guard case .failure(let element) = scan(#"{"shippingContact":{"addressLines":["a","\#(long)"]}}"#) else {
            Issue.record("a 257-byte address line was accepted")
            return
        }
        #expect(element.field == "shippingContact.addressLines[1]")
        #expect(code("[" + (0..<101).map(String.init).joined(separator: ",") + "]") == "fieldTooLong")
    }

    @Test("a long field name is refused; the token's paymentData is left to the token parser")
    func namesAndExemptions() {
        #expect(code(#"{"\#(String(repeating: "k", count: 257))":1}"#) == "fieldTooLong")
        let long = String(repeating: "A", count: 5_000)
        #expect(code(#"{"token":{"paymentData":{"data":"\#(long)"}}}"#) == nil)
        #expect(code(#"{"token":{"paymentMethod":{"displayName":"\#(long)"}}}"#) == "fieldTooLong")
    }

    @Test("notes where each top-level member's value lies")
    func members() throws {
        let text = #" { "token" : {"a": [1, "}"]} , "b":"x", "token2": 7 } "#
        let scanner = try scan(text).get()
        let bytes = Array(text.utf8)
        let token = try #require(scanner.members["token"])
        #expect(String(decoding: bytes[token], as: UTF8.self) == #"{"a": [1, "}"]}"#)
        let number = try #require(scanner.members["token2"])
        #expect(String(decoding: bytes[number], as: UTF8.self) == "7")
        #expect(scanner.members["a"] == nil)
    }
}
