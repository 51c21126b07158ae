import Cryptography
import Foundation
import Foundations
import TestSupport
import Testing

/// Runs the `openssl` command-line tool: an independent reader of what the wrapper writes (see `Subprocess`).
enum OpenSSLTool {
    struct Result {
        var status: Int32
        var output: String
        var error: String
    }

    static func run(_ arguments: [String], input: Data? = nil) async throws -> Result {
        let result = try await Subprocess.run("openssl", arguments, input: input)
        return Result(status: result.status, output: result.standardOutput, error: result.standardError)
    }
}

/// A small CA made fresh for one test: root (P-384) → intermediate (P-256) → leaf.
struct TestAuthority {
    let rootKey: PrivateKey
    let root: Certificate
    let intermediateKey: PrivateKey
    let intermediate: Certificate

    init() throws {
        let now = Date()
        rootKey = try PrivateKey.generate(.p384)
        var rootBuilder = CertificateBuilder(
            subject: DistinguishedName(commonName: "Test Root CA", organization: "Test", country: "US"),
            publicKey: rootKey.publicKey, notBefore: now.addingTimeInterval(-86_400),
            notAfter: now.addingTimeInterval(86_400 * 3650))
        rootBuilder.basicConstraints = .certificateAuthority(pathLength: nil)
        rootBuilder.keyUsage = [.keyCertSign, .cRLSign]
        root = try rootBuilder.selfSigned(with: rootKey, digest: .sha384)

        intermediateKey = try PrivateKey.generate(.p256)
        var intermediateBuilder = CertificateBuilder(
            subject: DistinguishedName(commonName: "Test Intermediate CA", organization: "Test", country: "US"),
            publicKey: intermediateKey.publicKey, notBefore: now.addingTimeInterval(-86_400),
            notAfter: now.addingTimeInterval(86_400 * 1000))
        intermediateBuilder.basicConstraints = .certificateAuthority(pathLength: 0)
        intermediateBuilder.keyUsage = [.keyCertSign, .cRLSign]
        intermediateBuilder.extensions = [.marker(oid: "1.2.840.113635.100.6.2.14")]
        intermediate = try intermediateBuilder.signed(by: root, key: rootKey)
    }

    func leaf(key: PrivateKey, name: DistinguishedName, configure: (inout CertificateBuilder) -> Void = { _ in })
        throws -> Certificate
    {
        let now = Date()
        var builder = CertificateBuilder(
            subject: name, publicKey: key.publicKey, notBefore: now.addingTimeInterval(-3600),
            notAfter: now.addingTimeInterval(86_400 * 30))
        configure(&builder)
        return try builder.signed(by: intermediate, key: intermediateKey)
    }
}

@Suite("Certificate issuing")
struct CertificateIssuingTests {
    @Test("a root, intermediate and leaf chain verifies with openssl verify")
    func chainVerifies() async throws {
        let authority = try TestAuthority()
        let leafKey = try PrivateKey.generate(.p256)
        let leaf = try authority.leaf(key: leafKey, name: DistinguishedName(commonName: "leaf", country: "US")) {
            $0.keyUsage = [.digitalSignature]
            $0.extensions = [.marker(oid: "1.2.840.113635.100.6.29")]
        }
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try authority.root.pemRepresentation.write(toFile: folder.path("root.pem"), atomically: true, encoding: .utf8)
        try authority.intermediate.pemRepresentation.write(
            toFile: folder.path("intermediate.pem"), atomically: true, encoding: .utf8)
        try leaf.pemRepresentation.write(toFile: folder.path("leaf.pem"), atomically: true, encoding: .utf8)
        let result = try await OpenSSLTool.run([
            "verify", "-CAfile", folder.path("root.pem"), "-untrusted", folder.path("intermediate.pem"),
            folder.path("leaf.pem"),
        ])
        #expect(result.status == 0, "\(result.error)")
        #expect(leaf.isSigned(by: authority.intermediate))
        #expect(!leaf.isSigned(by: authority.root))
        #expect(authority.root.isSigned(by: authority.root))
        #expect(authority.root.isCertificateAuthority)
        #expect(!leaf.isCertificateAuthority)
    }

    @Test("names with UID, custom extensions with raw DER and key usages come out as written")
    func extensionsAndNames() async throws {
        let authority = try TestAuthority()
        // RSA key generation takes a while on a busy machine: on a thread of its own, not Swift's cooperative pool.
        let key = try await blocking { try PrivateKey.generate(.rsa(bits: 2048)) }
        let hash = String(repeating: "AB", count: 32)
        let name = DistinguishedName(
            userID: "merchant.com.example", commonName: "Merchant ID: merchant.com.example",
            organizationalUnit: "TEAM123456", organization: "Example, Inc.", country: "US")
        let hashExtension = try CertificateExtension.utf8String(oid: "1.2.840.113635.100.6.32", hash)
        let certificate = try authority.leaf(key: key, name: name) {
            $0.keyUsage = [.digitalSignature, .keyEncipherment]
            $0.extendedKeyUsage = [.clientAuth]
            $0.extensions = [hashExtension]
        }
        #expect(certificate.subjectUID == "merchant.com.example")
        #expect(certificate.subjectName == name)
        #expect(certificate.issuerName.value(of: .commonName) == "Test Intermediate CA")
        #expect(certificate.extensionValue(oid: "1.2.840.113635.100.6.32") == Data([0x0C, 0x40] + Array(hash.utf8)))
        #expect(certificate.hasExtendedKeyUsage(.clientAuth))
        #expect(!certificate.hasExtendedKeyUsage(.serverAuth))
        #expect(certificate.keyUsage == [.digitalSignature, .keyEncipherment])
        #expect(certificate.publicKey == key.publicKey)

        let text = try await OpenSSLTool.run(
            ["x509", "-noout", "-text"], input: Data(certificate.pemRepresentation.utf8))
        #expect(text.status == 0)
        #expect(text.output.contains("UID = merchant.com.example"))
        #expect(text.output.contains("TLS Web Client Authentication"))
        #expect(text.output.contains("X509v3 Subject Key Identifier"))
        #expect(text.output.contains("X509v3 Authority Key Identifier"))
        #expect(text.output.contains("CA:FALSE"))
        #expect(text.output.contains("1.2.840.113635.100.6.32"))
    }

    @Test("validity and serial number are what the builder says")
    func validityAndSerial() throws {
        let key = try PrivateKey.generate(.p256)
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let end = Date(timeIntervalSince1970: 1_800_000_000)
        var builder = CertificateBuilder(
            subject: DistinguishedName(commonName: "self"), publicKey: key.publicKey, notBefore: start, notAfter: end)
        builder.serialNumber = Data([0x01, 0x02, 0x03])
        let certificate = try builder.selfSigned(with: key)
        #expect(certificate.notBefore == start)
        #expect(certificate.notAfter == end)
        #expect(certificate.serialNumber == "010203")
        let reparsed = try Certificate(der: certificate.derRepresentation)
        #expect(reparsed == certificate)
    }

    @Test("a key that does not match, or validity ending before it starts, is refused")
    func refusesBadInput() throws {
        let key = try PrivateKey.generate(.p256)
        let other = try PrivateKey.generate(.p256)
        let now = Date()
        let builder = CertificateBuilder(
            subject: DistinguishedName(commonName: "x"), publicKey: key.publicKey, notBefore: now,
            notAfter: now.addingTimeInterval(60))
        #expect(throws: CryptographyError(.invalidKey, "")) { try builder.selfSigned(with: other) }
        var backwards = builder
        backwards.notAfter = now.addingTimeInterval(-60)
        #expect(throws: CryptographyError(.malformedInput, "")) { try backwards.selfSigned(with: key) }
        var badOID = builder
        badOID.extensions = [CertificateExtension(oid: "not an oid", value: Data([5, 0]))]
        #expect(throws: CryptographyError(.malformedInput, "")) { try badOID.selfSigned(with: key) }
        for seconds in [1e30, Double.infinity, -1e30] {
            var farOff = builder
            farOff.notAfter = Date(timeIntervalSince1970: seconds)
            farOff.notBefore = min(farOff.notBefore, farOff.notAfter)
            #expect(throws: CryptographyError(.malformedInput, ""), "\(seconds)") { try farOff.selfSigned(with: key) }
        }
    }
}
