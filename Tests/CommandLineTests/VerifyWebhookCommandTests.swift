import Foundation
import TestSupport
import Testing

/// `applepay processor verify-webhook` against the 34 signature vectors taken from the providers' official libraries'
/// tests (`Tests/Fixtures/psp/webhook-vectors.json`): each gives its expected answer through the built binary.
@Suite("applepay processor verify-webhook")
struct VerifyWebhookCommandTests {
    /// The providers' vectors (``TestSupport/Repository/pspVectors``).
    static let vectorsFile = Repository.pspVectors.appendingPathComponent("webhook-vectors.json")

    /// The vectors' keys are snake case (`signed_data`).
    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }()

    struct Vector: Decodable {
        var psp: String
        var id: String
        var secret: String
        var payload: String
        var header: String?
        var signature: String?
        var signedData: String?
        var scheme: String?
        var expected: String
        var conditions: String?
    }

    static func vectors() throws -> [Vector] {
        try Self.decoder.decode([Vector].self, from: Data(contentsOf: vectorsFile))
    }

    /// The command line a vector's conditions call for (its stated clock and tolerance, its signature's place).
    static func arguments(for vector: Vector, in all: [Vector]) throws -> (payload: String, [String]) {
        var payload = vector.payload
        var arguments: [String] = []
        switch vector.psp {
        case "stripe":
            arguments += ["--header", try #require(vector.header)]
            let conditions = vector.conditions ?? ""
            if conditions.contains("1533204620+300+100") {
                arguments += ["--now", "2018-08-02T10:17:00Z"]  // 1533204620 + 400: outside the 300 s tolerance
            } else if conditions.contains("1533204620+100") {
                arguments += ["--now", "2018-08-02T10:12:00Z"]  // 1533204620 + 100
            } else if vector.header?.hasPrefix("t=12345,") == true {
                // The libraries' tests that sign at t=12345 verify with the tolerance check off.
                arguments += ["--tolerance", "0"]
            }
        case "adyen":
            let signature = try #require(vector.signature)
            if vector.scheme?.contains("raw request body") == true || vector.signedData == vector.payload {
                arguments += ["--header", signature]  // HMAC of the raw body (HmacSignature header)
            } else if vector.payload.hasPrefix("(same item as ") {
                let name = String(vector.payload.dropFirst("(same item as ".count).prefix { $0 != "," && $0 != ")" })
                payload = try #require(all.first { $0.id == name }, "no vector \(name)").payload
                arguments += ["--signature", signature]
            } else if !vector.payload.contains("\"hmacSignature\": \"\(signature)\"") {
                // The library's test passes the expected signature beside the item.
                arguments += ["--signature", signature]
            }  // else the item carries the vector's signature in additionalData.hmacSignature
        default:
            Issue.record("unknown psp \(vector.psp)")
        }
        return (payload, arguments)
    }

    @Test("every vector gives its expected answer, exit 0 when valid and 1 when not")
    func vectorsThroughTheBinary() async throws {
        let all = try Self.vectors()
        #expect(all.count == 34)
        let folder = try TemporaryDirectory(prefix: "verify-webhook")
        defer { folder.remove() }
        var reasons: [String: [String]] = [:]
        for (index, vector) in all.enumerated() {
            let (payload, extra) = try Self.arguments(for: vector, in: all)
            let secretFile = folder.path("secret-\(index)")
            let payloadFile = folder.path("payload-\(index)")
            try Data(vector.secret.utf8).write(to: URL(fileURLWithPath: secretFile))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secretFile)
            try Data(payload.utf8).write(to: URL(fileURLWithPath: payloadFile))
            let result = try await CommandLineTool.run(
                [
                    "processor", "verify-webhook", "--psp", vector.psp, "--secret-file", secretFile, "--payload-file",
                    payloadFile,
                ] + extra, timeout: 60)
            let json = try #require(result.json, "\(vector.id): \(result.standardOutput) \(result.standardError)")
            let valid = try #require(json["valid"] as? Bool)
            #expect(valid == (vector.expected == "valid"), "\(vector.id) (#\(index)): \(json)")
            #expect(result.status == (valid ? 0 : 1), "\(vector.id)")
            reasons[vector.id, default: []].append(json["reason"] as? String ?? "")
            #expect(!result.standardOutput.contains(vector.secret) && !result.standardError.contains(vector.secret))
        }
        // Invalid for the stated reason, not by accident.
        #expect(reasons["stripe-dotnet-literal-outdated"] == ["timestampOutsideTolerance"])
        #expect(reasons["stripe-dotnet-literal-modified-payload"] == ["signatureMismatch"])
        #expect(reasons["stripe-python-scheme-v0-only"] == ["noSignatureOfExpectedScheme"])
        #expect(reasons["adyen-node-notification-item-bad-sig"] == ["signatureMismatch"])
        #expect(reasons["stripe-dotnet-malformed-header"]?.allSatisfy { $0 != "signatureMatches" } == true)
    }

    @Test("a Stripe header signed at t=12345 is refused under the default 300 s tolerance")
    func stripeToleranceByDefault() async throws {
        let vector = try #require(try Self.vectors().first { $0.id == "stripe-node-ts12345-valid-no-tolerance" })
        let folder = try TemporaryDirectory(prefix: "verify-webhook")
        defer { folder.remove() }
        try Data(vector.secret.utf8).write(to: folder.url.appendingPathComponent("secret"))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: folder.path("secret"))
        try Data(vector.payload.utf8).write(to: folder.url.appendingPathComponent("payload"))
        let base = [
            "processor", "verify-webhook", "--psp", "stripe", "--secret-file", folder.path("secret"), "--payload-file",
            folder.path("payload"), "--header", try #require(vector.header),
        ]
        let old = try await CommandLineTool.run(base, timeout: 60)
        #expect(old.status == 1)
        #expect(old.json?["reason"] as? String == "timestampOutsideTolerance")
        let atSigning = try await CommandLineTool.run(base + ["--now", "1970-01-01T03:25:45Z"], timeout: 60)
        #expect(atSigning.status == 0, "\(atSigning.standardOutput)")
    }

    @Test(
        "a secret file open to others is refused (66), as are a missing option (64) and both --signature and --header")
    func refusals() async throws {
        let folder = try TemporaryDirectory(prefix: "verify-webhook")
        defer { folder.remove() }
        try Data("whsec_test_secret".utf8).write(to: folder.url.appendingPathComponent("secret"))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: folder.path("secret"))
        try Data("{}".utf8).write(to: folder.url.appendingPathComponent("payload"))
        let open = try await CommandLineTool.run(
            [
                "processor", "verify-webhook", "--psp", "checkout", "--secret-file", folder.path("secret"),
                "--payload-file", folder.path("payload"), "--header", "00",
            ], timeout: 60)
        #expect(open.status == 66)
        #expect(open.standardError.contains("chmod 600"))
        #expect(!open.standardError.contains("whsec_test_secret"))
        let missing = try await CommandLineTool.run(["processor", "verify-webhook", "--psp", "stripe"], timeout: 60)
        #expect(missing.status == 64)
        let both = try await CommandLineTool.run(
            [
                "processor", "verify-webhook", "--psp", "adyen", "--secret-file", "s", "--payload-file", "p",
                "--signature", "a", "--header", "b",
            ], timeout: 60)
        #expect(both.status == 64)
        let unknown = try await CommandLineTool.run(
            ["processor", "verify-webhook", "--psp", "paypal", "--secret-file", "s", "--payload-file", "p"],
            timeout: 60)
        #expect(unknown.status == 64)
    }
}
