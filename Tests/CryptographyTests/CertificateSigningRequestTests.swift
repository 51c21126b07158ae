import Cryptography
import Foundation
import Foundations
import TestSupport
import Testing

@Suite("Certificate signing requests")
struct CertificateSigningRequestTests {
    @Test(
        "EC P-256 and RSA-2048 requests verify with openssl req -verify", arguments: [KeyKind.p256, .rsa(bits: 2048)])
    func opensslVerifies(kind: KeyKind) async throws {
        // RSA key generation takes a while on a busy machine: on a thread of its own, not Swift's cooperative pool.
        let key = try await blocking { try PrivateKey.generate(kind) }
        let subject = DistinguishedName(commonName: "merchant.com.example", country: "US")
        let request = try CertificateSigningRequest(subject: subject, privateKey: key)
        #expect(request.isSignatureValid)
        #expect(request.subject == subject)
        #expect(request.publicKey == key.publicKey)
        #expect(request.pemRepresentation.hasPrefix("-----BEGIN CERTIFICATE REQUEST-----\n"))

        let result = try await OpenSSLTool.run(
            ["req", "-verify", "-noout", "-subject"], input: Data(request.pemRepresentation.utf8))
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("CN = merchant.com.example"))
    }

    @Test("PEM and DER parse back to the same request")
    func roundTrip() throws {
        let key = try PrivateKey.generate(.p256)
        let request = try CertificateSigningRequest(
            subject: DistinguishedName(userID: "merchant.x", commonName: "x"), privateKey: key)
        let fromPEM = try CertificateSigningRequest(pem: request.pemRepresentation)
        let fromDER = try CertificateSigningRequest(der: request.derRepresentation)
        #expect(fromPEM.derRepresentation == request.derRepresentation)
        #expect(fromDER.subject.value(of: .userID) == "merchant.x")
        #expect(fromDER.isSignatureValid)
    }

    @Test("a request made by openssl req parses and verifies")
    func readsOpenSSLRequests() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let made = try await OpenSSLTool.run([
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            folder.path("k.pem"), "-subj", "/CN=from openssl/C=US", "-out", folder.path("r.csr"),
        ])
        try #require(made.status == 0, "\(made.error)")
        let request = try CertificateSigningRequest(pem: String(contentsOfFile: folder.path("r.csr"), encoding: .utf8))
        #expect(request.isSignatureValid)
        #expect(request.subject.value(of: .commonName) == "from openssl")
        #expect(request.publicKey.kind == .p256)
    }

    @Test("a tampered request does not verify; garbage does not parse")
    func rejectsBadRequests() throws {
        let key = try PrivateKey.generate(.p256)
        let request = try CertificateSigningRequest(subject: DistinguishedName(commonName: "abc"), privateKey: key)
        var der = request.derRepresentation
        // Change one character of the subject: the signature no longer covers what is there.
        let index = try #require(der.firstRange(of: Data("abc".utf8))).lowerBound
        der[index] = UInt8(ascii: "x")
        let tampered = try CertificateSigningRequest(der: der)
        #expect(!tampered.isSignatureValid)
        #expect(throws: CryptographyError(.malformedInput, "")) {
            try CertificateSigningRequest(der: Data([0x30, 0x03, 1, 2, 3]))
        }
        #expect(throws: CryptographyError(.malformedInput, "")) { try CertificateSigningRequest(pem: "not pem") }
    }
}
