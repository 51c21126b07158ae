import Cryptography
import Foundation
import PaymentToken
import TestSupport
import Testing

@Suite("Real Apple Pay tokens: verification and decryption at their own signing time")
struct RealTokenTests {
    @Test("tokens with keys decrypt to expected.json, field for field", arguments: TokenFixture.decryptable)
    func decryptsToExpected(folder: String) throws {
        let fixture = try TokenFixture(folder)
        let decrypted = try fixture.decryptor().decrypt(jsonData: fixture.tokenJSON)
        #expect(decrypted.verification.version.rawValue == fixture.version)
        #expect(decrypted.verification.signingTime == fixture.signingTime)
        let expectedData = try #require(fixture.expectedJSON)
        let expected = try #require(JSONSerialization.jsonObject(with: expectedData) as? NSDictionary)
        let encoder = JSONEncoder()
        let actual = try #require(
            JSONSerialization.jsonObject(with: encoder.encode(decrypted.payload)) as? NSDictionary)
        #expect(actual == expected)
        let payload = decrypted.payload
        #expect(payload.applicationPrimaryAccountNumber == expected["applicationPrimaryAccountNumber"] as? String)
        #expect(payload.transactionAmount == (expected["transactionAmount"] as? NSNumber)?.int64Value)
        #expect(payload.currencyCode == expected["currencyCode"] as? String)
        #expect(payload.paymentDataType == "3DSecure")
    }

    @Test("every token verifies at its own signing time", arguments: TokenFixture.all)
    func verifies(folder: String) throws {
        let fixture = try TokenFixture(folder)
        let verification = try fixture.verifier().verify(jsonData: fixture.tokenJSON)
        #expect(verification.signingTime == fixture.signingTime)
        #expect(verification.version.rawValue == fixture.version)
        #expect(verification.transactionId.count == 64)
        #expect(verification.signer.hasExtension(oid: ApplePayOID.leafMarker))
        // The signing time may be up to the window before or after now.
        _ = try fixture.verifier(offset: 299).verify(jsonData: fixture.tokenJSON)
        _ = try fixture.verifier(offset: -299).verify(jsonData: fixture.tokenJSON)
    }

    @Test("clocks and windows that must reject: exact codes", arguments: TokenFixture.all)
    func rejectsByTime(folder: String) throws {
        let fixture = try TokenFixture(folder)
        // An hour after signing, five-minute window: a replay.
        expectCode(.signingTimeOutOfRange) { try fixture.verifier(offset: 3600).verify(jsonData: fixture.tokenJSON) }
        // Signed "in the future".
        expectCode(.signingTimeOutOfRange) { try fixture.verifier(offset: -3600).verify(jsonData: fixture.tokenJSON) }
        // Today's wall clock with the default window: far too old.
        let wallClock = try PaymentTokenVerifier()
        expectCode(.signingTimeOutOfRange) { try wallClock.verify(jsonData: fixture.tokenJSON) }
        // Today's wall clock with a window of fifty years: validity is checked at the signing time, not today,
        // so the expired Apple leaf is still accepted.
        let lenient = try PaymentTokenVerifier(maximumAge: 50 * 366 * 86_400)
        _ = try lenient.verify(jsonData: fixture.tokenJSON)
        // A root that is not Apple's.
        let foreign = try Certificate(
            pem: String(
                contentsOf: Repository.appleTokenVectors.appendingPathComponent("gala-2021-ec/merchant-cert.pem"),
                encoding: .utf8))
        expectCode(.untrustedCertificateChain) {
            try fixture.verifier(roots: [foreign]).verify(jsonData: fixture.tokenJSON)
        }
    }

    @Test("tampered tokens fail with the exact code", arguments: TokenFixture.all)
    func rejectsTampering(folder: String) throws {
        let fixture = try TokenFixture(folder)
        let verifier = try fixture.verifier()
        let keyField = fixture.version == "EC_v1" ? "ephemeralPublicKey" : "wrappedKey"
        expectCode(.signatureInvalid) {
            try verifier.verify(jsonData: fixture.flippingBase64("data", inHeader: false) { $0 / 2 })
        }
        expectCode(.signatureInvalid) {
            try verifier.verify(jsonData: fixture.flippingBase64(keyField, inHeader: true) { $0 - 5 })
        }
        // A bit of the signature value itself (the ECDSA or RSA signature bytes inside the CMS).
        let flippedSignature = try fixture.modified { paymentData in
            var bytes = try #require(Data(base64Encoded: paymentData["signature"] as? String ?? ""))
            let value = try CMSSignedData(berEncoded: bytes).signature
            let range = try #require(bytes.range(of: value))
            bytes[range.upperBound - 4] ^= 0x01
            paymentData["signature"] = bytes.base64EncodedString()
        }
        expectCode(.signatureInvalid) { try verifier.verify(jsonData: flippedSignature) }
        let flippedTransaction = try fixture.modified { paymentData in
            var header = paymentData["header"] as? [String: Any] ?? [:]
            var id = Array((header["transactionId"] as? String ?? "").lowercased())
            id[0] = id[0] == "0" ? "1" : "0"
            header["transactionId"] = String(id)
            paymentData["header"] = header
        }
        expectCode(.signatureInvalid) { try verifier.verify(jsonData: flippedTransaction) }
        // applicationData that Apple did not sign.
        let extra = try fixture.modified { paymentData in
            var header = paymentData["header"] as? [String: Any] ?? [:]
            header["applicationData"] = String(repeating: "ab", count: 32)
            paymentData["header"] = header
        }
        expectCode(.signatureInvalid) { try verifier.verify(jsonData: extra) }
        // Truncated signature: not a CMS structure any more.
        let truncated = try fixture.modified { paymentData in
            let bytes = Data(base64Encoded: paymentData["signature"] as? String ?? "") ?? Data()
            paymentData["signature"] = bytes.prefix(bytes.count / 2).base64EncodedString()
        }
        expectCode(.malformedSignature) { try verifier.verify(jsonData: truncated) }
    }

    @Test("merchant checks: wrong key, wrong identifier, expectations, rotation", arguments: TokenFixture.decryptable)
    func merchantChecks(folder: String) throws {
        let fixture = try TokenFixture(folder)
        let identity = try fixture.identity()
        // Another merchant's key: no identity matches publicKeyHash.
        let otherFolder = folder == "gala-2021-ec" ? "gala-2014-ec" : "gala-2021-ec"
        let other = try TokenFixture(otherFolder).identity()
        expectCode(.merchantKeyMismatch) {
            try fixture.decryptor(merchants: [other]).decrypt(jsonData: fixture.tokenJSON)
        }
        // Rotation: several identities, the right one is picked by publicKeyHash.
        _ = try fixture.decryptor(merchants: [other, identity]).decrypt(jsonData: fixture.tokenJSON)
        // The right key with the wrong merchant identifier: the EC_v1 KDF differs and GCM fails.
        if fixture.version == "EC_v1" {
            let wrong = try MerchantIdentity(
                privateKey: identity.privateKey, merchantIdentifier: "merchant.com.example.wrong")
            expectCode(.decryptionFailed) {
                try fixture.decryptor(merchants: [wrong]).decrypt(jsonData: fixture.tokenJSON)
            }
        }
        let decryptor = try fixture.decryptor()
        let expectedData = try #require(fixture.expectedJSON)
        let expected = try #require(JSONSerialization.jsonObject(with: expectedData) as? [String: Any])
        let amount = try #require((expected["transactionAmount"] as? NSNumber)?.int64Value)
        let currency = try #require(expected["currencyCode"] as? String)
        _ = try decryptor.decrypt(jsonData: fixture.tokenJSON, expecting: .init(amount: amount, currencyCode: currency))
        expectCode(.amountMismatch) {
            try decryptor.decrypt(jsonData: fixture.tokenJSON, expecting: .init(amount: amount + 1))
        }
        expectCode(.amountMismatch) {
            try decryptor.decrypt(jsonData: fixture.tokenJSON, expecting: .init(currencyCode: "999"))
        }
        expectCode(.applicationDataMismatch) {
            try decryptor.decrypt(
                jsonData: fixture.tokenJSON, expecting: .init(applicationData: .bytes(Data("order-1".utf8))))
        }
        expectCode(.applicationDataMismatch) {
            try decryptor.decrypt(
                jsonData: fixture.tokenJSON,
                expecting: .init(applicationData: .sha256Hex(String(repeating: "0", count: 64))))
        }
    }

    @Test("alphabetic currency expectations are accepted; a key not matching its certificate is refused")
    func currencyAndIdentity() throws {
        let fixture = try TokenFixture("gala-2021-ec")
        _ = try fixture.decryptor().decrypt(jsonData: fixture.tokenJSON, expecting: .init(currencyCode: "USD"))
        expectCode(.amountMismatch) {
            try fixture.decryptor().decrypt(jsonData: fixture.tokenJSON, expecting: .init(currencyCode: "EUR"))
        }
        let otherKey = try PrivateKey(pem: try #require(TokenFixture("gala-2014-ec").keyPEM))
        let certificate = try Certificate(pem: try #require(fixture.certificatePEM))
        expectCode(.merchantKeyMismatch) { try MerchantIdentity(certificate: certificate, privateKey: otherKey) }
        expectCode(.merchantKeyMismatch) { try PaymentTokenDecryptor(merchants: [], verifier: fixture.verifier()) }
    }

    @Test("descriptions mask the PAN and never show the cryptogram or keys")
    func descriptionsHideSecrets() throws {
        let fixture = try TokenFixture("gala-2021-ec")
        let decrypted = try fixture.decryptor().decrypt(jsonData: fixture.tokenJSON)
        let pan = decrypted.payload.applicationPrimaryAccountNumber
        guard case .threeDSecure(let cryptogram, _) = decrypted.payload.credentials else {
            Issue.record("expected 3DSecure")
            return
        }
        for text in [
            "\(decrypted)", "\(decrypted.payload)", String(reflecting: decrypted.payload.description),
            "\(decrypted.merchant)",
        ] {
            #expect(!text.contains(pan))
            #expect(!text.contains(cryptogram))
            #expect(!text.contains("PRIVATE"))
        }
        #expect(decrypted.payload.description.contains("…" + pan.suffix(4)))
    }

    @Test("one decryptor, many threads: every result is the same")
    func concurrentUse() async throws {
        let fixtures = try TokenFixture.decryptable.map { try TokenFixture($0) }
        // One shared verifier per token time is needed (each token has its own signing time), so use a wide window.
        let verifier = try PaymentTokenVerifier(maximumAge: 50 * 366 * 86_400)
        let decryptor = try PaymentTokenDecryptor(merchants: fixtures.map { try $0.identity() }, verifier: verifier)
        let tokens = fixtures.map(\.tokenJSON)
        let pans = try await withThrowingTaskGroup(of: String.self) { group in
            for round in 0..<48 {
                let token = tokens[round % tokens.count]
                group.addTask { try decryptor.decrypt(jsonData: token).payload.applicationPrimaryAccountNumber }
            }
            var all: [String] = []
            for try await pan in group { all.append(pan) }
            return all
        }
        #expect(pans.count == 48)
        #expect(
            Set(pans).count
                == Set(
                    try fixtures.map {
                        try decryptor.decrypt(jsonData: $0.tokenJSON).payload.applicationPrimaryAccountNumber
                    }
                ).count)
    }
}
