import Cryptography
import Foundation
import Sandbox
import TestSupport
import Testing

@Suite("Sandbox folder: authority, merchant certificates, files")
struct SandboxFolderTests {
    @Test("every file is there; keys are 0600; openssl x509 reads every certificate")
    func filesAndModes() async throws {
        let sandbox = try await SharedSandbox.get()
        for name in Sandbox.fileNames {
            let path = sandbox.folder.appendingPathComponent(name).path
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
            if name.hasSuffix(".key.pem") {
                #expect(mode == 0o600, "\(name) has mode \(String(mode, radix: 8))")
            } else if name.hasSuffix(".pem") {
                #expect(mode == 0o644, "\(name) has mode \(String(mode, radix: 8))")
                let read = try await ToolRunner.openssl(["x509", "-in", path, "-noout", "-subject"])
                #expect(read.status == 0, "openssl x509 cannot read \(name): \(read.error)")
            }
        }
        let folderMode =
            try FileManager.default.attributesOfItem(atPath: sandbox.folder.path)[.posixPermissions] as? NSNumber
        #expect(folderMode?.intValue == 0o700)
        // Nothing left over from staging.
        let siblings = try FileManager.default.contentsOfDirectory(
            atPath: sandbox.folder.deletingLastPathComponent().path)
        #expect(siblings == ["sandbox"])
    }

    @Test(
        "the chains verify with openssl verify: leaves under the intermediate, merchant certificates under the merchant CA"
    )
    func chainsVerify() async throws {
        let sandbox = try await SharedSandbox.get()
        let path = { (name: String) in sandbox.folder.appendingPathComponent(name).path }
        for leaf in [Sandbox.File.ecLeaf, Sandbox.File.rsaLeaf] {
            let result = try await ToolRunner.openssl([
                "verify", "-CAfile", path(Sandbox.File.root), "-untrusted", path(Sandbox.File.intermediate), path(leaf),
            ])
            #expect(result.status == 0, "\(leaf): \(result.error)")
        }
        for merchant in [
            Sandbox.File.paymentProcessingEC, Sandbox.File.paymentProcessingRSA, Sandbox.File.merchantIdentity,
        ] {
            let result = try await ToolRunner.openssl([
                "verify", "-CAfile", path(Sandbox.File.root), "-untrusted", path(Sandbox.File.merchantCA),
                path(merchant),
            ])
            #expect(result.status == 0, "\(merchant): \(result.error)")
        }
        let identityPurpose = try await ToolRunner.openssl([
            "verify", "-purpose", "sslclient", "-CAfile", path(Sandbox.File.root), "-untrusted",
            path(Sandbox.File.merchantCA),
            path(Sandbox.File.merchantIdentity),
        ])
        #expect(identityPurpose.status == 0, "\(identityPurpose.error)")
    }

    @Test("certificates have Apple's shapes: keys, marker OIDs, merchant identifier hash and UID")
    func applesShapes() async throws {
        let sandbox = try await SharedSandbox.get()
        let authority = sandbox.authority
        #expect(authority.root.certificate.publicKey.kind == .p384)
        #expect(authority.root.certificate.isCertificateAuthority)
        for intermediate in [authority.intermediate.certificate, authority.merchantCA.certificate] {
            #expect(intermediate.extensionValue(oid: "1.2.840.113635.100.6.2.14") == Data([0x05, 0x00]))
            #expect(intermediate.isCertificateAuthority)
            #expect(intermediate.isSigned(by: authority.root.certificate))
        }
        #expect(authority.ecLeaf.certificate.publicKey.kind == .p256)
        #expect(authority.rsaLeaf.certificate.publicKey.kind == .rsa(bits: 2048))
        for leaf in [authority.ecLeaf.certificate, authority.rsaLeaf.certificate] {
            #expect(leaf.extensionValue(oid: "1.2.840.113635.100.6.29") == Data([0x05, 0x00]))
            #expect(leaf.keyUsage == [.digitalSignature])
            #expect(!leaf.isCertificateAuthority)
        }

        // OID .32 as Apple writes it: UTF8String header 0C 40, then the hash in uppercase hex.
        let identifier = SharedSandbox.merchantIdentifier
        let expectedHex = Digest.sha256(Data(identifier.utf8)).map { String(format: "%02X", $0) }.joined()
        for credential in [sandbox.paymentProcessingEC, sandbox.paymentProcessingRSA, sandbox.merchantIdentity] {
            let certificate = credential.certificate
            #expect(
                certificate.extensionValue(oid: "1.2.840.113635.100.6.32")
                    == Data([0x0C, 0x40] + Array(expectedHex.utf8)))
            #expect(certificate.subjectUID == identifier)
            #expect(certificate.isSigned(by: authority.merchantCA.certificate))
        }
        #expect(sandbox.paymentProcessingEC.certificate.publicKey.kind == .p256)
        #expect(sandbox.paymentProcessingRSA.certificate.publicKey.kind == .rsa(bits: 2048))
        #expect(sandbox.paymentProcessingEC.certificate.keyUsage == [.keyEncipherment, .keyAgreement])
        #expect(
            sandbox.paymentProcessingEC.certificate.subjectName.value(of: .commonName)
                == "Apple Pay Payment Processing:\(identifier)")
        #expect(sandbox.merchantIdentity.certificate.publicKey.kind == .rsa(bits: 2048))
        #expect(sandbox.merchantIdentity.certificate.hasExtendedKeyUsage(.clientAuth))
    }

    @Test("the same encoding as a real Apple merchant certificate's OID .32")
    func sameEncodingAsApple() async throws {
        let pem = try String(
            contentsOf: Repository.appleTokenVectors.appendingPathComponent("basistheory-2023a-ec/merchant-cert.pem"),
            encoding: .utf8)
        let apple = try Certificate(pem: pem)
        let appleValue = try #require(apple.extensionValue(oid: "1.2.840.113635.100.6.32"))
        let merchant = try #require(apple.subjectUID)
        let issued = try await SharedSandbox.get().authority.issueMerchantCertificate(
            .paymentProcessing,
            for: try CertificateSigningRequest(
                subject: DistinguishedName(commonName: "x"), privateKey: PrivateKey.generate(.p256)),
            merchant: .init(identifier: merchant))
        #expect(issued.extensionValue(oid: "1.2.840.113635.100.6.32") == appleValue)
        #expect(MerchantIdentifier.hash(in: apple) == MerchantIdentifier.hash(merchant))
    }

    @Test("load reads back the same certificates, keys and merchant identifier")
    func loadRoundTrip() async throws {
        let sandbox = try await SharedSandbox.get()
        let loaded = try Sandbox.load(from: sandbox.folder)
        #expect(loaded.merchantIdentifier == SharedSandbox.merchantIdentifier)
        #expect(loaded.rootCertificate == sandbox.rootCertificate)
        #expect(loaded.paymentProcessingEC.certificate == sandbox.paymentProcessingEC.certificate)
        #expect(loaded.paymentProcessingRSA.privateKey.publicKey == sandbox.paymentProcessingRSA.privateKey.publicKey)
        #expect(loaded.authority.rsaLeaf.certificate == sandbox.authority.rsaLeaf.certificate)
    }

    @Test("a merchant identifier too long for a common name still gets certificates, with the whole identifier as UID")
    func longMerchantIdentifier() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let identifier = "merchant.com.example.a-rather-long-merchant-identifier-for-the-sandbox"
        // Three RSA keys: made on a thread of its own, not on Swift's cooperative pool (see `blocking`).
        let sandbox = try await blocking {
            try Sandbox.create(at: directory.url.appendingPathComponent("sandbox"), merchantIdentifier: identifier)
        }
        #expect(sandbox.paymentProcessingEC.certificate.subjectUID == identifier)
        #expect(sandbox.merchantIdentity.certificate.subjectUID == identifier)
    }

    @Test("an existing sandbox is refused without force and replaced with it; a non-empty other folder is refused")
    func overwriting() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let target = folder.url.appendingPathComponent("box")
        let first = try await blocking {
            try Sandbox.create(at: target, merchantIdentifier: "merchant.com.example.one")
        }
        #expect(throws: SandboxError(.alreadyExists, "")) {
            try Sandbox.create(at: target, merchantIdentifier: "merchant.com.example.two")
        }
        #expect(try Sandbox.load(from: target).merchantIdentifier == "merchant.com.example.one")
        let second = try await blocking {
            try Sandbox.create(at: target, merchantIdentifier: "merchant.com.example.two", force: true)
        }
        #expect(second.rootCertificate != first.rootCertificate)
        #expect(try Sandbox.load(from: target).merchantIdentifier == "merchant.com.example.two")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == ["box"])

        let other = folder.url.appendingPathComponent("other")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        try Data("keep me".utf8).write(to: other.appendingPathComponent("notes.txt"))
        #expect(throws: SandboxError(.alreadyExists, "")) {
            try Sandbox.create(at: other, merchantIdentifier: "merchant.com.example.one", force: true)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: other.path) == ["notes.txt"])
    }

    @Test("bad inputs: a missing folder, a missing file, a damaged key, a bad merchant identifier")
    func badInputs() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        #expect(throws: SandboxError(.folderMissing, "")) {
            try Sandbox.load(from: folder.url.appendingPathComponent("nope"))
        }
        #expect(throws: SandboxError(.invalidMerchantIdentifier, "")) {
            try Sandbox.create(at: folder.url.appendingPathComponent("x"), merchantIdentifier: "com.example")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.path("x")))

        let copy = folder.url.appendingPathComponent("copy")
        let shared = try await SharedSandbox.get()
        try FileManager.default.copyItem(at: shared.folder, to: copy)
        try FileManager.default.removeItem(at: copy.appendingPathComponent(Sandbox.File.ecLeafKey))
        #expect(throws: SandboxError(.fileMissing, "")) { try Sandbox.load(from: copy) }
        try Data("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".utf8)
            .write(to: copy.appendingPathComponent(Sandbox.File.ecLeafKey))
        #expect(throws: SandboxError(.invalidFile, "")) { try Sandbox.load(from: copy) }
        // A key from another pair is caught too.
        try FileManager.default.removeItem(at: copy.appendingPathComponent(Sandbox.File.ecLeafKey))
        try FileManager.default.copyItem(
            at: copy.appendingPathComponent(Sandbox.File.paymentProcessingECKey),
            to: copy.appendingPathComponent(Sandbox.File.ecLeafKey))
        #expect(throws: SandboxError(.invalidFile, "")) { try Sandbox.load(from: copy) }
    }

    @Test("issuing refuses a CSR with the wrong key kind or a broken signature")
    func issuingRefusals() async throws {
        let authority = try await SharedSandbox.get().authority
        let merchant = SandboxAuthority.Merchant(identifier: "merchant.com.example")
        let ecRequest = try CertificateSigningRequest(
            subject: DistinguishedName(commonName: "x"), privateKey: PrivateKey.generate(.p256))
        #expect(throws: SandboxError(.invalidRequest, "")) {
            try authority.issueMerchantCertificate(.merchantIdentity, for: ecRequest, merchant: merchant)
        }
        let p384Request = try CertificateSigningRequest(
            subject: DistinguishedName(commonName: "x"), privateKey: PrivateKey.generate(.p384))
        #expect(throws: SandboxError(.invalidRequest, "")) {
            try authority.issueMerchantCertificate(.paymentProcessing, for: p384Request, merchant: merchant)
        }
        var der = ecRequest.derRepresentation
        let index = try #require(der.firstRange(of: Data("x".utf8))).lowerBound
        der[index] = UInt8(ascii: "y")
        let tampered = try CertificateSigningRequest(der: der)
        #expect(throws: SandboxError(.invalidRequest, "")) {
            try authority.issueMerchantCertificate(.paymentProcessing, for: tampered, merchant: merchant)
        }
    }
}
