import Cryptography
import Foundation
import Foundations
import PaymentToken
import TestSupport
import Testing

/// One folder of `Tests/Fixtures/apple-pay-tokens`.
struct TokenFixture: Sendable, CustomStringConvertible {
    let folder: String
    let tokenJSON: Data
    let signingTime: Date
    let version: String
    let merchantIdentifier: String?
    let certificatePEM: String?
    let keyPEM: String?
    let expectedJSON: Data?

    static let all = [
        "gala-2021-ec", "gala-2014-ec", "payu-2018-sandbox-ec", "basistheory-2023a-ec", "basistheory-2023b-ec",
        "basistheory-2024-rsa", "processout-2017-ec", "processout-2017-rsa",
    ]
    static let decryptable = [
        "gala-2021-ec", "gala-2014-ec", "payu-2018-sandbox-ec", "basistheory-2023a-ec", "basistheory-2023b-ec",
        "basistheory-2024-rsa",
    ]
    static let verifyOnly = ["processout-2017-ec", "processout-2017-rsa"]

    var description: String { folder }

    init(_ folder: String) throws {
        self.folder = folder
        let url = Repository.appleTokenVectors.appendingPathComponent(folder)
        func optional(_ name: String) -> Data? { try? Data(contentsOf: url.appendingPathComponent(name)) }
        tokenJSON = try Data(contentsOf: url.appendingPathComponent("token.json"))
        let meta = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: url.appendingPathComponent("meta.json")))
                as? [String: Any])
        signingTime = try #require(ISO8601DateFormatter().date(from: meta["signingTime"] as? String ?? ""))
        version = meta["version"] as? String ?? ""
        merchantIdentifier = meta["merchantIdentifier"] as? String
        certificatePEM = optional("merchant-cert.pem").map { String(decoding: $0, as: UTF8.self) }
        keyPEM = optional("merchant-key.pem").map { String(decoding: $0, as: UTF8.self) }
        expectedJSON = optional("expected.json")
    }

    /// The merchant identity: certificate + key, or bare key + merchant identifier.
    func identity() throws -> MerchantIdentity {
        let key = try PrivateKey(pem: try #require(keyPEM))
        if let certificatePEM {
            return try MerchantIdentity(certificate: Certificate(pem: certificatePEM), privateKey: key)
        }
        return try MerchantIdentity(privateKey: key, merchantIdentifier: try #require(merchantIdentifier))
    }

    /// A verifier whose clock reads the token's signing time plus `offset`.
    func verifier(offset: TimeInterval = 0, maximumAge: TimeInterval = 300, roots: [Certificate]? = nil) throws
        -> PaymentTokenVerifier
    {
        let now = signingTime.addingTimeInterval(offset)
        return try PaymentTokenVerifier(roots: roots, maximumAge: maximumAge, now: { now })
    }

    func decryptor(offset: TimeInterval = 0, merchants: [MerchantIdentity]? = nil) throws -> PaymentTokenDecryptor {
        try PaymentTokenDecryptor(merchants: merchants ?? [identity()], verifier: verifier(offset: offset))
    }

    /// The token JSON with `change` applied to its `paymentData` object.
    func modified(_ change: (inout [String: Any]) throws -> Void) throws -> Data {
        var top = try #require(JSONSerialization.jsonObject(with: tokenJSON) as? [String: Any])
        if var nested = top["paymentData"] as? [String: Any] {
            try change(&nested)
            top["paymentData"] = nested
        } else {
            try change(&top)
        }
        return try JSONSerialization.data(withJSONObject: top)
    }

    /// The token with one bit flipped in the bytes of a base64 field of paymentData (or its header).
    func flippingBase64(_ field: String, inHeader: Bool, at position: (Int) -> Int) throws -> Data {
        try modified { paymentData in
            var header = paymentData["header"] as? [String: Any] ?? [:]
            let text = (inHeader ? header[field] : paymentData[field]) as? String ?? ""
            var bytes = try #require(Data(base64Encoded: text))
            bytes[position(bytes.count)] ^= 0x01
            if inHeader {
                header[field] = bytes.base64EncodedString()
                paymentData["header"] = header
            } else {
                paymentData[field] = bytes.base64EncodedString()
            }
        }
    }
}

/// Expects `body` to throw a `PaymentTokenError` with exactly `code`.
func expectCode<R>(
    _ code: PaymentTokenError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> R
) {
    do {
        _ = try body()
        Issue.record("expected \(code), but it succeeded", sourceLocation: sourceLocation)
    } catch let error as PaymentTokenError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected PaymentTokenError \(code), got \(error)", sourceLocation: sourceLocation)
    }
}
