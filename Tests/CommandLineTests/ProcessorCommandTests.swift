import Foundation
import TestSupport
import Testing

/// `applepay processor serve` as a user runs it: a sandbox root, a free port, charges with curl, SIGTERM.
@Suite("applepay processor serve", .serialized)
struct ProcessorCommandTests {
    private func charge(_ url: String, key: String, root: String?) async throws -> String {
        var body: [String: Any] = [
            "idempotencyKey": key, "amount": 1000, "currencyCode": "USD",
            "paymentMethod": [
                "network": "Visa", "primaryAccountNumber": "4817499999010019", "expirationDate": "301231",
                "cryptogram": "AAAA", "eciIndicator": "7",
            ],
        ]
        if let root { body["rootFingerprint"] = root }
        let json = try JSONSerialization.data(withJSONObject: body)
        let result = try await Subprocess.run(
            "curl", ["-s", "--max-time", "20", "-X", "POST", "--data-binary", "@-", url + "/v1/charges"], input: json)
        return result.standardOutput
    }

    @Test("prints its URL, accepts only the sandbox root's tokens, logs JSON without card data, exits 0 on SIGTERM")
    func servesAndStops() async throws {
        let folder = try TemporaryDirectory(prefix: "processor-cli")
        defer { folder.remove() }
        let sandbox = try await CommandLineSandbox.path()
        let fingerprint = try await Subprocess.run(
            "openssl", ["x509", "-noout", "-fingerprint", "-sha256", "-in", sandbox + "/root.pem"])
        let root = try #require(fingerprint.standardOutput.split(separator: "=").last)
            .trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: ":", with: "").lowercased()
        let ledger = folder.path("ledger.sqlite")
        let arguments = ["processor", "serve", "--ledger", "sqlite:" + ledger, "--port", "0", "--sandbox", sandbox]
        let (banner, ours, foreign, status, log) = try await RunningServer.with(arguments: arguments) { server in
            let url = try #require(server.baseURL, "the processor did not start: \(server.standardError)")
            let ours = try await charge(url, key: "cli-ours", root: root)
            let foreign = try await charge(url, key: "cli-foreign", root: nil)
            let status = await server.stop()
            let banner = server.standardOutput.split(separator: "\n").first.map(String.init) ?? ""
            return (banner, ours, foreign, status, server.standardError)
        }
        #expect(banner.hasPrefix("Processor listening on http://127.0.0.1:"))
        #expect(ours.contains("\"status\":\"approved\""))
        #expect(foreign.contains("\"declineCode\":\"notSandboxToken\""))
        #expect(status == 0)
        let lines = log.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.filter { $0["route"] as? String == "/v1/charges" && $0["status"] as? Int == 200 }.count == 2)
        #expect(!log.contains("4817499999010019"))
        let mode = try FileManager.default.attributesOfItem(atPath: ledger)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test("a ledger that is not sqlite:PATH, or a bad fault, is a usage error")
    func usage() async throws {
        let missing = try await CommandLineTool.run(["processor", "serve"], timeout: 30)
        #expect(missing.status == 64)
        let notSQLite = try await CommandLineTool.run(["processor", "serve", "--ledger", "x.db"], timeout: 30)
        #expect(notSQLite.status == 64)
        let fault = try await CommandLineTool.run(
            ["processor", "serve", "--ledger", "sqlite:x.db", "--fault", "explode"], timeout: 30)
        #expect(fault.status == 64)
    }
}
