import Foundation
import Foundations
import Synchronization
import TestSupport
import Testing

/// `applepay simulate`: the example scenarios through the built binary, their transcripts checked.
@Suite("applepay simulate")
struct SimulateCommandTests {
    /// A transcript: one JSON object per line.
    struct Transcript {
        var lines: [[String: Any]]
        var events: [String] { lines.compactMap { $0["event"] as? String } }
        var outcome: String? { lines.last?["outcome"] as? String }

        init(_ text: String) {
            lines = text.split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
            }
        }

        func lines(_ event: String) -> [[String: Any]] { lines.filter { $0["event"] as? String == event } }
    }

    static func scenario(_ name: String) -> String { Repository.scenarios.appendingPathComponent("\(name).json").path }

    /// The example scenario `name` as a JSON object, to change and write elsewhere.
    static func scenarioObject(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: scenario(name)))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func makeSandbox(in folder: TemporaryDirectory, merchantIdentifier: String = "merchant.com.example.shop")
        async throws -> String
    {
        let path = folder.path("sandbox")
        let made = try await CommandLineTool.run(["sandbox", "init", path, "--merchant-id", merchantIdentifier])
        #expect(made.status == 0, "sandbox init: \(made.standardError)")
        return path
    }

    /// How the sheet opens in most examples: the merchant validated, then the card and the address selected.
    static let opening = ["validatemerchant", "paymentmethodselected", "shippingcontactselected"]

    /// Expected event sequence and outcome of each example with its in-process merchant.
    static let expectations: [(String, [String], String)] = [
        ("plain-purchase", opening + ["shippingmethodselected", "paymentauthorized", "finished"], "success"),
        (
            "unserviceable-address",
            opening + ["authorizationblocked", "shippingcontactselected", "paymentauthorized", "finished"], "success"
        ),
        (
            "coupon-invalid-then-valid",
            opening + [
                "couponcodechanged", "couponcodechanged", "authorizationblocked", "couponcodechanged",
                "paymentauthorized", "finished",
            ], "success"
        ),
        (
            "recurring-subscription", ["validatemerchant", "paymentmethodselected", "paymentauthorized", "finished"],
            "success"
        ),
        ("cancel", opening + ["shippingmethodselected", "cancel", "finished"], "cancelled"),
        ("merchant-timeout", opening + ["shippingmethodselected", "finished"], "timedOut"),
    ]

    @Test("every example scenario runs with its own merchant: events and outcome as expected")
    func examples() async throws {
        let folder = try TemporaryDirectory(prefix: "simulate")
        defer { folder.remove() }
        let sandbox = try await Self.makeSandbox(in: folder)
        for (name, events, outcome) in Self.expectations {
            let result = try await CommandLineTool.run(["simulate", Self.scenario(name), "--sandbox", sandbox])
            #expect(result.status == 0, "\(name): \(result.standardError)")
            let transcript = Transcript(result.standardOutput)
            #expect(transcript.events == events, "\(name)")
            #expect(transcript.outcome == outcome, "\(name)")
            // The sheet's 30 s deadline and the scenarios' late answers run on a virtual clock: a real wait would take
            // 30 s of the child's own run time (its wait for a free subprocess slot is not counted).
            #expect(result.elapsed < .seconds(25), "\(name) must not wait in real time (ran \(result.elapsed))")
            // Never a card number in the transcript, nor the token's encrypted data.
            for pan in ["4761120010000492", "5204247750001471"] {
                #expect(!result.standardOutput.contains(pan), "\(name)")
            }
            #expect(!result.standardOutput.contains("paymentData"), "\(name)")
            // Before authorization the merchant saw only a redacted address.
            for line in transcript.lines("shippingcontactselected") {
                let contact = line["shippingContact"] as? [String: Any] ?? [:]
                #expect(
                    Set(contact.keys).isSubset(of: [
                        "locality", "administrativeArea", "postalCode", "country", "countryCode",
                    ]))
            }
        }
    }

    @Test("the transcripts carry the merchant's answers")
    func answers() async throws {
        let folder = try TemporaryDirectory(prefix: "simulate")
        defer { folder.remove() }
        let sandbox = try await Self.makeSandbox(in: folder)

        let unserviceable = Transcript(
            try await CommandLineTool.run(["simulate", Self.scenario("unserviceable-address"), "--sandbox", sandbox])
                .standardOutput)
        let contacts = unserviceable.lines("shippingcontactselected")
        let firstErrors = (contacts.first?["answer"] as? [String: Any])?["errors"] as? [[String: Any]]
        #expect(firstErrors?.first?["code"] as? String == "addressUnserviceable")
        #expect((contacts.first?["shippingContact"] as? [String: Any])?["countryCode"] as? String == "AU")
        #expect((unserviceable.lines("authorizationblocked").first?["reasons"] as? [String]) == ["merchantErrors"])

        let purchase = Transcript(
            try await CommandLineTool.run(["simulate", Self.scenario("plain-purchase"), "--sandbox", sandbox])
                .standardOutput)
        let payment = purchase.lines("paymentauthorized").first?["payment"] as? [String: Any]
        #expect(payment?["card"] as? String == "Visa 0492")
        #expect(payment?["lastFour"] as? String == "0492")
        #expect((payment?["transactionIdentifier"] as? String)?.count == 64)
        #expect(
            payment?["amount"] as? String == (purchase.lines.last?["total"] as? [String: Any])?["amount"] as? String)
        let redacted = purchase.lines("shippingcontactselected").first?["shippingContact"] as? [String: Any]
        #expect(redacted?["postalCode"] as? String == "95014")
        let full = payment?["shippingContact"] as? [String: Any]
        #expect(full?["postalCode"] as? String == "95014-2083")
        #expect(full?["givenName"] as? String == "Jane")

        let timeout = Transcript(
            try await CommandLineTool.run(["simulate", Self.scenario("merchant-timeout"), "--sandbox", sandbox])
                .standardOutput)
        #expect(timeout.lines("shippingmethodselected").first?["timedOut"] as? Bool == true)
        #expect(timeout.lines.last?["reason"] as? String == "merchantTimeout")
    }

    @Test("without --sandbox a temporary sandbox is made for the run")
    func temporarySandbox() async throws {
        let result = try await CommandLineTool.run(["simulate", Self.scenario("recurring-subscription")])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(Transcript(result.standardOutput).outcome == "success")
    }

    @Test("an invalid scenario exits 1 naming the field; usage mistakes exit 64")
    func errors() async throws {
        let folder = try TemporaryDirectory(prefix: "simulate")
        defer { folder.remove() }
        var object = try Self.scenarioObject("plain-purchase")
        var wallet = object["wallet"] as? [String: Any] ?? [:]
        var cards = wallet["cards"] as? [[String: Any]] ?? []
        cards[0]["expirationDate"] = "2912"
        wallet["cards"] = cards
        object["wallet"] = wallet
        let bad = folder.path("bad.json")
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: bad))
        let invalid = try await CommandLineTool.run(["simulate", bad])
        #expect(invalid.status == 1)
        #expect(invalid.standardError.contains("wallet.cards[0].expirationDate"))
        #expect(invalid.standardOutput.isEmpty)

        let missing = try await CommandLineTool.run(["simulate", folder.path("nothing.json")])
        #expect(missing.status == 1)
        #expect(try await CommandLineTool.run(["simulate"]).status == 64)
        #expect(try await CommandLineTool.run(["simulate", bad, "--merchant-url", "ftp://example.com"]).status == 64)
        #expect(try await CommandLineTool.run(["simulate", bad, "--frobnicate"]).status == 64)
        let help = try await CommandLineTool.run(["simulate", "--help"])
        #expect(help.status == 0 && help.standardOutput.contains("--merchant-url"))
    }

    @Test("with --merchant-url the scenarios run against the merchant server's demo store")
    func merchantServer() async throws {
        try await RunningServer.servingNewSandbox(prefix: "simulate-server") { sandbox, url in

            let expected: [(String, String, String?)] = [
                ("plain-purchase", "success", nil), ("unserviceable-address", "success", "authorizationblocked"),
                ("coupon-invalid-then-valid", "success", "authorizationblocked"), ("cancel", "cancelled", nil),
            ]
            for (name, outcome, mustContain) in expected {
                let result = try await CommandLineTool.run(
                    ["simulate", Self.scenario(name), "--merchant-url", url, "--sandbox", sandbox], timeout: 60)
                #expect(result.status == 0, "\(name): \(result.standardError)")
                let transcript = Transcript(result.standardOutput)
                #expect(transcript.outcome == outcome, "\(name): \(result.standardOutput)")
                #expect(
                    !transcript.events.contains("validatemerchant"), "an app session asks for no merchant validation")
                if let mustContain { #expect(transcript.events.contains(mustContain), "\(name)") }
            }
            // Scenarios without a cart cannot ask a server.
            let subscription = try await CommandLineTool.run(
                ["simulate", Self.scenario("recurring-subscription"), "--merchant-url", url, "--sandbox", sandbox])
            #expect(subscription.status == 1)
            #expect(subscription.standardError.contains("checkout"))
        }
    }
}

extension RunningServer {
    /// `serve` on `sandbox` with a SQLite store in `folder` on any free port, then `extra`.
    static func serveArguments(_ sandbox: String, in folder: TemporaryDirectory, _ extra: [String] = []) -> [String] {
        ["serve", "--sandbox", sandbox, "--store", "sqlite:" + folder.path("orders.sqlite"), "--port", "0"] + extra
    }

    /// A sandbox in a new folder and `serve` on it: runs `body` with the sandbox's path and the server's URL, then
    /// stops the server and removes the folder.
    static func servingNewSandbox<T>(prefix: String, _ body: (String, String) async throws -> T) async throws -> T {
        let folder = try TemporaryDirectory(prefix: prefix)
        defer { folder.remove() }
        let sandbox = try await SimulateCommandTests.makeSandbox(in: folder)
        return try await serving(sandbox, in: folder) { _, url in try await body(sandbox, url) }
    }

    /// `serve` on `sandbox` with a SQLite store in `folder`: runs `body` with the server and its URL, then stops it.
    static func serving<T>(
        _ sandbox: String, in folder: TemporaryDirectory, _ body: (RunningServer, String) async throws -> T
    ) async throws -> T {
        try await with(arguments: serveArguments(sandbox, in: folder)) { server in
            let url = try #require(server.baseURL, "the server did not start: \(server.standardError)")
            return try await body(server, url)
        }
    }
}

/// `applepay serve` in the background, stopped with SIGTERM.
///
/// Its output is read by threads of its own and its exit is waited for on another, so that no test holds one of
/// Swift's cooperative threads while the server runs.
final class RunningServer: Sendable {
    private let process: Process
    /// Bytes a pipe's reader collects.
    final class Buffer: Sendable {
        private let data = Mutex(Data())
        func append(_ bytes: Data) { data.withLock { $0.append(bytes) } }
        var text: String { String(decoding: data.withLock { $0 }, as: UTF8.self) }
    }

    private let output = Buffer()
    private let errors = Buffer()
    private let url = Mutex<String?>(nil)
    /// Entered by each pipe reader, left at end of file.
    private let readers = DispatchGroup()

    private init(process: Process) { self.process = process }

    /// Starts `applepay` with `arguments` and waits (at most 20 seconds) for it to print its URL.
    /// The admin API token every server started here gets (`APPLEPAY_ADMIN_TOKEN`).
    static let adminToken = "test-admin-token-0123456789abcdef0123"

    static func start(arguments: [String]) async throws -> RunningServer {
        let process = Process()
        process.executableURL = CommandLineTool.executable
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["APPLEPAY_ADMIN_TOKEN"] = RunningServer.adminToken
        process.environment = environment
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        let server = RunningServer(process: process)
        // Started from a thread of `blocking`, so that the server runs at that thread's lower priority.
        try await blocking { try process.run() }
        for (pipe, buffer) in [(stdout, server.output), (stderr, server.errors)] {
            let readers = server.readers
            readers.enter()
            let reader = Thread {
                defer { readers.leave() }
                while true {
                    let bytes = pipe.fileHandleForReading.availableDataRetryingInterrupts()
                    if bytes.isEmpty { break }
                    buffer.append(bytes)
                }
            }
            reader.start()
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline, process.isRunning {
            let text = server.output.text
            if let range = text.range(of: #"http://[0-9.]+:[0-9]+"#, options: .regularExpression) {
                server.url.withLock { $0 = String(text[range]) }
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return server
    }

    /// The URL the server printed, or nil when it did not start within 20 seconds.
    var baseURL: String? { url.withLock { $0 } }

    /// What the server printed on standard output so far.
    var standardOutput: String { output.text }

    /// What the server printed on standard error so far.
    var standardError: String { errors.text }

    /// Kills the process with SIGKILL, as a power cut or the OOM killer would, and waits until it is gone.
    func killAbruptly() async {
        let process = self.process
        _ = try? await blocking { () -> Int32 in
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    /// Sends SIGTERM (SIGKILL after 30 seconds) and returns the exit status once the server has exited and all
    /// it printed has been read.
    @discardableResult
    func stop() async -> Int32 {
        let process = self.process
        let readers = self.readers
        let status = try? await blocking { () -> Int32 in
            if process.isRunning {
                kill(process.processIdentifier, SIGTERM)
                let deadline = Date().addingTimeInterval(30)
                while process.isRunning, Date() < deadline { usleep(20_000) }
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            }
            process.waitUntilExit()
            _ = readers.wait(timeout: .now() + 10)
            return process.terminationStatus
        }
        return status ?? -1
    }

    /// Runs `body` with a started server and stops the server afterwards, whether `body` throws or not.
    static func with<T>(arguments: [String], _ body: (RunningServer) async throws -> T) async throws -> T {
        let server = try await start(arguments: arguments)
        return try await withCleanup {
            try await body(server)
        } cleanup: {
            await server.stop()
        }
    }
}
