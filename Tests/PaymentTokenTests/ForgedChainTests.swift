import ApplePay
import Cryptography
import Foundation
import PaymentToken
import Testing

/// A small test Apple built in the test: a root, an intermediate and a token-signing leaf whose marker extensions
/// and validity periods each test chooses, and a merchant. It signs with `CMSSigner` (OpenSSL's CMS_sign), so these
/// tests also check that tokens from another CMS implementation verify.
struct TestApple {
    static let merchantIdentifier = "merchant.com.example.tests"
    /// The test authorities' clock and year (2023-11-14T22:13:20Z): `CraftAuthority`'s, whose builders make the chain.
    static let epoch = CraftAuthority.epoch
    static let year = CraftAuthority.year

    let root: Certificate
    let intermediate: Certificate
    let leaf: Certificate
    let signer: CMSSigner
    let merchantKey: PrivateKey

    struct Options {
        var intermediateMarker = true
        var leafMarker = true
        var leafNotBefore = TestApple.epoch - TestApple.year
        var leafNotAfter = TestApple.epoch + TestApple.year
    }

    init(_ options: Options = Options()) throws {
        // Built as `CraftAuthority` builds its chain; the marker extensions and the leaf's validity as `options` say.
        let rootKey = try PrivateKey.generate(.p256)
        root = try CraftAuthority.selfSignedRoot(key: rootKey, name: "Test Root CA")
        let intermediateKey = try PrivateKey.generate(.p256)
        intermediate = try CraftAuthority.issue(
            "Test Application Integration CA", key: intermediateKey, by: root, issuerKey: rootKey,
            constraints: .certificateAuthority(pathLength: 0),
            markers: options.intermediateMarker ? [ApplePayOID.intermediateMarker] : [],
            notBefore: Self.epoch - 5 * Self.year, notAfter: Self.epoch + 5 * Self.year)
        let leafKey = try PrivateKey.generate(.p256)
        leaf = try CraftAuthority.issue(
            "test-smp-broker-sign", key: leafKey, by: intermediate, issuerKey: intermediateKey,
            markers: options.leafMarker ? [ApplePayOID.leafMarker] : [], notBefore: options.leafNotBefore,
            notAfter: options.leafNotAfter)
        signer = try CMSSigner(certificate: leaf, privateKey: leafKey, additionalCertificates: [intermediate])
        merchantKey = try PrivateKey.generate(.p256)
    }

    func identity() throws -> MerchantIdentity {
        try MerchantIdentity(privateKey: merchantKey, merchantIdentifier: Self.merchantIdentifier)
    }

    func decryptor(now: Date = TestApple.epoch, maximumAge: TimeInterval = 300) throws -> PaymentTokenDecryptor {
        try PaymentTokenDecryptor(merchants: [identity()], roots: [root], maximumAge: maximumAge, now: { now })
    }

    static let payload = Data(
        #"""
        {"applicationPrimaryAccountNumber":"4761120010000492","applicationExpirationDate":"291231","currencyCode":"978",
         "transactionAmount":1234,"cardholderName":"A. Tester","deviceManufacturerIdentifier":"040010030273",
         "paymentDataType":"3DSecure","paymentData":{"onlinePaymentCryptogram":"AAECAwQFBgcICQoLDA0ODxAREhM=","eciIndicator":"5"}}
        """#.utf8)

    /// An EC_v1 token; `ephemeralPublicKey` replaces the real one's SPKI (the signature still covers what is sent).
    func mint(
        payload: Data = TestApple.payload, signingTime: Date = TestApple.epoch, applicationData: Data? = nil,
        ephemeralPublicKey: Data? = nil
    ) throws -> Data {
        let ephemeral = try PrivateKey.generate(.p256)
        let shared = try ECDH.sharedSecret(privateKey: ephemeral, publicKey: merchantKey.publicKey)
        var kdf = Data([0, 0, 0, 1]) + shared + Data([0x0d]) + Data("id-aes256-GCM".utf8) + Data("Apple".utf8)
        kdf += Digest.sha256(Data(Self.merchantIdentifier.utf8))
        let ciphertext = try AESGCM.seal(payload, key: Digest.sha256(kdf), iv: Data(count: 16))
        let key = ephemeralPublicKey ?? ephemeral.publicKey.subjectPublicKeyInfoDER
        let transactionId = SecureRandom.bytes(32)
        let applicationHash = applicationData.map { Digest.sha256($0) }
        let signature = try signer.signDetached(
            key + ciphertext + transactionId + (applicationHash ?? Data()), signingTime: signingTime)
        var header: [String: Any] = [
            "ephemeralPublicKey": key.base64EncodedString(),
            "publicKeyHash": Digest.sha256(merchantKey.publicKey.subjectPublicKeyInfoDER).base64EncodedString(),
            "transactionId": transactionId.map { String(format: "%02x", $0) }.joined(),
        ]
        if let applicationHash {
            header["applicationData"] = applicationHash.map { String(format: "%02x", $0) }.joined()
        }
        let token: [String: Any] = [
            "version": "EC_v1", "data": ciphertext.base64EncodedString(), "signature": signature.base64EncodedString(),
            "header": header,
        ]
        return try JSONSerialization.data(withJSONObject: token)
    }
}

@Suite("Tokens from a test authority: marker extensions, validity at the signing time, payload shapes")
struct ForgedChainTests {
    @Test("a token from the test authority opens under its root, and not under Apple's")
    func opensUnderItsRoot() throws {
        let apple = try TestApple()
        let token = try apple.mint(applicationData: Data("order-42".utf8))
        let decrypted = try apple.decryptor().decrypt(
            jsonData: token,
            expecting: .init(applicationData: .bytes(Data("order-42".utf8)), amount: 1234, currencyCode: "EUR"))
        #expect(decrypted.payload.transactionAmount == 1234)
        #expect(decrypted.payload.cardholderName == "A. Tester")
        #expect(
            decrypted.payload.credentials
                == .threeDSecure(onlinePaymentCryptogram: "AAECAwQFBgcICQoLDA0ODxAREhM=", eciIndicator: "5"))
        #expect(decrypted.payload.currency?.code == "EUR")
        #expect(decrypted.verification.signer == apple.leaf)
        let appleRooted = try PaymentTokenDecryptor(merchants: [apple.identity()], now: { TestApple.epoch })
        expectCode(.untrustedCertificateChain) { try appleRooted.decrypt(jsonData: token) }
        // applicationData removed from the header: the signature no longer matches.
        let stripped = try JSONSerialization.data(
            withJSONObject: {
                var object = try JSONSerialization.jsonObject(with: token) as? [String: Any] ?? [:]
                var header = object["header"] as? [String: Any] ?? [:]
                header["applicationData"] = nil
                object["header"] = header
                return object
            }())
        expectCode(.signatureInvalid) { try apple.decryptor().decrypt(jsonData: stripped) }
    }

    @Test("a leaf or intermediate without Apple's marker: missingAppleExtension")
    func missingMarkers() throws {
        let noLeafMarker = try TestApple(.init(leafMarker: false))
        expectCode(.missingAppleExtension) { try noLeafMarker.decryptor().decrypt(jsonData: noLeafMarker.mint()) }
        let noIntermediateMarker = try TestApple(.init(intermediateMarker: false))
        expectCode(.missingAppleExtension) {
            try noIntermediateMarker.decryptor().decrypt(jsonData: noIntermediateMarker.mint())
        }
    }

    @Test("validity is checked at each token's signing time, also when the chain is cached")
    func validityAtSigningTime() throws {
        let expiry = TestApple.epoch + 86_400
        let apple = try TestApple(.init(leafNotAfter: expiry))
        let before = try apple.mint(signingTime: expiry - 60)
        let after = try apple.mint(signingTime: expiry + 60)
        // The same decryptor (and cache) for both: the clock follows each token.
        let clock = ManualClock(expiry - 60)
        let decryptor = try PaymentTokenDecryptor(
            merchants: [apple.identity()], roots: [apple.root], now: { clock.now })
        _ = try decryptor.decrypt(jsonData: before)
        clock.now = expiry + 60
        expectCode(.untrustedCertificateChain) { try decryptor.decrypt(jsonData: after) }
        // Not yet valid at the signing time.
        let early = try TestApple(.init(leafNotBefore: TestApple.epoch + 3600))
        expectCode(.untrustedCertificateChain) { try early.decryptor().decrypt(jsonData: early.mint()) }
        // A leaf valid today but signed long ago, checked with a wide window: still refused at the signing time.
        let late = try TestApple(
            .init(leafNotBefore: TestApple.epoch - 60, leafNotAfter: TestApple.epoch + 10 * TestApple.year))
        expectCode(.untrustedCertificateChain) {
            try late.decryptor(now: TestApple.epoch, maximumAge: 10 * TestApple.year).decrypt(
                jsonData: late.mint(signingTime: TestApple.epoch - 3600))
        }
    }

    @Test("a signed ephemeral key that is not on the curve: malformedToken, not a crash")
    func pointNotOnCurve() throws {
        let apple = try TestApple()
        var spki = try PrivateKey.generate(.p256).publicKey.subjectPublicKeyInfoDER
        spki[spki.count - 1] ^= 0x01
        expectCode(.malformedToken) { try apple.decryptor().decrypt(jsonData: apple.mint(ephemeralPublicKey: spki)) }
        expectCode(.malformedToken) {
            try apple.decryptor().decrypt(
                jsonData: apple.mint(ephemeralPublicKey: Data([0x30, 0x03, 0x02, 0x01, 0x00])))
        }
        // Verification alone does not look at the key: the token is validly signed.
        _ = try apple.decryptor().verifier.verify(jsonData: apple.mint(ephemeralPublicKey: spki))
    }

    @Test("payloads: EMV and merchant tokens decode; garbage plaintext is malformedPayload")
    func payloads() throws {
        let apple = try TestApple()
        let emv = Data(
            #"""
            {"applicationPrimaryAccountNumber":"5204245250001488","applicationExpirationDate":"300131","currencyCode":"840",
             "transactionAmount":"0","deviceManufacturerIdentifier":"040010030273","paymentDataType":"EMV",
             "paymentData":{"emvData":"n0ABAQ==","encryptedPINData":"0a1b2c"},"merchantTokenIdentifier":"DNITHE302308980427388297",
             "merchantTokenMetadata":{"cardArt":[{"url":"https://example.com/a.png"}]},
             "authenticationResponses":[{"merchantIdentifier":"merchant.a","authenticationData":"AQ==","transactionAmount":100}]}
            """#.utf8)
        let decrypted = try apple.decryptor().decrypt(jsonData: apple.mint(payload: emv))
        #expect(decrypted.payload.credentials == .emv(emvData: "n0ABAQ==", encryptedPINData: "0a1b2c"))
        #expect(decrypted.payload.transactionAmount == 0)
        #expect(decrypted.payload.merchantTokenIdentifier == "DNITHE302308980427388297")
        #expect(
            decrypted.payload.merchantTokenMetadata?["cardArt"]?[0]?["url"]?.stringValue == "https://example.com/a.png")
        #expect(decrypted.payload.authenticationResponses?[0]?["merchantIdentifier"]?.stringValue == "merchant.a")
        #expect(!decrypted.payload.description.contains("n0ABAQ"))
        for garbage in [
            Data("not json".utf8), Data("[]".utf8), Data("{}".utf8),
            Data(
                #"{"applicationPrimaryAccountNumber":"12","applicationExpirationDate":"291231","currencyCode":"840","transactionAmount":1,"paymentDataType":"3DSecure","paymentData":{"onlinePaymentCryptogram":"AA=="}}"#
                    .utf8),
            Data(
                #"{"applicationPrimaryAccountNumber":"4761120010000492","applicationExpirationDate":"291331","currencyCode":"840","transactionAmount":1,"paymentDataType":"3DSecure","paymentData":{"onlinePaymentCryptogram":"AA=="}}"#
                    .utf8),
            Data(
                #"{"applicationPrimaryAccountNumber":"4761120010000492","applicationExpirationDate":"291231","currencyCode":"840","transactionAmount":1.5,"paymentDataType":"3DSecure","paymentData":{"onlinePaymentCryptogram":"AA=="}}"#
                    .utf8),
            Data(
                #"{"applicationPrimaryAccountNumber":"4761120010000492","applicationExpirationDate":"291231","currencyCode":"840","transactionAmount":99999999999999999999,"paymentDataType":"3DSecure","paymentData":{"onlinePaymentCryptogram":"AA=="}}"#
                    .utf8),
            Data(
                #"{"applicationPrimaryAccountNumber":"4761120010000492","applicationExpirationDate":"291231","currencyCode":"840","transactionAmount":1,"paymentDataType":"Other","paymentData":{}}"#
                    .utf8),
        ] {
            expectCode(.malformedPayload) { try apple.decryptor().decrypt(jsonData: apple.mint(payload: garbage)) }
        }
    }
}

/// A clock a test moves by hand.
final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Date
    init(_ start: Date) { value = start }
    var now: Date {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
