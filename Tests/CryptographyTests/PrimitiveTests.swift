import Foundation
import Foundations
import TestSupport
import Testing

@testable import Cryptography

@Suite("Primitives: digests, AES-GCM, ECDH, RSA-OAEP, random")
struct PrimitiveTests {
    @Test("SHA-256 and SHA-384 known answers")
    func digests() {
        #expect(
            Digest.sha256(Data("abc".utf8)).hexString
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Digest.sha384(Data("abc".utf8)).hexString
                == "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7")
        #expect(
            Digest.sha256([UInt8]()).hexString == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test("HMAC-SHA256 known answers (RFC 4231 test cases 1, 2, 6 and 7) and the empty key and message")
    func hmacSHA256() throws {
        let caseOne = try HMAC.sha256(
            key: Data(repeating: 0x0b, count: 20), message: Data("Hi There".utf8))
        #expect(caseOne.hexString == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        let caseTwo = try HMAC.sha256(key: Data("Jefe".utf8), message: Data("what do ya want for nothing?".utf8))
        #expect(caseTwo.hexString == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // A key longer than the block (131 bytes) is hashed first.
        let longKey = Data(repeating: 0xaa, count: 131)
        let caseSix = try HMAC.sha256(
            key: longKey, message: Data("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
        #expect(caseSix.hexString == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        let caseSeven = try HMAC.sha256(
            key: longKey,
            message: Data(
                ("This is a test using a larger than block-size key and a larger than block-size data. The key needs"
                    + " to be hashed before being used by the HMAC algorithm.").utf8))
        #expect(caseSeven.hexString == "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2")
        // HMAC-SHA256 with an empty key of an empty message (as `openssl dgst -sha256 -hmac ''` gives it).
        #expect(
            try HMAC.sha256(key: Data(), message: Data()).hexString
                == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
        #expect(try HMAC.sha256(key: [UInt8](), message: [UInt8]()) == HMAC.sha256(key: Data(), message: Data()))
    }

    @Test("AES-GCM known answers (GCM specification test cases 2, 13 and 14)")
    func aesGCMKnownAnswers() throws {
        let iv12 = Data(count: 12)
        #expect(
            try AESGCM.seal(Data(count: 16), key: Data(count: 16), iv: iv12).hexString
                == "0388dace60b6a392f328c2b971b2fe78" + "ab6e47d42cec13bdf53a67b21257bddf")
        #expect(try AESGCM.seal(Data(), key: Data(count: 32), iv: iv12).hexString == "530f8afbc74536b9a963b4f1c4cb738b")
        let sealed = try AESGCM.seal(Data(count: 16), key: Data(count: 32), iv: iv12)
        #expect(sealed.hexString == "cea7403d4d606b6e074ec5d3baf39d18" + "d0d1c8a799996bf0265b98b5d48ab919")
        #expect(try AESGCM.open(sealed, key: Data(count: 32), iv: iv12) == Data(count: 16))
    }

    @Test("AES-GCM with Apple Pay's 16-byte zero IV round-trips; tampering and wrong keys fail")
    func aesGCMSixteenByteIV() throws {
        let key = SecureRandom.bytes(32)
        let iv = Data(count: 16)
        let plaintext = Data("{\"amount\":100}".utf8)
        var sealed = try AESGCM.seal(plaintext, key: key, iv: iv)
        #expect(sealed.count == plaintext.count + 16)
        #expect(try AESGCM.open(sealed, key: key, iv: iv) == plaintext)
        // 16-byte IVs are not the 12-byte case: the same key and a 12-byte IV give other bytes.
        #expect(try AESGCM.seal(plaintext, key: key, iv: Data(count: 12)) != sealed)
        #expect(throws: CryptographyError(.decryptionFailed, "")) {
            try AESGCM.open(sealed, key: SecureRandom.bytes(32), iv: iv)
        }
        sealed[3] ^= 1
        #expect(throws: CryptographyError(.decryptionFailed, "")) { try AESGCM.open(sealed, key: key, iv: iv) }
        #expect(throws: CryptographyError(.decryptionFailed, "")) { try AESGCM.open(Data(count: 5), key: key, iv: iv) }
        #expect(throws: CryptographyError(.invalidKey, "")) {
            try AESGCM.seal(plaintext, key: Data(count: 24 + 1), iv: iv)
        }
        #expect(throws: CryptographyError(.malformedInput, "")) { try AESGCM.seal(plaintext, key: key, iv: Data()) }
    }

    @Test("AES-GCM over byte arrays matches the Data API; tampering, wrong keys and short input fail")
    func aesGCMBytes() throws {
        let iv12 = [UInt8](repeating: 0, count: 12)
        let sealed = try AESGCM.seal(Data(count: 16), key: Data(count: 32), iv: Data(iv12))
        #expect(
            try AESGCM.open(bytes: Array(sealed), key: [UInt8](repeating: 0, count: 32), iv: iv12)
                == Array(Data(count: 16)))
        let key = SecureRandom.bytes(32)
        let iv = [UInt8](repeating: 0, count: 16)
        let plaintext = Data((0..<2500).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        var combined = Array(try AESGCM.seal(plaintext, key: key, iv: Data(iv)))
        #expect(try AESGCM.open(bytes: combined, key: key, iv: iv) == Array(plaintext))
        #expect(
            try AESGCM.open(bytes: combined, key: key, iv: iv)
                == Array(try AESGCM.open(Data(combined), key: key, iv: Data(iv))))
        #expect(throws: CryptographyError(.decryptionFailed, "")) {
            try AESGCM.open(bytes: combined, key: SecureRandom.bytes(32), iv: iv)
        }
        combined[combined.count - 1] ^= 1
        #expect(throws: CryptographyError(.decryptionFailed, "")) { try AESGCM.open(bytes: combined, key: key, iv: iv) }
        #expect(throws: CryptographyError(.decryptionFailed, "")) {
            try AESGCM.open(bytes: [UInt8](repeating: 0, count: 15), key: key, iv: iv)
        }
        #expect(throws: CryptographyError(.invalidKey, "")) {
            try AESGCM.open(bytes: combined, key: [UInt8](repeating: 0, count: 24 + 1), iv: iv)
        }
        // An empty plaintext: the tag alone authenticates and opens to nothing.
        let tagOnly = try AESGCM.seal(Data(), key: key, iv: Data(iv))
        #expect(try AESGCM.open(bytes: Array(tagOnly), key: key, iv: iv).isEmpty)
        #expect(try AESGCM.open(tagOnly, key: key, iv: Data(iv)).isEmpty)
    }

    @Test("SHA-256 over several parts equals SHA-256 of their concatenation")
    func digestConcatenating() {
        let parts: [[UInt8]] = [Array("ab".utf8), [], Array("c".utf8), Array(repeating: 7, count: 3000)]
        #expect(Digest.sha256(concatenating: parts) == Digest.sha256(parts.flatMap { $0 }))
        #expect(Digest.sha256(concatenating: []) == Digest.sha256([UInt8]()))
        #expect(Digest.sha256(concatenating: [Array("abc".utf8)]) == Digest.sha256(Data("abc".utf8)))
    }

    @Test("ASN.1 children: up to eight inline, more in the overflow, in order")
    func asn1ManyChildren() throws {
        for count in [0, 1, 7, 8, 9, 20] {
            let content: [UInt8] = (0..<count).flatMap { index -> [UInt8] in [0x02, 0x01, UInt8(index)] }
            let reader = ASN1Reader([0x30, UInt8(content.count)] + content)
            let children = try reader.children(of: try reader.root())
            #expect(children.count == count)
            #expect(children.map { reader.content($0).first } == (0..<count).map { UInt8($0) })
        }
    }

    @Test("ECDH agrees both ways, through EVP keys and through the prepared P-256 agreement")
    func ecdhAgreement() throws {
        let alice = try PrivateKey.generate(.p256)
        let bob = try PrivateKey.generate(.p256)
        let ab = try ECDH.sharedSecret(privateKey: alice, publicKey: bob.publicKey)
        let ba = try ECDH.sharedSecret(privateKey: bob, publicKey: alice.publicKey)
        #expect(ab.count == 32)
        #expect(ab == ba)
        let prepared = try P256KeyAgreement(privateKey: alice)
        #expect(try prepared.sharedSecret(peerSubjectPublicKeyInfoDER: bob.publicKey.subjectPublicKeyInfoDER) == ab)
        let other = try PrivateKey.generate(.p384)
        #expect(throws: CryptographyError(.invalidKey, "")) {
            try ECDH.sharedSecret(privateKey: alice, publicKey: other.publicKey)
        }
        #expect(throws: CryptographyError(.invalidKey, "")) { try P256KeyAgreement(privateKey: other) }
    }

    @Test("points not on the curve and malformed SubjectPublicKeyInfos are invalidKey")
    func ecdhRejectsBadPoints() throws {
        let prepared = try P256KeyAgreement(privateKey: PrivateKey.generate(.p256))
        var spki = try PrivateKey.generate(.p256).publicKey.subjectPublicKeyInfoDER
        spki[spki.count - 1] ^= 0x01  // y no longer matches x: off the curve
        #expect(throws: CryptographyError(.invalidKey, "")) {
            try prepared.sharedSecret(peerSubjectPublicKeyInfoDER: spki)
        }
        #expect(throws: CryptographyError(.invalidKey, "")) { try PublicKey(subjectPublicKeyInfoDER: spki) }
        #expect(throws: CryptographyError(.invalidKey, "")) {
            try prepared.sharedSecret(peerSubjectPublicKeyInfoDER: spki.prefix(40))
        }
        #expect(throws: CryptographyError(.invalidKey, "")) {
            try prepared.sharedSecret(peerPoint: Data([4]) + Data(count: 64))
        }
        let p384 = try PrivateKey.generate(.p384).publicKey.subjectPublicKeyInfoDER
        #expect(throws: CryptographyError(.invalidKey, "")) {
            try prepared.sharedSecret(peerSubjectPublicKeyInfoDER: p384)
        }
    }

    @Test("RSA-OAEP SHA-256 round trip; wrong key and altered ciphertext fail")
    func rsaOAEP() throws {
        let key = try PrivateKey(pem: CryptographyFixtures.text("basistheory-2024-rsa/merchant-key.pem"))
        let secret = SecureRandom.bytes(16)
        var wrapped = try RSAOAEP.encrypt(secret, publicKey: key.publicKey)
        #expect(wrapped.count == 256)
        #expect(try RSAOAEP.decrypt(wrapped, privateKey: key) == secret)
        let other = try PrivateKey(pem: CryptographyFixtures.pkcs1RSAKey)
        #expect(throws: CryptographyError(.decryptionFailed, "")) { try RSAOAEP.decrypt(wrapped, privateKey: other) }
        wrapped[10] ^= 0x80
        #expect(throws: CryptographyError(.decryptionFailed, "")) { try RSAOAEP.decrypt(wrapped, privateKey: key) }
        #expect(throws: CryptographyError(.invalidKey, "")) {
            try RSAOAEP.decrypt(wrapped, privateKey: PrivateKey.generate(.p256))
        }
    }

    @Test("random bytes have the asked length and differ")
    func random() {
        #expect(SecureRandom.bytes(0).isEmpty)
        #expect(SecureRandom.bytes(33).count == 33)
        #expect(SecureRandom.bytes(32) != SecureRandom.bytes(32))
    }
}
