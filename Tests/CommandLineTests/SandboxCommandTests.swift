import Foundation
import TestSupport
import Testing

/// Runs `openssl` or the independent Python implementation for the command-line tests (see `Subprocess`).
enum ExternalTool {
    static func run(_ tool: String, _ arguments: [String]) async throws -> ToolResult {
        try await Subprocess.run(tool, arguments)
    }

    static let python = Repository.root.appendingPathComponent("Tests/SandboxTests/python/independent_applepay.py").path

    static func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }
}

/// One sandbox folder made with `applepay sandbox init`, shared by the tests that only read it (and copied by
/// those that change it). The child runs on a thread of its own: tests await it without holding any of Swift's
/// cooperative threads.
enum CommandLineSandbox {
    static let merchantIdentifier = "merchant.com.example.cli"
    private static let creation = Task { () throws -> String in
        let folder = try TemporaryDirectory(prefix: "cli-sandbox")
        let path = folder.path("box")
        let result = try await CommandLineTool.run(["sandbox", "init", path, "--merchant-id", merchantIdentifier])
        guard result.status == 0 else {
            throw ExternalToolFailure(description: "sandbox init failed: \(result.standardError)")
        }
        return path
    }
    static func path() async throws -> String { try await creation.value }
    /// The shared sandbox's path, and a new empty folder (for the caller to remove) for what a test writes.
    static func pathAndFolder() async throws -> (String, TemporaryDirectory) {
        (try await path(), try TemporaryDirectory())
    }
}

struct ExternalToolFailure: Error, CustomStringConvertible {
    var description: String
}

@Suite("applepay sandbox")
struct SandboxCommandTests {
    @Test(
        "--help works for every sandbox and merchant command",
        arguments: [
            ["sandbox"], ["sandbox", "init"], ["sandbox", "mint"], ["merchant"], ["merchant", "csr"],
            ["merchant", "inspect"],
        ])
    func help(command: [String]) async throws {
        let result = try await CommandLineTool.run(command + ["--help"])
        #expect(result.status == 0)
        #expect(result.standardOutput.contains("OVERVIEW:"))
    }

    @Test("init writes every file, keys 0600, and reports them as JSON")
    func initWrites() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let box = folder.path("box")
        let result = try await CommandLineTool.run([
            "sandbox", "init", box, "--merchant-id", "merchant.com.example.init",
        ])
        #expect(result.status == 0, "\(result.standardError)")
        let report = try #require(result.json)
        #expect(report["merchantIdentifier"] as? String == "merchant.com.example.init")
        let files = try #require(report["files"] as? [String])
        for name in [
            "root.pem", "intermediate.pem", "payment-processing-ec.pem", "payment-processing-ec.key.pem",
            "payment-processing-rsa.pem", "payment-processing-rsa.key.pem", "merchant-identity.pem",
            "merchant-identity.key.pem", "sandbox.json",
        ] {
            let path = box + "/" + name
            #expect(files.contains(path), "\(name) not reported")
            #expect(FileManager.default.fileExists(atPath: path), "\(name) missing")
        }
        for path in files {
            if path.hasSuffix(".key.pem") {
                #expect(ExternalTool.mode(path) == 0o600, "\(path)")
            } else if path.hasSuffix(".pem") {
                let read = try await ExternalTool.run("openssl", ["x509", "-in", path, "-noout"])
                #expect(read.status == 0, "\(path)")
            }
        }
        #expect(!result.standardOutput.contains("PRIVATE KEY"))

        // A second init without --force is refused and changes nothing; with --force it replaces the sandbox.
        let before = try String(contentsOfFile: box + "/root.pem", encoding: .utf8)
        let again = try await CommandLineTool.run([
            "sandbox", "init", box, "--merchant-id", "merchant.com.example.init",
        ])
        #expect(again.status != 0)
        #expect(again.standardError.contains("--force"))
        #expect(try String(contentsOfFile: box + "/root.pem", encoding: .utf8) == before)
        let forced = try await CommandLineTool.run([
            "sandbox", "init", box, "--merchant-id", "merchant.com.example.init", "--force",
        ])
        #expect(forced.status == 0, "\(forced.standardError)")
        #expect(try String(contentsOfFile: box + "/root.pem", encoding: .utf8) != before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == ["box"])
    }

    @Test("init usage errors: no --merchant-id, a bad merchant identifier; nothing is created")
    func initUsageErrors() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let missing = try await CommandLineTool.run(["sandbox", "init", folder.path("a")])
        #expect(missing.status == 64)
        let bad = try await CommandLineTool.run([
            "sandbox", "init", folder.path("b"), "--merchant-id", "not a merchant id",
        ])
        #expect(bad.status == 64)
        #expect(bad.standardError.contains("merchant identifier"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).isEmpty)
    }

    @Test("mint writes a PKPaymentToken that the independent Python code decrypts", arguments: ["EC_v1", "RSA_v1"])
    func mintDecrypts(kind: String) async throws {
        let (box, folder) = try await CommandLineSandbox.pathAndFolder()
        defer { folder.remove() }
        let out = folder.path("token.json")
        let result = try await CommandLineTool.run([
            "sandbox", "mint", box, "--amount", "10.75", "--currency", "USD", "--kind", kind, "--network", "masterCard",
            "--cardholder-name", "Grace Hopper", "--application-data", Data("cart-7".utf8).base64EncodedString(),
            "--signing-time", "2026-01-02T03:04:05Z", "--out", out,
        ])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(ExternalTool.mode(out) == 0o600)
        let token = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out))) as? [String: Any])
        let method = try #require(token["paymentMethod"] as? [String: Any])
        #expect(method["network"] as? String == "MasterCard")
        #expect(method["displayName"] as? String == "MasterCard 1471")
        #expect((token["transactionIdentifier"] as? String)?.count == 64)
        let paymentData = try #require(token["paymentData"] as? [String: Any])
        #expect(paymentData["version"] as? String == kind)

        let suffix = kind == "EC_v1" ? "ec" : "rsa"
        let decrypted = try await ExternalTool.run(
            "python3",
            [
                ExternalTool.python, "decrypt", out, "--cert", "\(box)/payment-processing-\(suffix).pem", "--key",
                "\(box)/payment-processing-\(suffix).key.pem",
            ])
        try #require(decrypted.status == 0, "\(decrypted.standardError)")
        let payload = try #require(decrypted.json?["payload"] as? [String: Any])
        #expect(payload["transactionAmount"] as? Int == 1075)
        #expect(payload["currencyCode"] as? String == "840")
        #expect(payload["applicationPrimaryAccountNumber"] as? String == "5204247750001471")
        #expect(payload["cardholderName"] as? String == "Grace Hopper")

        let signatureText = try #require(paymentData["signature"] as? String)
        let signature = try #require(Data(base64Encoded: signatureText))
        try signature.write(to: folder.url.appendingPathComponent("signature.der"))
        let printed = try await ExternalTool.run(
            "openssl", ["cms", "-cmsout", "-print", "-inform", "DER", "-in", folder.path("signature.der")])
        #expect(printed.standardOutput.contains("UTCTIME:Jan  2 03:04:05 2026 GMT"))
    }

    @Test("mint prints to standard output without --out; --emv gives an EMV payload")
    func mintToStandardOutput() async throws {
        let box = try await CommandLineSandbox.path()
        let result = try await CommandLineTool.run([
            "sandbox", "mint", box, "--amount", "500", "--currency", "JPY", "--emv",
        ])
        #expect(result.status == 0, "\(result.standardError)")
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try Data(result.standardOutput.utf8).write(to: folder.url.appendingPathComponent("t.json"))
        let decrypted = try await ExternalTool.run(
            "python3",
            [
                ExternalTool.python, "decrypt", folder.path("t.json"), "--cert", "\(box)/payment-processing-ec.pem",
                "--key",
                "\(box)/payment-processing-ec.key.pem",
            ])
        let payload = try #require(decrypted.json?["payload"] as? [String: Any], "\(decrypted.standardError)")
        #expect(payload["paymentDataType"] as? String == "EMV")
        #expect(payload["transactionAmount"] as? Int == 500)
        #expect(payload["currencyCode"] as? String == "392")
    }

    @Test("mint bad inputs: missing folder, unknown currency, too many decimals, bad options; no file is written")
    func mintBadInputs() async throws {
        let (box, folder) = try await CommandLineSandbox.pathAndFolder()
        defer { folder.remove() }
        let out = folder.path("token.json")
        let cases: [([String], Int32, String)] = [
            (
                ["sandbox", "mint", folder.path("missing"), "--amount", "1", "--currency", "USD", "--out", out], 1,
                "no sandbox folder"
            ),
            (["sandbox", "mint", box, "--amount", "1", "--currency", "ZZZ", "--out", out], 64, "unknown currency"),
            (["sandbox", "mint", box, "--amount", "10.755", "--currency", "USD", "--out", out], 64, "decimals"),
            (["sandbox", "mint", box, "--amount", "1.5", "--currency", "JPY", "--out", out], 64, "decimals"),
            (["sandbox", "mint", box, "--amount", "ten", "--currency", "USD", "--out", out], 64, "amount"),
            (
                ["sandbox", "mint", box, "--amount", "1", "--currency", "USD", "--kind", "EC_v2", "--out", out], 64,
                "--kind"
            ),
            (
                [
                    "sandbox", "mint", box, "--amount", "1", "--currency", "USD", "--application-data", "%%%", "--out",
                    out,
                ], 64, "base64"
            ),
            (
                [
                    "sandbox", "mint", box, "--amount", "1", "--currency", "USD", "--signing-time", "yesterday",
                    "--out", out,
                ], 64, "--signing-time"
            ),
            (["sandbox", "mint", box, "--amount", "1", "--currency", "USD", "--pan", "1234", "--out", out], 1, "Luhn"),
            (["sandbox", "mint", box, "--currency", "USD", "--out", out], 64, "--amount"),
        ]
        for (arguments, status, message) in cases {
            let result = try await CommandLineTool.run(arguments)
            #expect(result.status == status, "\(arguments): \(result.standardError)")
            #expect(result.standardError.contains(message), "\(arguments): \(result.standardError)")
            #expect(result.standardOutput.isEmpty)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).isEmpty)
    }

    @Test("mint --batch writes one token per line, each bound to its amount, currency and applicationData")
    func mintBatch() async throws {
        let (box, folder) = try await CommandLineSandbox.pathAndFolder()
        defer { folder.remove() }
        let applicationData = Data("checkout:chk_1".utf8).base64EncodedString()
        let lines = [
            #"{"name": "chk_1", "amount": "12.34", "currency": "USD", "applicationData": "\#(applicationData)"}"#,
            "",
            #"{"name": "chk_2", "amount": "500", "currency": "JPY", "kind": "RSA_v1"}"#,
            #"{"name": "chk-3.x", "amount": "1.000", "currency": "KWD", "pan": "4817499999000051"}"#,
        ]
        try Data(lines.joined(separator: "\n").utf8).write(to: folder.url.appendingPathComponent("requests.jsonl"))
        let out = folder.path("tokens")
        let result = try await CommandLineTool.run([
            "sandbox", "mint", box, "--batch", folder.path("requests.jsonl"), "--out-dir", out,
        ])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.json?["minted"] as? Int == 3)
        let written = try FileManager.default.contentsOfDirectory(atPath: out).sorted()
        #expect(written == ["chk-3.x.json", "chk_1.json", "chk_2.json"])
        let expected: [(String, String, Int, String, String)] = [
            ("chk_1", "ec", 1234, "840", "4761120010000492"), ("chk_2", "rsa", 500, "392", "4761120010000492"),
            ("chk-3.x", "ec", 1000, "414", "4817499999000051"),
        ]
        for (name, suffix, amount, currency, pan) in expected {
            let path = "\(out)/\(name).json"
            #expect(ExternalTool.mode(path) == 0o600, "\(name)")
            let decrypted = try await ExternalTool.run(
                "python3",
                [
                    ExternalTool.python, "decrypt", path, "--cert", "\(box)/payment-processing-\(suffix).pem", "--key",
                    "\(box)/payment-processing-\(suffix).key.pem",
                ])
            let payload = try #require(decrypted.json?["payload"] as? [String: Any], "\(decrypted.standardError)")
            #expect(payload["transactionAmount"] as? Int == amount, "\(name)")
            #expect(payload["currencyCode"] as? String == currency, "\(name)")
            #expect(payload["applicationPrimaryAccountNumber"] as? String == pan, "\(name)")
        }
        let token = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(out)/chk_1.json")))
                as? [String: Any])
        let header = try #require((token["paymentData"] as? [String: Any])?["header"] as? [String: Any])
        let digest = try await ExternalTool.run("sh", ["-c", "printf 'checkout:chk_1' | openssl dgst -sha256 -r"])
        #expect(header["applicationData"] as? String == String(digest.standardOutput.prefix(64)))
    }

    @Test("mint --batch refuses a bad line (naming it), per-token options and a missing --out-dir; writes nothing")
    func mintBatchRefusals() async throws {
        let (box, folder) = try await CommandLineSandbox.pathAndFolder()
        defer { folder.remove() }
        let out = folder.path("tokens")
        let cases: [(String, [String], Int32, String)] = [
            (
                #"{"name": "a", "amount": "1", "currency": "USD"}"# + "\n"
                    + #"{"name": "a", "amount": "2", "currency": "USD"}"#, [], 1, "line 2: the name 'a' is used twice"
            ),
            (#"{"name": "a", "amount": "1.005", "currency": "USD"}"#, [], 1, "line 1: invalid"),
            (#"{"name": "../a", "amount": "1", "currency": "USD"}"#, [], 1, "line 1: name must be"),
            (#"{"name": "a", "amount": "1", "currency": "USD", "pan": "1234"}"#, [], 1, "Luhn"),
            ("not json", [], 1, "line 1: not a request object"),
            (#"{"name": "a", "amount": "1", "currency": "USD"}"#, ["--amount", "1"], 64, "--amount cannot be used"),
        ]
        for (text, extra, status, message) in cases {
            let result = try await CommandLineTool.run(
                ["sandbox", "mint", box, "--batch", "-", "--out-dir", out] + extra, input: Data(text.utf8))
            #expect(result.status == status, "\(text): \(result.standardError)")
            #expect(result.standardError.contains(message), "\(text): \(result.standardError)")
        }
        let noOut = try await CommandLineTool.run(["sandbox", "mint", box, "--batch", "-"], input: Data())
        #expect(noOut.status == 64)
        #expect(noOut.standardError.contains("--out-dir"))
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
