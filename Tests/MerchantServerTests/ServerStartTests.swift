import Foundation
import MerchantCore
import MerchantHTTP
import MerchantSandbox
import MerchantServer
import MerchantStore
import MerchantTestSupport
import Sandbox
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Starting the server: configuration and key checks")
struct ServerStartTests {
    /// A copy of the sandbox's merchant files that a test may damage.
    func copyOfSandbox(_ directory: TemporaryDirectory) async throws -> String {
        let source = try await SharedSandbox.get().folder
        let target = directory.url.appendingPathComponent("keys")
        try FileManager.default.copyItem(at: source, to: target)
        return target.path
    }

    func start(_ folder: String, in directory: TemporaryDirectory) async throws(ServerStartError) {
        var configuration = MerchantServerConfiguration()
        configuration.port = 0
        configuration.useSandbox(folder: folder)
        configuration.storeLocation = .sqlite(path: directory.path("orders.sqlite"))
        let application = try await MerchantApplication.start(configuration, plugins: [SandboxMode()], logger: .silent)
        await application.shutdown()
    }

    /// Starting with `configuration` fails (else records `unexpected`); `check` looks at the error.
    func expectRefused(
        _ configuration: MerchantServerConfiguration, _ unexpected: Comment, check: (ServerStartError) -> Void
    ) async {
        do {
            let application = try await MerchantApplication.start(
                configuration, plugins: [SandboxMode()], logger: .silent)
            await application.shutdown()
            Issue.record(unexpected)
        } catch {
            check(error)
        }
    }

    @Test("outside sandbox mode, refuses to start without --processor, and says why; starts with one")
    func processorRequired() async throws {
        let directory = try TemporaryDirectory(prefix: "start")
        defer { directory.remove() }
        var configuration = MerchantServerConfiguration()
        configuration.port = 0
        configuration.useSandbox(folder: try await copyOfSandbox(directory))
        configuration.sandboxFolder = nil  // real keys, as a production server has
        configuration.storeLocation = .sqlite(path: directory.path("orders.sqlite"))
        await expectRefused(configuration, "started without a processor") {
            #expect($0.code == .noProcessor)
            #expect($0.message.contains("--processor URL"))
        }
        // Outside sandbox mode the http processor is https and authenticated.
        configuration.processor = .http(url: URL(string: "http://127.0.0.1:9")!)
        await expectRefused(configuration, "started with a plain-http, unauthenticated processor outside sandbox mode")
        {
            #expect($0.code == .invalidConfiguration)
            #expect($0.message.contains("https and authenticated"))
        }
        let tokenFile = directory.path("processor.token")
        try Data("a-bearer-token\n".utf8).write(to: URL(fileURLWithPath: tokenFile))
        chmod(tokenFile, 0o644)
        configuration.processor = .http(url: URL(string: "https://127.0.0.1:9")!)
        configuration.processorAuthentication = HTTPProcessorAuthentication(bearerTokenFile: tokenFile)
        await expectRefused(configuration, "read a bearer token file other users can read") {
            #expect($0.code == .insecureKeyFile)
        }
        chmod(tokenFile, 0o600)
        let application = try await MerchantApplication.start(configuration, plugins: [SandboxMode()], logger: .silent)
        #expect(application.processor.name == "http")
        await application.shutdown()
    }

    @Test("starts with the sandbox's keys")
    func starts() async throws {
        let directory = try TemporaryDirectory(prefix: "start")
        defer { directory.remove() }
        try await start(try await copyOfSandbox(directory), in: directory)
    }

    @Test("refuses a missing key, a key readable by others, a key that is not the certificate's, and a damaged key")
    func refusesBadKeys() async throws {
        let directory = try TemporaryDirectory(prefix: "start")
        defer { directory.remove() }
        let folder = try await copyOfSandbox(directory)
        let ecKey = folder + "/payment-processing-ec.key.pem"
        let rsaKey = folder + "/payment-processing-rsa.key.pem"
        let saved = try Data(contentsOf: URL(fileURLWithPath: ecKey))

        try FileManager.default.removeItem(atPath: ecKey)
        await #expect(throws: ServerStartError(.missingFile, "")) { try await start(folder, in: directory) }

        try saved.write(to: URL(fileURLWithPath: ecKey))
        chmod(ecKey, 0o644)
        do {
            try await start(folder, in: directory)
            Issue.record("started with a world-readable key")
        } catch {
            #expect(error.code == .insecureKeyFile)
            #expect(error.message.contains("chmod 600"))
            #expect(error.message.contains(ecKey))
        }

        chmod(ecKey, 0o600)
        try FileManager.default.removeItem(atPath: ecKey)
        try FileManager.default.copyItem(atPath: rsaKey, toPath: ecKey)
        chmod(ecKey, 0o600)
        await #expect(throws: ServerStartError(.keyMismatch, "")) { try await start(folder, in: directory) }

        try Data("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n".utf8).write(
            to: URL(fileURLWithPath: ecKey))
        chmod(ecKey, 0o600)
        await #expect(throws: ServerStartError(.unreadableFile, "")) { try await start(folder, in: directory) }
    }

    @Test("reads a configuration file with a server section, paths relative to the file")
    func configurationFile() throws {
        let directory = try TemporaryDirectory(prefix: "config")
        defer { directory.remove() }
        var store =
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(StoreConfiguration.demo)) as? [String: Any]
            ?? [:]
        store["server"] = [
            "port": 9191, "host": "127.0.0.1", "store": "sqlite:data/orders.sqlite", "maximumBodySize": 1000,
            "paymentProcessing": [["certificate": "keys/pp.pem", "key": "keys/pp.key.pem"]],
        ]
        let file = directory.path("store.json")
        try JSONSerialization.data(withJSONObject: store).write(to: URL(fileURLWithPath: file))
        let configuration = try MerchantServerConfiguration.load(file: file)
        #expect(configuration.port == 9191)
        #expect(configuration.maximumBodySize == 1000)
        #expect(configuration.storeLocation == .sqlite(path: directory.path("data/orders.sqlite")))
        #expect(configuration.paymentProcessing.first?.key == directory.path("keys/pp.key.pem"))
        #expect(configuration.store.storeName == StoreConfiguration.demo.storeName)

        try Data("{\"storeName\": 3}".utf8).write(to: URL(fileURLWithPath: file))
        #expect(throws: ServerStartError(.invalidConfiguration, "")) {
            _ = try MerchantServerConfiguration.load(file: file)
        }
    }

    @Test("the server section's limits: defaults, overrides, \"off\", a server-only file, and bad values refused")
    func limits() throws {
        let directory = try TemporaryDirectory(prefix: "server-limits")
        defer { directory.remove() }
        let file = directory.path("server.json")
        func load(_ server: [String: Any]) throws -> MerchantServerConfiguration {
            try JSONSerialization.data(withJSONObject: ["server": server]).write(to: URL(fileURLWithPath: file))
            return try MerchantServerConfiguration.load(file: file)
        }
        let defaults = try load([:])
        #expect(defaults.store.storeName == StoreConfiguration.demo.storeName)
        #expect(defaults.perClientConnectionLimit == 64)
        #expect(defaults.connectionLimit == 4096)
        #expect(defaults.requestTimeout == 30)
        #expect(defaults.rateLimits == RateLimits())
        #expect(defaults.checkoutLifetime == .seconds(86_400))
        #expect(defaults.proxy == nil)
        let chosen = try load([
            "requestTimeout": 5, "connectionLimit": 10_000, "perClientConnectionLimit": 3,
            "checkoutLifetimeSeconds": 3600,
            "pruneIntervalSeconds": 60, "proxy": "http://proxy.internal:3128",
            "rateLimits": ["checkouts": ["perMinute": 10, "burst": 5]],
        ])
        #expect(chosen.requestTimeout == 5)
        #expect(chosen.perClientConnectionLimit == 3)
        #expect(chosen.connectionLimit == 10_000)
        #expect(chosen.checkoutLifetime == .seconds(3600))
        #expect(chosen.pruneInterval == .seconds(60))
        #expect(chosen.proxy == "http://proxy.internal:3128")
        #expect(chosen.rateLimits?.checkouts == RateLimit(perMinute: 10, burst: 5))
        #expect(chosen.rateLimits?.updates == RateLimits().updates)
        #expect(try load(["rateLimits": "off"]).rateLimits == nil)
        for bad: [String: Any] in [
            ["requestTimeout": 0], ["connectionLimit": 0], ["perClientConnectionLimit": -1],
            ["checkoutLifetimeSeconds": 5],
            ["rateLimits": ["updates": ["perMinute": 0, "burst": 1]]], ["pruneIntervalSeconds": 0],
        ] {
            #expect(throws: ServerStartError(.invalidConfiguration, ""), "\(bad)") { _ = try load(bad) }
        }
    }
}
