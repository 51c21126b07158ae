import Foundation
import TestSupport
import Testing

@Suite("applepay merchant")
struct MerchantCommandTests {
    @Test(
        "csr makes a 0600 key and a CSR that openssl req -verify accepts",
        arguments: [
            (["--kind", "payment-processing"], "ASN1 OID: prime256v1"),
            (["--kind", "payment-processing", "--rsa"], "Private-Key: (2048 bit"),
            (["--kind", "merchant-identity"], "Private-Key: (2048 bit"),
        ])
    func csr(options: [String], keyText: String) async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let out = folder.path("portal")
        let kind = options[1]
        let result = try await CommandLineTool.run(
            ["merchant", "csr"] + options + ["--out", out, "--merchant-id", "merchant.com.example"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(!result.standardOutput.contains("PRIVATE KEY"))
        let key = "\(out)/\(kind).key.pem"
        let request = "\(out)/\(kind).csr"
        #expect(result.json?["privateKey"] as? String == key)
        #expect(ExternalTool.mode(key) == 0o600)
        let verified = try await ExternalTool.run("openssl", ["req", "-verify", "-noout", "-in", request])
        #expect(verified.status == 0, "\(verified.standardError)")
        let text = try await ExternalTool.run("openssl", ["pkey", "-in", key, "-noout", "-text"])
        #expect(text.standardOutput.contains(keyText))
        // The CSR's key is the key's.
        let requestKey = try await ExternalTool.run("openssl", ["req", "-in", request, "-noout", "-pubkey"])
        let keyPublic = try await ExternalTool.run("openssl", ["pkey", "-in", key, "-pubout"])
        #expect(requestKey.standardOutput == keyPublic.standardOutput)

        let again = try await CommandLineTool.run(["merchant", "csr"] + options + ["--out", out])
        #expect(again.status == 1)
        #expect(again.standardError.contains("--force"))
        let forced = try await CommandLineTool.run(["merchant", "csr"] + options + ["--out", out, "--force"])
        #expect(forced.status == 0)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: out).sorted() == ["\(kind).csr", "\(kind).key.pem"])
    }

    @Test("csr usage errors: no --kind, an unknown kind, no --out")
    func csrUsageErrors() async throws {
        #expect(try await CommandLineTool.run(["merchant", "csr", "--out", "/tmp/x"]).status == 64)
        #expect(try await CommandLineTool.run(["merchant", "csr", "--kind", "apple", "--out", "/tmp/x"]).status == 64)
        #expect(try await CommandLineTool.run(["merchant", "csr", "--kind", "merchant-identity"]).status == 64)
    }

    @Test("inspect reads a DER .cer: merchant identifier, hash, kind, validity, key match; --pem-out writes PEM")
    func inspectDER() async throws {
        let (box, folder) = try await CommandLineSandbox.pathAndFolder()
        defer { folder.remove() }
        let cer = folder.path("apple_pay.cer")
        let converted = try await ExternalTool.run(
            "openssl", ["x509", "-in", "\(box)/payment-processing-ec.pem", "-outform", "DER", "-out", cer])
        try #require(converted.status == 0)
        let pemOut = folder.path("apple_pay.pem")
        let result = try await CommandLineTool.run([
            "merchant", "inspect", cer, "--key", "\(box)/payment-processing-ec.key.pem", "--pem-out", pemOut,
        ])
        #expect(result.status == 0, "\(result.standardError)")
        let report = try #require(result.json)
        #expect(report["kind"] as? String == "payment-processing")
        #expect(report["merchantIdentifier"] as? String == CommandLineSandbox.merchantIdentifier)
        #expect((report["merchantIdentifierHash"] as? String)?.count == 64)
        #expect(report["merchantIdentifierHashMatchesUID"] as? Bool == true)
        #expect(report["keyMatches"] as? Bool == true)
        #expect(report["isExpired"] as? Bool == false)
        #expect((report["daysLeft"] as? Int).map { (700...760).contains($0) } == true)
        #expect(report["notAfter"] is String)
        #expect(
            try String(contentsOfFile: pemOut, encoding: .utf8)
                == String(contentsOfFile: "\(box)/payment-processing-ec.pem", encoding: .utf8))

        let identity = try await CommandLineTool.run(["merchant", "inspect", "\(box)/merchant-identity.pem"])
        #expect(identity.json?["kind"] as? String == "merchant-identity")
        #expect(identity.json?["keyMatches"] is NSNull || identity.json?["keyMatches"] == nil)

        let wrongKey = try await CommandLineTool.run([
            "merchant", "inspect", cer, "--key", "\(box)/merchant-identity.key.pem",
        ])
        #expect(wrongKey.status == 1)
        #expect(wrongKey.json?["keyMatches"] as? Bool == false)
    }

    @Test("inspect reads a real Apple merchant certificate: expired, identifier and hash")
    func inspectApple() async throws {
        let path = Repository.appleTokenVectors.appendingPathComponent("basistheory-2023a-ec/merchant-cert.pem").path
        let result = try await CommandLineTool.run([
            "merchant", "inspect", path, "--key",
            Repository.appleTokenVectors.appendingPathComponent("basistheory-2023a-ec/merchant-key.pem").path,
        ])
        #expect(result.status == 0, "\(result.standardError)")
        let report = try #require(result.json)
        #expect(report["merchantIdentifier"] as? String == "merchant.basistheory.sales")
        #expect(
            report["merchantIdentifierHash"] as? String
                == "774d916d4c83f5f32b528d0d23576b18d6795be8250bad7e5998b5f1414740a1")
        #expect(report["kind"] as? String == "payment-processing")
        #expect(report["isExpired"] as? Bool == true)
        #expect(report["keyMatches"] as? Bool == true)
        #expect(report["publicKeyHash"] as? String == "aXryfzzhfHFLCl+guEkcYpVd1R+mPYEmmeu1N4aR2Ls=")
    }

    @Test("inspect bad inputs: not a certificate, a missing file, a bad key; nothing written")
    func inspectBadInputs() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let bogus = folder.path("bogus.cer")
        try Data([0x30, 0x82, 0x01, 0x00, 0x01, 0x02]).write(to: URL(fileURLWithPath: bogus))
        let pemOut = folder.path("out.pem")
        let notCertificate = try await CommandLineTool.run(["merchant", "inspect", bogus, "--pem-out", pemOut])
        #expect(notCertificate.status == 1)
        #expect(notCertificate.standardError.contains("not an X.509 certificate"))
        #expect(!FileManager.default.fileExists(atPath: pemOut))

        let missing = try await CommandLineTool.run(["merchant", "inspect", folder.path("nope.cer")])
        #expect(missing.status == 66)
        #expect(missing.standardError.contains("no such file"))

        let box = try await CommandLineSandbox.path()
        let badKey = try await CommandLineTool.run(["merchant", "inspect", "\(box)/root.pem", "--key", bogus])
        #expect(badKey.status == 1)
        #expect(badKey.standardError.contains("not a PEM private key"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == ["bogus.cer"])
    }
}
