import Foundation
import Foundations
import PaymentToken
import TestSupport
import Testing

@Suite("Garbage in any field gives a stable code, never a crash or a hang")
struct GarbageTests {
    static let fixture = "gala-2021-ec"

    @Test("not a token at all: malformedToken or unsupportedVersion")
    func notTokens() throws {
        let verifier = try PaymentTokenVerifier()
        let cases: [(String, PaymentTokenError.Code)] = [
            ("", .malformedToken), ("{}", .malformedToken), ("[]", .malformedToken), ("null", .malformedToken),
            ("{\"version\":\"EC_v1\"", .malformedToken), ("{\"paymentData\":5}", .malformedToken),
            ("{\"version\":\"EC_v2\",\"header\":{}}", .unsupportedVersion),
            ("{\"version\":\"EC_v1\",\"data\":\"AAAA\",\"signature\":\"AAAA\",\"header\":{}}", .malformedToken),
            ("{\"version\":\"EC_v1\",\"version\":\"EC_v1\"}", .malformedToken),
            ("\u{FEFF}{}", .malformedToken), ("{\"a\":\"\\ud800\"}", .malformedToken), ("{\"a\":01}", .malformedToken),
        ]
        for (text, code) in cases {
            expectCode(code) { try verifier.verify(jsonData: Data(text.utf8)) }
        }
        expectCode(.malformedToken) { try verifier.verify(jsonData: Data([0xff, 0xfe, 0x00])) }
        expectCode(.malformedToken) { try verifier.verify(jsonData: Data(String(repeating: "[", count: 100_000).utf8)) }
        // 10 MB of JSON is refused by size before it is parsed.
        let huge = Data(("{\"data\":\"" + String(repeating: "A", count: 10 * 1024 * 1024) + "\"}").utf8)
        let started = Date()
        expectCode(.malformedToken) { try verifier.verify(jsonData: huge) }
        #expect(Date().timeIntervalSince(started) < 2)
    }

    @Test("garbage in each field of a real token")
    func garbageFields() throws {
        let fixture = try TokenFixture(Self.fixture)
        let decryptor = try fixture.decryptor()
        func with(_ change: @escaping (inout [String: Any]) -> Void) throws -> Data {
            try fixture.modified { change(&$0) }
        }
        func header(_ key: String, _ value: Any?) throws -> Data {
            try with { paymentData in
                var header = paymentData["header"] as? [String: Any] ?? [:]
                header[key] = value
                paymentData["header"] = header
            }
        }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: with { $0["data"] = "not base64!" }) }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: with { $0["data"] = 42 }) }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: with { $0["signature"] = "@@@@" }) }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: with { $0["header"] = "x" }) }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: header("ephemeralPublicKey", nil)) }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: header("transactionId", "xyz")) }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: header("publicKeyHash", "AAAA")) }
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: header("applicationData", "abc")) }
        expectCode(.unsupportedVersion) { try decryptor.decrypt(jsonData: with { $0["version"] = "RSA_v2" }) }
        // A well-formed EC_v1 token whose "signature" is random bytes or a truncated CMS.
        expectCode(.malformedSignature) {
            try decryptor.decrypt(
                jsonData: with { $0["signature"] = Data(repeating: 7, count: 300).base64EncodedString() })
        }
        expectCode(.malformedSignature) {
            try decryptor.decrypt(
                jsonData: with { $0["signature"] = Data([0x30, 0x80, 0x06, 0x09]).base64EncodedString() })
        }
        // The version says RSA_v1 but the token is signed with ECDSA (and has no wrappedKey): refused before decryption.
        expectCode(.malformedToken) { try decryptor.decrypt(jsonData: with { $0["version"] = "RSA_v1" }) }
        // An ephemeral key that is not on the curve: the signature check fails first, as it covers the key.
        var offCurve =
            Data(
                base64Encoded: ((try JSONSerialization.jsonObject(with: fixture.tokenJSON) as? [String: Any])?["header"]
                    as? [String: Any])?["ephemeralPublicKey"] as? String ?? "") ?? Data()
        offCurve[offCurve.count - 1] ^= 1
        expectCode(.signatureInvalid) {
            try decryptor.decrypt(jsonData: header("ephemeralPublicKey", offCurve.base64EncodedString()))
        }
    }
}
