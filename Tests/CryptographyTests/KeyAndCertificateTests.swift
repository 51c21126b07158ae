import Foundation
import Foundations
import TestSupport
import Testing

@testable import Cryptography

/// Hexadecimal helpers for known-answer tests.
extension Data {
    init(hexString: String) {
        var bytes: [UInt8] = []
        var iterator = hexString.utf8.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            bytes.append(UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) ?? 0)
        }
        self.init(bytes)
    }

    var hexString: String { map { String(format: "%02x", $0) }.joined() }
}

enum CryptographyFixtures {
    static let tokens = Repository.appleTokenVectors
    static func text(_ path: String) throws -> String {
        try String(contentsOf: tokens.appendingPathComponent(path), encoding: .utf8)
    }
    /// A throwaway 1024-bit RSA key in PKCS#1 ("RSA PRIVATE KEY") form, generated for this test only.
    static let pkcs1RSAKey = """
        -----BEGIN RSA PRIVATE KEY-----
        MIICXgIBAAKBgQCsiI1EeDXw1vmzqHM3hAZx2MuKgNyUWqrOaRLPKQRXkzkGhH+Q
        a6FrSP2vlr1MTejagM4I6WxXr48zOULIeybiPUFXEaOpdxfztsI4QrmvDQARfm60
        9NxPROsBoVnIFwrqe5OSVXQ+YyB+UG89qitnulxrOqZxLkHRT5NGtoAUxwIDAQAB
        AoGBAJdP2rTlyEjEAJHzdbiGbTCDNV7uzIS/T3Ve6UQNcOVtFGIG6ek6u4JfrTzF
        Mpcs7L5UoF1oecAdE7WUzmEMwHfPsfqc1c4lEUD6gHp5hBMcO64ruRjaxb5ZbJdc
        EqcFOqLNJzc2zZYUGbxm1GsFyApbGWfqzl2l80R/Itr2n8fBAkEA5bOvRyHeRi4k
        /xwDtf5SIYwcR1XIRsCW+Rj1ff/Hl7A1cXYtLMGVGfkS6bf4pxBJ708fMT7sHSTy
        kp3vjPRCSQJBAMBJUf5r3dl+AsJnWHnabneeK+C1z5Gyoqc9YtijuqilDcPJGvs+
        0R14OzTBfN+sftLbQYGnMU/STHT77E/2no8CQQCoiLcBFOt2SKMifpaGcKwoKxoQ
        iPMiXmonKFXu9b2nIUWFEzVAEmTooqRq0W3ifgQRTtdPFaC+HX7Rbon1vL3pAkEA
        ppogd89f7cS3gVbnmtR+KBgcrlr42KUtNrgCP/BEl0BDF+LUBOJdbyowKjqHBom/
        bNRaAospN57fbfCkxHfK0wJAUaaSfhbtrFPpEzNfDk3Mtw7JMdLhyR4XQqH864eS
        w6EJCyCQBUYoBGIhJMHDpfxLA6ViwV0wG+9iGELUj4FREQ==
        -----END RSA PRIVATE KEY-----
        """
}

@Suite("Keys: PEM and DER parsing, generation, descriptions")
struct KeyTests {
    @Test("SEC1 with EC PARAMETERS before it, PKCS#8 and PKCS#1 keys parse to the right kind")
    func parsesEveryForm() throws {
        let sec1 = try PrivateKey(pem: CryptographyFixtures.text("gala-2021-ec/merchant-key.pem"))
        #expect(sec1.kind == .p256)
        let pkcs8EC = try PrivateKey(pem: CryptographyFixtures.text("basistheory-2023a-ec/merchant-key.pem"))
        #expect(pkcs8EC.kind == .p256)
        let pkcs8RSA = try PrivateKey(pem: CryptographyFixtures.text("basistheory-2024-rsa/merchant-key.pem"))
        #expect(pkcs8RSA.kind == .rsa(bits: 2048))
        let pkcs1 = try PrivateKey(pem: CryptographyFixtures.pkcs1RSAKey)
        #expect(pkcs1.kind == .rsa(bits: 1024))
        // Round trips through PKCS#8 PEM and DER keep the same public key.
        #expect(try PrivateKey(pem: sec1.pemRepresentation).publicKey == sec1.publicKey)
        #expect(try PrivateKey(der: pkcs1.pkcs8DERRepresentation).publicKey == pkcs1.publicKey)
        #expect(sec1.pemRepresentation.hasPrefix("-----BEGIN PRIVATE KEY-----"))
    }

    @Test("garbage, certificates and truncated keys are invalidKey, never a crash")
    func rejectsGarbage() throws {
        for text in [
            "", "hello", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            try CryptographyFixtures.text("apple-root-ca-g3.pem"),
        ] {
            #expect(throws: CryptographyError(.invalidKey, "")) { try PrivateKey(pem: text) }
        }
        let der = try PrivateKey.generate(.p256).pkcs8DERRepresentation
        #expect(throws: CryptographyError(.invalidKey, "")) { try PrivateKey(der: der.prefix(der.count - 3)) }
        #expect(throws: CryptographyError(.invalidKey, "")) { try PrivateKey(der: Data()) }
        #expect(throws: CryptographyError(.invalidKey, "")) {
            try PublicKey(subjectPublicKeyInfoDER: Data([0x30, 0x03, 0x02, 0x01]))
        }
        #expect(throws: CryptographyError(.invalidKey, "")) { try PublicKey(pem: "not a key") }
    }

    @Test("generated keys have the asked kind; descriptions show no key material")
    func generatesAndHides() throws {
        let p384 = try PrivateKey.generate(.p384)
        #expect(p384.kind == .p384)
        let key = try PrivateKey.generate(.p256)
        let body = key.pemRepresentation.split(separator: "\n").dropFirst().first.map(String.init) ?? "x"
        #expect(!key.description.contains(body))
        #expect(!"\(key)".contains("BEGIN"))
        #expect(try PublicKey(pem: key.publicKey.pemRepresentation) == key.publicKey)
        #expect(key.publicKey != p384.publicKey)
        #expect(throws: CryptographyError(.invalidKey, "")) { try PrivateKey.generate(.rsa(bits: 512)) }
    }
}

@Suite("Certificates")
struct CertificateTests {
    @Test("Apple Root CA - G3: names, dates, fingerprint, key")
    func appleRoot() throws {
        let pem = try CryptographyFixtures.text("apple-root-ca-g3.pem")
        let root = try Certificate(pem: pem)
        #expect(root.subject.contains("CN=Apple Root CA - G3"))
        #expect(root.subject == root.issuer)
        #expect(root.sha256Fingerprint.hexString == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
        #expect(root.publicKey.kind == .p384)
        #expect(root.notBefore == Date(timeIntervalSince1970: 1_398_881_946))  // 2014-04-30T18:19:06Z
        #expect(root.notAfter > Date(timeIntervalSince1970: 2_000_000_000))
        #expect(try Certificate(der: root.derRepresentation) == root)
        #expect(root.pemRepresentation.hasPrefix("-----BEGIN CERTIFICATE-----\n"))
        #expect(try Certificate.chain(fromPEM: pem + pem).count == 2)
        #expect(root.hasExtension(oid: "2.5.29.19"))  // basicConstraints
        #expect(!root.hasExtension(oid: "1.2.840.113635.100.6.29"))
        #expect(root.extensionValue(oid: "not an oid") == nil)
    }

    @Test("merchant certificate: subject UID and the merchant identifier hash extension")
    func merchantCertificate() throws {
        let certificate = try Certificate(pem: CryptographyFixtures.text("gala-2021-ec/merchant-cert.pem"))
        let uid = try #require(certificate.subjectUID)
        #expect(uid == "merchant.test.spreedly.123merchant")
        let value = try #require(certificate.extensionValue(oid: "1.2.840.113635.100.6.32"))
        #expect(value.count == 66)
        #expect(
            String(decoding: value.dropFirst(2), as: UTF8.self).lowercased() == Digest.sha256(Data(uid.utf8)).hexString)
        #expect(!certificate.serialNumber.isEmpty)
    }

    @Test("garbage certificates are invalidCertificate")
    func rejectsGarbage() throws {
        let root = try Certificate(pem: CryptographyFixtures.text("apple-root-ca-g3.pem"))
        for der in [Data(), Data([0x30]), root.derRepresentation.prefix(100), root.derRepresentation + Data([0])] {
            #expect(throws: CryptographyError(.invalidCertificate, "")) { try Certificate(der: der) }
        }
        #expect(throws: CryptographyError(.invalidCertificate, "")) { try Certificate(pem: "nothing") }
        #expect(throws: CryptographyError(.invalidCertificate, "")) { try Certificate.chain(fromPEM: "") }
    }
}
