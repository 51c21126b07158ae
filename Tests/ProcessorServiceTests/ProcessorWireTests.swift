import Foundation
import ProcessorAPI
import Testing

/// A charge's body and answer without Codable: the bytes `JSONEncoder` writes, the envelope `JSONDecoder` reads.
@Suite("ProcessorWire: the charge body and answer without Codable")
struct ProcessorWireTests {
    static func encoded(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    static let bodies: [CreateChargeBody] = [
        CreateChargeBody(
            idempotencyKey: String(repeating: "ab", count: 32), amount: 1,
            currencyCode: "USD",
            paymentMethod: PaymentMethodBody(
                network: "Visa", primaryAccountNumber: "4761120010000492", expirationDate: "291231",
                cryptogram: "AQIDBAUGBwgJCgsMDQ4PEBES+/==", eciIndicator: "07"),
            rootFingerprint: String(repeating: "0f", count: 32), storePaymentMethod: true),
        CreateChargeBody(
            idempotencyKey: "k", amount: .max, currencyCode: "JPY",
            paymentMethod: PaymentMethodBody(
                network: nil, primaryAccountNumber: "5204240250197840", expirationDate: "300101",
                emvData: "n/a \"quoted\" \\ é", encryptedPINData: "0A0B"),
            rootFingerprint: nil),
    ]

    @Test("the charge body is byte for byte JSONEncoder's with sorted keys and unescaped slashes")
    func bodyBytes() throws {
        for body in Self.bodies { #expect(body.jsonData == (try Self.encoded(body))) }
    }

    @Test("the charge answer reads as JSONDecoder reads it, optional fields present or not")
    func answerReads() throws {
        let full = ChargeResource(
            reference: "ch_1", idempotencyKey: "key", amount: 2599, currencyCode: "EUR", status: .partiallyRefunded,
            refundedAmount: 100, declineCode: nil, network: "MasterCard", lastFour: "7840",
            createdAt: "2026-12-01T18:16:00Z", paymentMethodReference: "pm_1")
        let declined = ChargeResource(
            reference: "ch_2", idempotencyKey: "key2", amount: 1, currencyCode: "USD", status: .declined,
            declineCode: "insufficientFunds", createdAt: "2026-12-01T18:16:01Z")
        for charge in [full, declined] {
            let data = try Self.encoded(ChargeEnvelope(charge: charge))
            #expect(ChargeEnvelope(wireJSON: data) == (try JSONDecoder().decode(ChargeEnvelope.self, from: data)))
            #expect(ChargeEnvelope(wireJSON: data)?.charge == charge)
        }
    }

    @Test(
        "an answer of another shape is left to JSONDecoder",
        arguments: [
            #"{"charge":{"amount":1,"createdAt":"t","currencyCode":"USD","idempotencyKey":"k","reference":"r","#
                + #""refundedAmount":0,"status":"pending"}}"#,
            #"{"charge":{"amount":1.0,"createdAt":"t","currencyCode":"USD","idempotencyKey":"k","reference":"r","#
                + #""refundedAmount":0,"status":"approved"}}"#,
            #"{"charge":{"createdAt":"t","currencyCode":"USD","idempotencyKey":"k","reference":"r","#
                + #""refundedAmount":0,"status":"approved"}}"#,
            #"{"error":{"code":"x","message":"y"}}"#,
            #"{"charge":null}"#,
            "not json",
        ])
    func otherShapes(text: String) {
        #expect(ChargeEnvelope(wireJSON: Data(text.utf8)) == nil)
    }
}
