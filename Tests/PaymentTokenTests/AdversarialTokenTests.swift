import Cryptography
import Foundation
import PaymentToken
import TestSupport
import Testing

@Suite("Adversarial token JSON and header fields: what is signed is what is used")
struct AdversarialTokenTests {
    /// A real decryptable token with no applicationData, and its decryptor at its own signing time.
    static func gala() throws -> (TokenFixture, PaymentTokenDecryptor) {
        let fixture = try TokenFixture("gala-2021-ec")
        return (fixture, try fixture.decryptor())
    }

    /// The bare paymentData text of a fixture, with `header` replaced by `headerText` (raw JSON).
    static func withHeader(_ fixture: TokenFixture, _ headerText: (String) -> String) throws -> Data {
        let object = try #require(JSONSerialization.jsonObject(with: fixture.tokenJSON) as? [String: Any])
        let paymentData = (object["paymentData"] as? [String: Any]) ?? object
        let header = try #require(paymentData["header"] as? [String: String])
        let members = header.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\"\($0.value)\"" }.joined(separator: ",")
        let rest = try JSONSerialization.data(withJSONObject: paymentData.filter { $0.key != "header" })
        var text = String(decoding: rest, as: UTF8.self)
        text.removeLast()
        return Data((text + ",\"header\":" + headerText(members) + "}").utf8)
    }

    @Test("bytes moved between transactionId and applicationData keep the signature valid: refused (replay key)")
    func fieldBoundaries() throws {
        let (fixture, decryptor) = try Self.gala()
        let original = try decryptor.decrypt(jsonData: fixture.tokenJSON)
        // The signature covers key ‖ data ‖ transactionId ‖ applicationData with no lengths: move the last byte of
        // transactionId into a new applicationData. Before the fix this decrypted with a different transactionId,
        // i.e. a fresh idempotency key for the same payment.
        let id = original.verification.transactionId
        let shifted = try fixture.modified { paymentData in
            var header = paymentData["header"] as? [String: Any] ?? [:]
            header["transactionId"] = String(id.dropLast(2))
            header["applicationData"] = String(id.suffix(2))
            paymentData["header"] = header
        }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: shifted) }
        expectCode(.malformedToken) { try decryptor.verifier.verify(jsonData: shifted) }
        // A longer transactionId (applicationData appended to it) or a short applicationData: refused too.
        let longer = try fixture.modified { paymentData in
            var header = paymentData["header"] as? [String: Any] ?? [:]
            header["transactionId"] = id + String(repeating: "00", count: 32)
            paymentData["header"] = header
        }
        expectCode(.malformedToken) { try decryptor.verifier.verify(jsonData: longer) }
    }

    @Test("verification alone cannot pin transactionId when applicationData appears: decryption does")
    func verifyOnlyBoundary() throws {
        let (fixture, decryptor) = try Self.gala()
        let original = try decryptor.decrypt(jsonData: fixture.tokenJSON).verification.transactionId
        // data loses its last 32 bytes, which become transactionId; the old transactionId becomes applicationData.
        // Every field keeps its fixed length and the concatenation is unchanged.
        let moved = try fixture.modified { paymentData in
            var data = Data(base64Encoded: paymentData["data"] as? String ?? "") ?? Data()
            let tail = data.suffix(32)
            data.removeLast(32)
            var header = paymentData["header"] as? [String: Any] ?? [:]
            header["applicationData"] = header["transactionId"]
            header["transactionId"] = tail.map { String(format: "%02x", $0) }.joined()
            paymentData["header"] = header
            paymentData["data"] = data.base64EncodedString()
        }
        // Documented limitation of Apple's format: the signature still verifies, with another transactionId...
        let verified = try decryptor.verifier.verify(jsonData: moved)
        #expect(verified.transactionId != original)
        #expect(verified.applicationData != nil)
        // ...but data has changed, so opening it fails (AES-GCM authenticates data).
        expectCode(.decryptionFailed) { try decryptor.decrypt(jsonData: moved) }
    }

    @Test("duplicate members, also spelled with escapes: malformedToken, never first-wins or last-wins")
    func duplicateKeys() throws {
        let (fixture, decryptor) = try Self.gala()
        let original = try decryptor.decrypt(jsonData: fixture.tokenJSON).verification.transactionId
        let other = String(repeating: "ab", count: 32)
        let plain = try Self.withHeader(fixture) { "{\($0),\"transactionId\":\"\(other)\"}" }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: plain) }
        let escaped = try Self.withHeader(fixture) { "{\($0),\"transacti\\u006fnId\":\"\(other)\"}" }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: escaped) }
        // The header rebuilt without duplicates still opens (the helper itself is sound).
        let rebuilt = try Self.withHeader(fixture) { "{\($0)}" }
        #expect(try decryptor.decrypt(jsonData: rebuilt).verification.transactionId == original)
        // An escaped but equal key on its own is the same member.
        let escapedAlone = try Self.withHeader(fixture) {
            "{\($0.replacingOccurrences(of: "\"publicKeyHash\"", with: "\"publicKeyH\\u0061sh\""))}"
        }
        #expect(try decryptor.decrypt(jsonData: escapedAlone).verification.transactionId == original)
    }

    @Test("field types and encodings: numbers for strings, base64 variants, hex case and length, sizes, depth")
    func encodings() throws {
        let (fixture, decryptor) = try Self.gala()
        let original = try decryptor.decrypt(jsonData: fixture.tokenJSON)
        func header(_ name: String, _ value: Any?) throws -> Data {
            try fixture.modified { paymentData in
                var header = paymentData["header"] as? [String: Any] ?? [:]
                header[name] = value
                paymentData["header"] = header
            }
        }
        func top(_ change: @escaping (inout [String: Any]) -> Void) throws -> Data { try fixture.modified(change) }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: header("transactionId", 12345)) }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: header("transactionId", "")) }
        expectCode(.malformedToken) {
            try decryptor.decrypt(
                jsonData: header("transactionId", String(original.verification.transactionId.dropLast())))
        }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: header("applicationData", "")) }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: header("applicationData", 7)) }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: header("publicKeyHash", ["a"])) }
        // Uppercase hex is the same bytes: it opens, and the replay key is the same lowercase string.
        let upper = try decryptor.decrypt(
            jsonData: header("transactionId", original.verification.transactionId.uppercased()))
        #expect(upper.verification.transactionId == original.verification.transactionId)
        // applicationData: null is absent.
        #expect(
            try decryptor.decrypt(jsonData: header("applicationData", NSNull())).verification.applicationData == nil)
        // An applicationData the signature does not cover: signatureInvalid.
        expectCode(.signatureInvalid) {
            try decryptor.decrypt(jsonData: header("applicationData", String(repeating: "0", count: 64)))
        }
        // base64 with line breaks, or in the URL-safe alphabet: refused, not silently re-decoded.
        let dataText = try #require(
            (JSONSerialization.jsonObject(with: fixture.tokenJSON) as? [String: Any]).flatMap {
                (($0["paymentData"] as? [String: Any]) ?? $0)["data"] as? String
            })
        expectCode(.malformedToken) {
            try decryptor.decrypt(
                jsonData: top { $0["data"] = String(dataText.prefix(8)) + "\n" + dataText.dropFirst(8) })
        }
        expectCode(.malformedToken) {
            try decryptor.decrypt(jsonData: top { $0["data"] = " " + dataText })
        }
        let urlSafe = dataText.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        if urlSafe != dataText {
            expectCode(.malformedToken) { try decryptor.decrypt(jsonData: top { $0["data"] = urlSafe }) }
        }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: top { $0["data"] = 42 }) }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: top { $0["version"] = 1 }) }
        expectCode(.unsupportedVersion) { try decryptor.decrypt(jsonData: top { $0["version"] = "EC_v2" }) }
        // Huge strings and deep nesting: refused quickly.
        expectCode(.malformedToken) {
            try decryptor.decrypt(jsonData: top { $0["extra"] = String(repeating: "A", count: 300_000) })
        }
        expectCode(.malformedToken) {
            try decryptor.decrypt(
                jsonData: Data((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8))
        }
        expectCode(.malformedToken) {
            try decryptor.decrypt(
                jsonData: Data(
                    ("{\"a\":" + String(repeating: "{\"a\":", count: 40) + "1" + String(repeating: "}", count: 41)).utf8
                ))
        }
        expectCode(.malformedToken) {
            try decryptor.decrypt(jsonData: Data("{\"version\":\"EC_v1\",\"data\":\"\\ud800\"}".utf8))
        }
        expectCode(.malformedToken) {
            try decryptor.decrypt(jsonData: Data("{\"version\":\"EC_v1\",\"header\":{}}".utf8))
        }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: Data()) }
    }

    @Test("expected applicationData: a token without one, or with another, is applicationDataMismatch")
    func applicationDataExpectations() throws {
        let (fixture, decryptor) = try Self.gala()
        expectCode(.applicationDataMismatch) {
            try decryptor.decrypt(
                jsonData: fixture.tokenJSON, expecting: .init(applicationData: .bytes(Data("x".utf8))))
        }
        expectCode(.applicationDataMismatch) {
            try decryptor.decrypt(jsonData: fixture.tokenJSON, expecting: .init(applicationData: .sha256Hex("zz")))
        }
    }
}
