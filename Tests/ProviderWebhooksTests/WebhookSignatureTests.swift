import ApplePay
import Foundation
import Foundations
import MerchantCore
import TestSupport
import Testing

@testable import ProviderWebhooks

/// The providers' published data (``TestSupport/Repository/pspVectors``).
let pspFolder = Repository.pspVectors

@Suite("Webhook signatures: Stripe, Adyen, Checkout.com")
struct WebhookSignatureTests {
    @Test("Adyen's signed text is the eight fields of each vector's item, joined as the libraries join them")
    func adyenSignedText() throws {
        let file = pspFolder.appendingPathComponent("webhook-vectors.json")
        let vectors = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [[String: Any]])
        var checked = 0
        for vector in vectors where vector["psp"] as? String == "adyen" {
            let payload = vector["payload"] as? String ?? ""
            guard let signed = vector["signed_data"] as? String, signed != payload,
                let item = try? JSONValue(parsing: Data(payload.utf8)), item["eventCode"] != nil
            else { continue }
            #expect(AdyenSignature.signedText(of: item) == signed, "\(vector["id"] ?? "")")
            checked += 1
        }
        #expect(checked == 7)
    }

    @Test("Checkout.com: Cko-Signature is the hex HMAC-SHA256 of the raw body (openssl's answer); any change fails")
    func checkout() async throws {
        let body =
            #"{"id":"evt_az5sblvku4ge3dwpztvyizgcau","type":"payment_captured","data":{"id":"pay_1","amount":1000}}"#
        let key = "8d6e5f0c-4a3b-4f5e-9c0d-checkout-secret"
        let openssl = try await Subprocess.run(
            "openssl", ["dgst", "-sha256", "-hmac", key, "-r"], input: Data(body.utf8))
        let hex = try #require(openssl.standardOutput.split(separator: " ").first.map(String.init))
        let secret = try #require(WebhookSecret(text: key + "\n"))
        #expect(CheckoutSignature.verify(body: Data(body.utf8), header: hex, secret: secret) == .valid)
        #expect(
            CheckoutSignature.verify(body: Data((body + " ").utf8), header: hex, secret: secret).reason
                == .signatureMismatch)
        #expect(
            CheckoutSignature.verify(body: Data(body.utf8), header: nil, secret: secret).reason == .missingSignature)
        let other = try #require(WebhookSecret(text: key + "x"))
        #expect(!CheckoutSignature.verify(body: Data(body.utf8), header: hex, secret: other).isValid)
    }

    @Test("Stripe: several v1 signatures, one matching; a timestamp too far either side; the secret never shown")
    func stripe() throws {
        let secret = try #require(WebhookSecret(text: "whsec_test_secret"))
        let payload = Data(#"{"id":"evt_1","object":"event"}"#.utf8)
        let t: Int64 = 1_700_000_000
        let mac = try #require(secret.mac(Array("\(t).".utf8) + Array(payload)))
        let header = "t=\(t),v1=\(String(repeating: "0", count: 64)),v1=\(lowercaseHex(mac))"
        let at = Date(timeIntervalSince1970: TimeInterval(t))
        #expect(StripeSignature.verify(payload: payload, header: header, secret: secret, now: at + 299) == .valid)
        #expect(
            StripeSignature.verify(payload: payload, header: header, secret: secret, now: at + 301).reason
                == .timestampOutsideTolerance)
        #expect(
            StripeSignature.verify(payload: payload, header: header, secret: secret, now: at - 301).reason
                == .timestampOutsideTolerance)
        #expect(
            StripeSignature.verify(payload: payload, header: "t=x,v1=\(lowercaseHex(mac))", secret: secret, now: at)
                .reason == .malformedHeader)
        #expect(!"\(secret)".contains("whsec") && !String(reflecting: secret).contains("whsec"))
    }

    @Test("Adyen: a notification with several items is valid only when every item is signed")
    func adyenNotification() throws {
        let key = try #require(WebhookSecret(hex: "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"))
        func item(_ psp: String, sign: Bool) throws -> JSONValue {
            var fields: [String: JSONValue] = [
                "pspReference": .string(psp), "merchantAccountCode": .string("M"), "merchantReference": .string("r"),
                "amount": .object(["value": .number(1000), "currency": .string("EUR")]),
                "eventCode": .string("AUTHORISATION"), "success": .string("true"),
            ]
            let mac = try #require(key.mac(Data(AdyenSignature.signedText(of: .object(fields)).utf8)))
            fields["additionalData"] = .object(["hmacSignature": .string(sign ? mac.base64EncodedString() : "x")])
            return .object(["NotificationRequestItem": .object(fields)])
        }
        func body(_ items: [JSONValue]) throws -> Data {
            try JSONEncoder().encode(JSONValue.object(["live": .string("false"), "notificationItems": .array(items)]))
        }
        #expect(
            AdyenSignature.verify(notification: try body([item("A", sign: true), item("B", sign: true)]), key: key)
                .isValid)
        #expect(
            AdyenSignature.verify(notification: try body([item("A", sign: true), item("B", sign: false)]), key: key)
                .reason == .signatureMismatch)
        #expect(AdyenSignature.verify(notification: try body([]), key: key).reason == .malformedPayload)
        #expect(AdyenSignature.verify(notification: Data("[accepted]".utf8), key: key).reason == .malformedPayload)
        #expect(WebhookSecret(hex: "not hex") == nil)
        // Read by the one JSON grammar within limits before any signature: too deep, or a name twice, is no
        // notification.
        let deep = Data((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8)
        #expect(AdyenSignature.verify(notification: deep, key: key).reason == .malformedPayload)
        let twice = Data(#"{"pspReference":"A","pspReference":"B","eventCode":"AUTHORISATION"}"#.utf8)
        #expect(AdyenSignature.verify(notification: twice, key: key).reason == .malformedPayload)
    }

    @Test("a secret file open to group or others is refused; an owner-only one is read")
    func secretFiles() throws {
        let folder = try TemporaryDirectory(prefix: "webhook-secret")
        defer { folder.remove() }
        let path = folder.path("adyen.hmac")
        try Data("44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056\n".utf8).write(
            to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: path)
        #expect(throws: (any Error).self) { try WebhookEndpoint.readSecret(.adyen, path: path) }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let secret = try WebhookEndpoint.readSecret(.adyen, path: path)
        #expect("\(secret)" == "WebhookSecret(32 bytes)")
        try Data("zz".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: (any Error).self) { try WebhookEndpoint.readSecret(.adyen, path: path) }
    }
}
