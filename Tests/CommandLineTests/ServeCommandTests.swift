import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `applepay serve` as a user runs it: a sandbox, a free port, a request, SIGTERM.
@Suite("applepay serve", .serialized)
struct ServeCommandTests {
    /// A new folder holding a private copy of the command-line tests' shared sandbox, and the copy's path.
    func makeSandbox(prefix: String) async throws -> (TemporaryDirectory, String) {
        let folder = try TemporaryDirectory(prefix: prefix)
        do {
            let path = folder.path("sandbox")
            try FileManager.default.copyItem(atPath: try await CommandLineSandbox.path(), toPath: path)
            return (folder, path)
        } catch {
            folder.remove()
            throw error
        }
    }

    @Test("prints its URL, answers over HTTP, and exits 0 on SIGTERM after logging JSON lines")
    func servesAndStops() async throws {
        let (folder, sandbox) = try await makeSandbox(prefix: "serve")
        defer { folder.remove() }
        let arguments = RunningServer.serveArguments(sandbox, in: folder)
        let (banner, products, status, log) = try await RunningServer.with(arguments: arguments) { server in
            let url = try #require(server.baseURL, "the server did not start: \(server.standardError)")
            let curl = try await Subprocess.run("curl", ["-s", "--max-time", "10", url + "/v1/products"])
            let status = await server.stop()
            let banner = server.standardOutput.split(separator: "\n").first.map(String.init) ?? ""
            return (banner, curl.standardOutput, status, server.standardError)
        }
        #expect(banner.hasPrefix("Serving Example Coffee Roasters on http://127.0.0.1:"))
        #expect(products.contains("\"sku\":\"MUG-01\""))
        #expect(status == 0)
        let lines = log.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.contains { $0["route"] as? String == "/v1/products" && $0["status"] as? Int == 200 })
        #expect(lines.contains { $0["msg"] as? String == "stopped" })
        #expect(FileManager.default.fileExists(atPath: folder.path("orders.sqlite")))
    }

    /// How a merchant key is left unsafe, and what the refusal says of it.
    enum UnsafeKey: String, CaseIterable, Sendable {
        case readableByOthers, symbolicLink

        /// Makes the key in `sandbox` unsafe (a link points into `folder`); answers what the error must say.
        func apply(to sandbox: String, folder: TemporaryDirectory) throws -> String {
            switch self {
            case .readableByOthers:
                chmod(sandbox + "/merchant-identity.key.pem", 0o644)
                return "merchant-identity.key.pem is readable by other users"
            case .symbolicLink:
                let key = sandbox + "/payment-processing-ec.key.pem"
                let moved = folder.path("real-key.pem")
                try FileManager.default.moveItem(atPath: key, toPath: moved)
                try FileManager.default.createSymbolicLink(atPath: key, withDestinationPath: moved)
                return "payment-processing-ec.key.pem is a symbolic link"
            }
        }
    }

    @Test(
        "refuses to start when a merchant key is readable by other users, or a symbolic link even to a private file",
        arguments: UnsafeKey.allCases)
    func refusesUnsafeKey(_ unsafe: UnsafeKey) async throws {
        let (folder, sandbox) = try await makeSandbox(prefix: "serve")
        defer { folder.remove() }
        let message = try unsafe.apply(to: sandbox, folder: folder)
        let result = try await CommandLineTool.run(RunningServer.serveArguments(sandbox, in: folder), timeout: 30)
        #expect(result.status == 1)
        #expect(result.standardError.contains(message))
        #expect(result.standardError.contains("insecureKeyFile"))
    }

    @Test("refuses an admin token shorter than 32 characters, from APPLEPAY_ADMIN_TOKEN or the file, never printing it")
    func refusesShortAdminToken() async throws {
        let (folder, sandbox) = try await makeSandbox(prefix: "serve")
        defer { folder.remove() }
        let arguments = RunningServer.serveArguments(sandbox, in: folder)
        let short = "short-admin-token-0123456789"  // 28 characters
        let fromEnvironment = try await CommandLineTool.run(
            arguments, environment: ["APPLEPAY_ADMIN_TOKEN": short], timeout: 30)
        #expect(fromEnvironment.status == 1)
        #expect(fromEnvironment.standardError.contains("weakAdminToken"), "\(fromEnvironment.standardError)")
        #expect(fromEnvironment.standardError.contains("at least 32"))
        #expect(!fromEnvironment.standardError.contains(short))
        let file = folder.path("server.json")
        try Data(#"{"server": {"adminToken": "\#(short)"}}"#.utf8).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o600)
        let fromFile = try await CommandLineTool.run(
            arguments + ["--config", file], environment: ["APPLEPAY_ADMIN_TOKEN": ""], timeout: 30)
        #expect(fromFile.status == 64)
        #expect(fromFile.standardError.contains("server.adminToken"), "\(fromFile.standardError)")
        #expect(fromFile.standardError.contains("tooShort"))
        #expect(!fromFile.standardError.contains(short))
    }

    @Test("refuses a configuration file holding an admin token that other users may read")
    func refusesReadableConfigurationWithToken() async throws {
        let (folder, sandbox) = try await makeSandbox(prefix: "serve")
        defer { folder.remove() }
        let file = folder.path("server.json")
        let token = String(repeating: "0123456789abcdef", count: 3)
        try Data(#"{"server": {"adminToken": "\#(token)"}}"#.utf8).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o644)
        let arguments = RunningServer.serveArguments(sandbox, in: folder, ["--config", file])
        let result = try await CommandLineTool.run(arguments, timeout: 30)
        #expect(result.status == 1)
        #expect(result.standardError.contains("insecureConfigurationFile"), "\(result.standardError)")
        #expect(result.standardError.contains("server.json is readable by other users"))
        #expect(!result.standardError.contains(token))
        // Private, it serves.
        chmod(file, 0o600)
        let served = try await RunningServer.with(arguments: arguments) { server in
            let url = server.baseURL
            await server.stop()
            return url
        }
        #expect(served != nil)
    }

    @Test("the file's trustedProxies reach the server: clients behind the loopback proxy get buckets of their own")
    func trustedProxiesFromFile() async throws {
        let (folder, sandbox) = try await makeSandbox(prefix: "serve")
        defer { folder.remove() }
        let file = folder.path("server.json")
        let settings = #"""
            {"server": {"trustedProxies": ["127.0.0.1", "::1"],
                        "rateLimits": {"checkouts": {"perMinute": 1, "burst": 1}}}}
            """#
        try Data(settings.utf8).write(to: URL(fileURLWithPath: file))
        let arguments = RunningServer.serveArguments(sandbox, in: folder, ["--config", file])
        let statuses = try await RunningServer.with(arguments: arguments) { server -> [String] in
            let url = try #require(server.baseURL, "the server did not start: \(server.standardError)")
            var statuses: [String] = []
            for client in ["203.0.113.1", "203.0.113.1", "203.0.113.2"] {
                let curl = try await Subprocess.run(
                    "curl",
                    [
                        "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "-H",
                        "Content-Type: application/json", "-H", "X-Forwarded-For: \(client)", "-d",
                        #"{"items": [{"sku": "MUG-01", "quantity": 1}]}"#, url + "/v1/checkouts",
                    ])
                statuses.append(curl.standardOutput)
            }
            return statuses
        }
        #expect(statuses == ["201", "429", "201"])
    }

    @Test("--public-url: the one base URL, logged at start; an http or trailing-slash URL is a usage error")
    func publicURL() async throws {
        let (folder, sandbox) = try await makeSandbox(prefix: "serve-public")
        defer { folder.remove() }
        let arguments = RunningServer.serveArguments(sandbox, in: folder, ["--public-url", "https://shop.example.com"])
        let log = try await RunningServer.with(arguments: arguments) { server in
            _ = try #require(server.baseURL, "the server did not start: \(server.standardError)")
            _ = await server.stop()
            return server.standardError
        }
        let lines = log.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(
            lines.contains {
                $0["msg"] as? String == "listening" && $0["publicURL"] as? String == "https://shop.example.com"
            },
            "\(log)")
        for bad in ["http://shop.example.com", "https://shop.example.com/"] {
            let result = try await CommandLineTool.run(["serve", "--public-url", bad])
            #expect(result.status == 64, "\(bad): \(result.standardError)")
        }
    }

    @Test("a store that is neither sqlite:PATH nor a PostgreSQL URI is a usage error")
    func usage() async throws {
        let result = try await CommandLineTool.run(["serve", "--store", "mysql://x"])
        #expect(result.status == 64)
        #expect(result.standardError.contains("--store must be sqlite:PATH or postgresql://"))
    }

    @Test("a PostgreSQL store that does not answer stops the start with invalidStore, password hidden")
    func unreachablePostgres() async throws {
        let sandbox = try await CommandLineSandbox.path()
        let result = try await CommandLineTool.run([
            "serve", "--sandbox", sandbox, "--port", "0", "--store",
            "postgresql://user:hunter2@localhost/db?host=/nonexistent",
        ])
        #expect(result.status == 1)
        #expect(result.standardError.contains("invalidStore"))
        #expect(!result.standardError.contains("hunter2"))
    }

    @Test("applepay demo plays the scenarios against a live server and prints transcripts and orders")
    func demo() async throws {
        let scenarios = Repository.scenarios.path
        let (folder, sandbox) = try await makeSandbox(prefix: "demo")
        defer { folder.remove() }
        let result = try await CommandLineTool.run(
            ["demo", "--scenarios", scenarios, "--sandbox", sandbox], timeout: 120)
        #expect(result.status == 0, "\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.first?["server"] as? String != nil)
        #expect(lines.contains { $0["event"] as? String == "finished" && $0["outcome"] as? String == "success" })
        let orders = lines.compactMap { $0["order"] as? [String: Any] }
        #expect(!orders.isEmpty)
        #expect(orders.allSatisfy { $0["status"] as? String == "paid" })
        #expect(orders.allSatisfy { (($0["payment"] as? [String: Any])?["lastFour"] as? String)?.count == 4 })
        #expect(!result.standardOutput.contains("onlinePaymentCryptogram"))
    }
}
