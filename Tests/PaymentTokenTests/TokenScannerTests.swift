import Foundation
import Foundations
@_spi(Testing) import PaymentToken
import Testing

/// `PaymentToken(jsonData:)` reads tokens with a one-pass scanner; `init(treeReadingJSONData:)` is the tree reader it
/// replaced. For any input both must give the same token or the same error code.
@Suite("The token scanner reads exactly what the tree reader read")
struct TokenScannerTests {
    /// What a reader made of an input: the token's fields, or the error code.
    enum Outcome: Equatable, CustomStringConvertible {
        case token(
            version: String, fields: [[UInt8]], applicationData: [UInt8]?, method: [String?]?, identifier: String?)
        case error(String)

        init(_ read: () throws(PaymentTokenError) -> PaymentToken) {
            do {
                let token = try read()
                self = .token(
                    version: token.version.rawValue,
                    fields: [token.data, token.signature, token.keyMaterial, token.publicKeyHash, token.transactionId],
                    applicationData: token.applicationData,
                    method: token.paymentMethod.map { [$0.displayName, $0.network, $0.type] },
                    identifier: token.transactionIdentifier)
            } catch {
                self = .error(error.code.rawValue)
            }
        }

        var description: String {
            switch self {
            case .token(let version, _, let applicationData, let method, let identifier):
                "token(\(version), applicationData: \(applicationData != nil), method: \(method.map { "\($0)" } ?? "nil"), identifier: \(identifier ?? "nil"))"
            case .error(let code): "error(\(code))"
            }
        }
    }

    static func compare(_ input: Data, sourceLocation: SourceLocation = #_sourceLocation) {
        let scanned = Outcome { () throws(PaymentTokenError) in try PaymentToken(jsonData: input) }
        let tree = Outcome { () throws(PaymentTokenError) in try PaymentToken(treeReadingJSONData: input) }
        // Also as [UInt8], the other common way bytes arrive.
        let array = Outcome { () throws(PaymentTokenError) in try PaymentToken(jsonData: Array(input)) }
        #expect(
            scanned == tree, "\(String(decoding: input.prefix(200), as: UTF8.self))", sourceLocation: sourceLocation)
        #expect(array == tree, sourceLocation: sourceLocation)
    }

    static func compare(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        compare(Data(text.utf8), sourceLocation: sourceLocation)
    }

    @Test("real tokens, whole and as bare paymentData", arguments: TokenFixture.all)
    func realTokens(folder: String) throws {
        let fixture = try TokenFixture(folder)
        Self.compare(fixture.tokenJSON)
        let top = try #require(JSONSerialization.jsonObject(with: fixture.tokenJSON) as? [String: Any])
        if let nested = top["paymentData"] {
            Self.compare(try JSONSerialization.data(withJSONObject: nested))
        } else {
            Self.compare(try JSONSerialization.data(withJSONObject: ["paymentData": top]))
        }
        // JSONSerialization writes "\/": base64 with escapes must decode the same.
        let escaped = String(decoding: fixture.tokenJSON, as: UTF8.self).replacingOccurrences(of: "/", with: "\\/")
        Self.compare(escaped)
        let unicodeEscaped = String(decoding: fixture.tokenJSON, as: UTF8.self)
            .replacingOccurrences(of: "\"version\"", with: "\"v\\u0065rsion\"")
            .replacingOccurrences(of: "\"EC_v1\"", with: "\"EC\\u005fv1\"")
        Self.compare(unicodeEscaped)
    }

    @Test("every truncation of a real token")
    func truncations() throws {
        let json = try TokenFixture("gala-2021-ec").tokenJSON
        for length in 0..<json.count { Self.compare(json.prefix(length)) }
    }

    @Test("one byte replaced at every position of a real token's structure")
    func replacements() throws {
        let json = Array(try TokenFixture("basistheory-2024-rsa").tokenJSON)
        let replacements = Array("\"{}[],:\\ x0-.nte\u{7f}".utf8) + [0x00, 0x0a, 0xff]
        for position in json.indices {
            // Positions inside long base64 runs all behave alike: sample them.
            if position > 0, position + 1 < json.count, Self.isBase64(json[position - 1]),
                Self.isBase64(json[position]),
                Self.isBase64(json[position + 1]), position % 97 != 0
            {
                continue
            }
            for byte in replacements where byte != json[position] {
                var changed = json
                changed[position] = byte
                Self.compare(Data(changed))
            }
            var removed = json
            removed.remove(at: position)
            Self.compare(Data(removed))
        }
    }

    static func isBase64(_ byte: UInt8) -> Bool {
        (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2b
            || byte == 0x2f
    }

    @Test("shapes: wrong types, nulls, duplicates, nesting, numbers, whitespace")
    func shapes() throws {
        let hash = String(repeating: "AB", count: 32)
        let key = Data(repeating: 4, count: 65).base64EncodedString()
        let pkh = Data(repeating: 9, count: 32).base64EncodedString()
        func header(_ extra: String = "") -> String {
            #"{"ephemeralPublicKey":"\#(key)","publicKeyHash":"\#(pkh)","transactionId":"\#(hash)"\#(extra)}"#
        }
        func paymentData(version: String = #""EC_v1""#, header: String = header(), extra: String = "") -> String {
            #"{"version":\#(version),"data":"AAAA","signature":"AAAA","header":\#(header)\#(extra)}"#
        }
        let cases = [
            paymentData(), paymentData(version: #""RSA_v1""#), paymentData(version: #""EC_v2""#),
            paymentData(version: "null"), paymentData(version: "1"), paymentData(version: #""EC_v1\u0000""#),
            paymentData(version: "\"\u{FF}\""), paymentData(header: "null"), paymentData(header: "[]"),
            paymentData(header: header(#","applicationData":null"#)),
            paymentData(header: header(#","applicationData":"\#(hash)""#)),
            paymentData(header: header(#","applicationData":"\#(hash.prefix(62))""#)),
            paymentData(header: header(#","applicationData":7"#)),
            paymentData(header: header(#","applicationData":"\#(hash)","applicationData":null"#)),
            paymentData(header: header(#","wrappedKey":"AAAA""#)),
            paymentData(header: header(#","extra":{"a":[1,2,{}]}"#)),
            paymentData(extra: #","version":"EC_v1""#), paymentData(extra: #","v\u0065rsion":"EC_v1""#),
            paymentData(extra: #","n":-0.5e+10"#), paymentData(extra: #","n":1e400"#),
            paymentData(extra: #","n":"# + String(repeating: "9", count: 64)),
            paymentData(extra: #","n":"# + String(repeating: "9", count: 65)), paymentData(extra: #","n":01"#),
            paymentData(extra: #","n":-"#), paymentData(extra: #","n":1."#), paymentData(extra: #","n":[tru]"#),
            paymentData(extra: #","deep":"# + String(repeating: "[", count: 30) + String(repeating: "]", count: 30)),
            paymentData(extra: #","deep":"# + String(repeating: "[", count: 31) + String(repeating: "]", count: 31)),
            paymentData(extra: #","s":"\ud83d\ude00""#), paymentData(extra: #","s":"\ud83d""#),
            paymentData(extra: #","s":"\q""#), paymentData(extra: "\n\t\r "), " \n" + paymentData() + " \n",
            paymentData() + "x", paymentData() + "{}",
            #"{"paymentData":\#(paymentData()),"paymentMethod":{"displayName":"Visa 0492","network":"Visa","type":"debit"},"transactionIdentifier":"ABC"}"#,
            #"{"paymentData":\#(paymentData()),"paymentMethod":{"displayName":5,"network":null},"transactionIdentifier":7}"#,
            #"{"paymentData":\#(paymentData()),"paymentMethod":"Visa"}"#,
            #"{"paymentData":\#(paymentData()),"paymentMethod":{"type":"\u00e9"}}"#,
            #"{"paymentData":\#(paymentData()),"paymentData":\#(paymentData())}"#,
            #"{"paymentData":null}"#, #"{"paymentData":"x"}"#, #"{"paymentData":{}}"#,
            #"{"paymentData":\#(paymentData()),"version":"RSA_v1","header":5}"#,
            #"{"header":\#(header()),"paymentData":\#(paymentData(header: "7"))}"#, "[\(paymentData())]", "\"x\"",
            "{", "}", "", " ", "nul", "{\"a\"}", "{\"a\":}", "{,}", "{\"a\":1,}", "[1,]",
        ]
        for text in cases { Self.compare(text) }
        // Many members: the limit is 512 per object (paymentData has 4 of its own).
        let members = (0..<508).map { #","m\#($0)":0"# }.joined()
        Self.compare(paymentData(extra: members))
        Self.compare(paymentData(extra: members + #","m508":0"#))
        Self.compare(paymentData(header: header(members)))
    }
}
