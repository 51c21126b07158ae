import Foundation
import TestSupport
import Testing

@Suite("applepay verify")
struct VerifyCommandTests {
    @Test("tokens without keys verify at their signing time", arguments: ["processout-2017-ec", "processout-2017-rsa"])
    func verifies(folder: String) async throws {
        let now = try TokenCLIFixture.signingTime(folder)
        let result = try await CommandLineTool.run(["verify", TokenCLIFixture.path(folder, "token.json"), "--now", now])
        #expect(result.status == 0, "\(result.standardError)")
        let json = try #require(result.json)
        #expect(json["valid"] as? Bool == true)
        #expect(json["signingTime"] as? String == now)
        #expect((json["version"] as? String)?.hasSuffix("_v1") == true)
        #expect((json["transactionId"] as? String)?.count == 64)
    }

    @Test("too old, a foreign root, and a tampered token: exact codes, exit 1")
    func rejects() async throws {
        let folder = "processout-2017-ec"
        let token = TokenCLIFixture.path(folder, "token.json")
        let now = try TokenCLIFixture.signingTime(folder)
        let old = try await CommandLineTool.run(["verify", token, "--now", "2017-02-01T19:45:06Z", "--max-age", "300"])
        #expect(old.status == 1)
        #expect(TokenCLIFixture.errorCode(old) == "signingTimeOutOfRange")
        let foreign = try await CommandLineTool.run([
            "verify", token, "--now", now, "--root", TokenCLIFixture.path("gala-2021-ec", "merchant-cert.pem"),
        ])
        #expect(TokenCLIFixture.errorCode(foreign) == "untrustedCertificateChain")
        // The bundled root passed explicitly behaves like the default.
        let explicit = try await CommandLineTool.run([
            "verify", token, "--now", now, "--root",
            Repository.appleTokenVectors.appendingPathComponent("apple-root-ca-g3.pem").path,
        ])
        #expect(explicit.status == 0)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var text = try String(contentsOfFile: token, encoding: .utf8)
        let transactionId = "d60e5b29daaf960c9837d15f1e968e1bb3ad124fe7fa4f85482d7d53789c273f"
        text = text.replacingOccurrences(of: transactionId, with: "e" + transactionId.dropFirst())
        let tampered = directory.path("tampered.json")
        try Data(text.utf8).write(to: URL(fileURLWithPath: tampered))
        let result = try await CommandLineTool.run(["verify", tampered, "--now", now])
        #expect(result.status == 1)
        #expect(TokenCLIFixture.errorCode(result) == "signatureInvalid")
    }

    @Test("usage errors exit 64")
    func usage() async throws {
        #expect(try await CommandLineTool.run(["verify"]).status == 64)
        #expect(try await CommandLineTool.run(["verify", "a.json", "--now", "not-a-date"]).status == 64)
        #expect(try await CommandLineTool.run(["verify", "a.json", "b.json"]).status == 64)
    }
}
