import Foundation
import TestSupport
import Testing

@Suite("applepay request validate")
struct RequestValidateTests {
    static let fixtures = Repository.root.appendingPathComponent("Tests/Fixtures/requests")

    static func fixture(_ name: String) -> String { fixtures.appendingPathComponent(name).path }

    @Test(
        "Apple's documented examples are valid: exit 0 and {\"valid\": true, \"problems\": []}",
        arguments: ["basic.json", "recurring.json", "multi-token.json"])
    func valid(name: String) async throws {
        let result = try await CommandLineTool.run(["request", "validate", Self.fixture(name)])
        #expect(result.status == 0, "\(result.standardError)")
        let json = try #require(result.json)
        #expect(json["valid"] as? Bool == true)
        #expect((json["problems"] as? [Any])?.isEmpty == true)
    }

    @Test("a request breaking rules: exit 1 and every problem with path, code, severity and message")
    func invalid() async throws {
        let result = try await CommandLineTool.run(["request", "validate", Self.fixture("invalid.json")])
        #expect(result.status == 1)
        let json = try #require(result.json)
        #expect(json["valid"] as? Bool == false)
        let problems = try #require(json["problems"] as? [[String: Any]])
        #expect(problems.count == 8)
        for problem in problems {
            #expect(Set(problem.keys) == ["path", "code", "severity", "message"])
        }
        let found = problems.map { "\($0["path"] as? String ?? "") \($0["code"] as? String ?? "")" }
        #expect(found.contains("lineItems[2].amount amount.notADecimal"))
        #expect(found.contains("total.amount total.negative"))
        #expect(problems.contains { $0["severity"] as? String == "warning" })
    }

    @Test("warnings alone still exit 0, and the document can come on standard input")
    func warningsOnly() async throws {
        let json = """
            {"countryCode": "US", "currencyCode": "USD", "merchantCapabilities": ["supports3DS", "supportsEMV"],
             "supportedNetworks": ["visa"], "total": {"label": "Shop", "amount": "0.00"}}
            """
        let result = try await CommandLineTool.run(["request", "validate", "-"], input: Data(json.utf8))
        #expect(result.status == 0)
        let problems = try #require(result.json?["problems"] as? [[String: Any]])
        #expect(problems.map { $0["code"] as? String } == ["capabilities.emvWithoutChinaUnionPay"])
        #expect(result.json?["valid"] as? Bool == true)
    }

    @Test("JSON of the wrong shape is a problem (exit 1), not a crash")
    func wrongShape() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("shape.json")
        try Data(#"{"countryCode": "US", "total": {"label": "A", "amount": 5}}"#.utf8).write(
            to: URL(fileURLWithPath: path))
        let result = try await CommandLineTool.run(["request", "validate", path])
        #expect(result.status == 1)
        let problems = try #require(result.json?["problems"] as? [[String: Any]])
        #expect(problems.first?["code"] as? String == "json.missingField")
        #expect(problems.first?["path"] as? String == "currencyCode")
    }

    @Test(
        "a file that is not JSON at all: exit 2, a clear message on standard error, nothing on standard output",
        arguments: ["not json at all", "{\"countryCode\": ", ""])
    func notJSON(text: String) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("request.json")
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let result = try await CommandLineTool.run(["request", "validate", path])
        #expect(result.status == 2)
        #expect(result.standardOutput.isEmpty)
        #expect(result.standardError.contains("not JSON"))
        #expect(result.standardError.contains("request.json"))
    }

    @Test("a missing file: exit 66 with the file named on standard error")
    func missingFile() async throws {
        let result = try await CommandLineTool.run(["request", "validate", "/no/such/request.json"])
        #expect(result.status == 66)
        #expect(result.standardError.contains("/no/such/request.json"))
        #expect(result.standardOutput.isEmpty)
    }

    @Test(
        "usage errors exit 64",
        arguments: [
            ["request", "validate"], ["request", "validate", "a.json", "b.json"],
            ["request", "validate", "--strict", "a.json"], ["request"],
        ])
    func usage(arguments: [String]) async throws {
        try await expectUsageError(arguments)
    }

    @Test("--help documents the output and every exit status")
    func help() async throws {
        let result = try await CommandLineTool.run(["request", "validate", "--help"])
        #expect(result.status == 0)
        for text in ["\"valid\"", "EXIT STATUS", "  2 ", "  64 ", "  66 ", "FILE.json"] {
            #expect(result.standardOutput.contains(text), "missing \(text)")
        }
        let parent = try await CommandLineTool.run(["request", "--help"])
        #expect(parent.status == 0)
        #expect(parent.standardOutput.contains("validate"))
    }
}
