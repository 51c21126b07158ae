import Foundation
import TestSupport
import Testing

/// Paths into `Tests/Fixtures/apple-pay-tokens` for the token commands.
enum TokenCLIFixture {
    static func path(_ folder: String, _ file: String) -> String {
        Repository.appleTokenVectors.appendingPathComponent(folder).appendingPathComponent(file).path
    }

    static func signingTime(_ folder: String) throws -> String {
        let meta = try JSONSerialization.jsonObject(
            with: Data(contentsOf: URL(fileURLWithPath: path(folder, "meta.json"))))
        return try #require((meta as? [String: Any])?["signingTime"] as? String)
    }

    static func expected(_ folder: String) throws -> NSDictionary {
        let object = try JSONSerialization.jsonObject(
            with: Data(contentsOf: URL(fileURLWithPath: path(folder, "expected.json"))))
        return try #require(object as? NSDictionary)
    }

    /// A copy of the folder's merchant key that `decrypt` accepts: 0600 (a checkout leaves the fixture 0644, which
    /// the command refuses, as it should).
    static func privateKey(_ folder: String) throws -> String {
        let copy = privateKeys.path("\(folder)-merchant-key.pem")
        if !FileManager.default.fileExists(atPath: copy) {
            let data = try Data(contentsOf: URL(fileURLWithPath: path(folder, "merchant-key.pem")))
            let staged = copy + ".\(UUID().uuidString)"
            guard FileManager.default.createFile(atPath: staged, contents: data, attributes: [.posixPermissions: 0o600])
            else { throw CocoaError(.fileWriteUnknown) }
            _ = rename(staged, copy)
        }
        return copy
    }

    private static let privateKeys = try! TemporaryDirectory(prefix: "decrypt-keys")

    /// The `error` object printed on standard error.
    static func errorCode(_ result: ToolResult) -> String? {
        (result.errorJSON?["error"] as? [String: Any])?["code"] as? String
    }
}

@Suite("applepay decrypt")
struct DecryptCommandTests {
    @Test("a symlinked or group-readable key is refused with a message saying so; exit 1")
    func refusesExposedKeys() async throws {
        let directory = try TemporaryDirectory(prefix: "decrypt-exposed-key")
        defer { directory.remove() }
        let folder = "gala-2021-ec"
        let key = try TokenCLIFixture.privateKey(folder)
        let link = directory.path("link.pem")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: key)
        let loose = directory.path("loose.pem")
        FileManager.default.createFile(
            atPath: loose, contents: try Data(contentsOf: URL(fileURLWithPath: key)),
            attributes: [.posixPermissions: 0o640])
        for (path, words) in [(link, "is a symbolic link"), (loose, "is readable by other users (mode 640)")] {
            let result = try await CommandLineTool.run([
                "decrypt", TokenCLIFixture.path(folder, "token.json"), "--merchant-key", path,
                "--merchant-cert", TokenCLIFixture.path(folder, "merchant-cert.pem"),
                "--now", try TokenCLIFixture.signingTime(folder),
            ])
            #expect(result.status == 1)
            #expect(TokenCLIFixture.errorCode(result) == "insecureKeyFile")
            #expect(result.standardError.contains(words), "\(result.standardError)")
        }
    }

    @Test("a real EC_v1 token with its certificate decrypts to expected.json; exit 0")
    func decryptsWithCertificate() async throws {
        let folder = "gala-2021-ec"
        let result = try await CommandLineTool.run([
            "decrypt", TokenCLIFixture.path(folder, "token.json"),
            "--merchant-key", try TokenCLIFixture.privateKey(folder),
            "--merchant-cert", TokenCLIFixture.path(folder, "merchant-cert.pem"),
            "--now", try TokenCLIFixture.signingTime(folder),
        ])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.json.map { NSDictionary(dictionary: $0) } == (try TokenCLIFixture.expected(folder)))
    }

    @Test("an RSA_v1 token, and a bare key with --merchant-id, decrypt")
    func decryptsRSAAndBareKey() async throws {
        let rsa = "basistheory-2024-rsa"
        let first = try await CommandLineTool.run([
            "decrypt", TokenCLIFixture.path(rsa, "token.json"), "--merchant-key",
            try TokenCLIFixture.privateKey(rsa),
            "--merchant-cert", TokenCLIFixture.path(rsa, "merchant-cert.pem"), "--now",
            try TokenCLIFixture.signingTime(rsa),
        ])
        #expect(first.status == 0, "\(first.standardError)")
        #expect(first.json.map { NSDictionary(dictionary: $0) } == (try TokenCLIFixture.expected(rsa)))
        let bare = "payu-2018-sandbox-ec"
        let second = try await CommandLineTool.run([
            "decrypt", TokenCLIFixture.path(bare, "token.json"), "--merchant-key",
            try TokenCLIFixture.privateKey(bare),
            "--merchant-id", "merchant.sandbox.payu", "--now", try TokenCLIFixture.signingTime(bare), "--max-age", "60",
        ])
        #expect(second.status == 0, "\(second.standardError)")
        #expect(second.json?["transactionAmount"] as? Int == 100000)
    }

    @Test("failures print the error object on standard error and exit 1")
    func failures() async throws {
        let folder = "gala-2021-ec"
        let base = [
            "decrypt", TokenCLIFixture.path(folder, "token.json"),
            "--merchant-key", try TokenCLIFixture.privateKey(folder),
        ]
        // The wall clock: years after signing.
        let stale = try await CommandLineTool.run(
            base + ["--merchant-cert", TokenCLIFixture.path(folder, "merchant-cert.pem")])
        #expect(stale.status == 1)
        #expect(stale.standardOutput.isEmpty)
        #expect(TokenCLIFixture.errorCode(stale) == "signingTimeOutOfRange")
        // The wrong merchant identifier: the KDF differs.
        let now = try TokenCLIFixture.signingTime(folder)
        let wrong = try await CommandLineTool.run(base + ["--merchant-id", "merchant.com.example", "--now", now])
        #expect(TokenCLIFixture.errorCode(wrong) == "decryptionFailed")
        #expect(!wrong.standardError.contains("5353756319181169"))
        // Another merchant's key and certificate.
        let other = try await CommandLineTool.run([
            "decrypt", TokenCLIFixture.path(folder, "token.json"),
            "--merchant-key", try TokenCLIFixture.privateKey("gala-2014-ec"),
            "--merchant-cert", TokenCLIFixture.path("gala-2014-ec", "merchant-cert.pem"), "--now", now,
        ])
        #expect(other.status == 1)
        #expect(TokenCLIFixture.errorCode(other) == "merchantKeyMismatch")
        // An applicationData hash the token does not carry.
        let application = try await CommandLineTool.run(
            base + [
                "--merchant-cert", TokenCLIFixture.path(folder, "merchant-cert.pem"), "--now", now,
                "--application-data-hash", String(repeating: "ab", count: 32),
            ])
        #expect(TokenCLIFixture.errorCode(application) == "applicationDataMismatch")
        // Not a token.
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try Data("{}".utf8).write(to: URL(fileURLWithPath: directory.path("empty.json")))
        let empty = try await CommandLineTool.run([
            "decrypt", directory.path("empty.json"), "--merchant-key", try TokenCLIFixture.privateKey(folder),
            "--merchant-id", "merchant.test.spreedly.123merchant",
        ])
        #expect(empty.status == 1)
        #expect(TokenCLIFixture.errorCode(empty) == "malformedToken")
        let missing = try await CommandLineTool.run([
            "decrypt", directory.path("absent.json"), "--merchant-key",
            try TokenCLIFixture.privateKey(folder),
            "--merchant-id", "merchant.test.spreedly.123merchant",
        ])
        #expect(missing.status == 1)
        #expect(TokenCLIFixture.errorCode(missing) == "inputUnreadable")
    }

    @Test(
        "usage errors exit 64",
        arguments: [
            ["decrypt"],
            ["decrypt", "token.json", "--merchant-id", "merchant.x"],
            ["decrypt", "token.json", "--merchant-key", "k.pem"],
            ["decrypt", "token.json", "--merchant-key", "k.pem", "--merchant-id", "m", "--merchant-cert", "c.pem"],
            ["decrypt", "token.json", "--merchant-key", "k.pem", "--merchant-id", "m", "--now", "yesterday"],
            ["decrypt", "token.json", "--merchant-key", "k.pem", "--merchant-id", "m", "--max-age", "-5"],
            [
                "decrypt", "token.json", "--merchant-key", "k.pem", "--merchant-id", "m", "--application-data-hash",
                "xyz",
            ],
            ["decrypt", "token.json", "--merchant-key", "k.pem", "--merchant-id", "m", "--bogus"],
        ])
    func usageErrors(arguments: [String]) async throws {
        try await expectUsageError(arguments)
    }

    @Test("bench decrypt mints its own tokens and reports a rate")
    func bench() async throws {
        let result = try await CommandLineTool.run(["bench", "decrypt", "--seconds", "0.2", "--threads", "2"])
        #expect(result.status == 0, "\(result.standardError)")
        let json = try #require(result.json)
        #expect(json["threads"] as? Int == 2)
        #expect((json["tokens"] as? Int ?? 0) > 0)
        #expect((json["tokensPerSecond"] as? Int ?? 0) > 0)
        #expect(try await CommandLineTool.run(["bench", "decrypt", "--threads", "0"]).status == 64)
    }
}
