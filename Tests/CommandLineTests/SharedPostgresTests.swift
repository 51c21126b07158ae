import Foundation
import TestSupport
import Testing

/// Two `applepay serve` processes on one PostgreSQL database and one processor service (one ledger): what must hold
/// across instances holds. Needs `APPLEPAY_TEST_POSTGRES` (`make test` starts a private cluster; the
/// PostgresAvailabilityTests fail when it is missing there).
@Suite(
    "Two servers on one PostgreSQL", .serialized,
    .enabled(if: SharedPostgres.uri != nil, "APPLEPAY_TEST_POSTGRES is not set"))
struct SharedPostgresTests {
    @Test("the same token sent 200 times to both servers, among 200 other tokens: one charge and one order per token")
    func oneChargePerToken() async throws {
        let (setup, servers) = try await SharedPostgres.started()
        defer { setup.folder.remove() }
        let payments = try await setup.mint(count: 201, urls: servers.urls)
        // Submission k of the shared token (payment 0) goes to server k % 2; between two of them, one of the others.
        var requests: [SharedPostgres.Request] = []
        for k in 0..<200 {
            requests.append(.init(payment: 0, server: k % 2))
            requests.append(.init(payment: k + 1, server: (k + 1) % 2))
        }
        let answers = try await setup.submit(requests, payments: payments, urls: servers.urls)
        let charges =
            try await SharedPostgres.curlJSON([servers.processorURL + "/v1/charges"])["charges"] as? [[String: Any]]
        let approved = (charges ?? []).filter { $0["status"] as? String == "approved" }
        #expect(approved.count == 201)
        #expect(Set(approved.compactMap { $0["idempotencyKey"] as? String }).count == 201)
        let list = try await SharedPostgres.curlJSON([
            "-H", "Authorization: Bearer \(RunningServer.adminToken)", servers.urls[1] + "/admin/v1/orders?limit=1000",
        ])
        let orders = try #require(list["orders"] as? [[String: Any]])
        #expect(orders.count == 201)
        var orderByCheckout: [String: [String: Any]] = [:]
        for order in orders { orderByCheckout[order["checkoutId"] as? String ?? ""] = order }
        #expect(orderByCheckout.count == 201, "one order per checkout")
        #expect(orders.allSatisfy { $0["status"] as? String == "paid" })
        // Every answer is the stored outcome: success with the checkout's one order id.
        for (request, answer) in zip(requests, answers) {
            let checkoutID = payments[request.payment].checkoutID
            let stored = orderByCheckout[checkoutID]?["id"] as? String
            #expect(answer.status == "success", "\(answer)")
            #expect(answer.orderId == stored, "payment \(request.payment): \(answer)")
        }
        await servers.stop()
    }
}

extension SharedPostgresTests {
    @Test("both servers' schedulers run at the same moment, cycle after cycle: each subscription cycle charged once")
    func schedulersAtTheSameMoment() async throws {
        let (setup, servers) = try await SharedPostgres.started()
        defer { setup.folder.remove() }
        let admin = ["-H", "Authorization: Bearer \(RunningServer.adminToken)"]
        // Four monthly plans, bought on both servers; the headless sheet pays each with a merchant token.
        var ids: [String] = []
        for index in 0..<4 {
            let url = servers.urls[index % 2]
            let created = try await SharedPostgres.curlJSON([
                "-X", "POST", url + "/v1/checkouts", "-H", "Content-Type: application/json", "-d",
                #"{"items": [{"sku": "BEANS-MONTHLY", "quantity": 1}]}"#,
            ])
            let checkout = try #require(created["id"] as? String, "\(created)")
            let secret = try #require(created["clientSecret"] as? String, "\(created)")
            let paid = try await CommandLineTool.run([
                "simulate", Repository.scenarios.appendingPathComponent("plain-purchase.json").path, "--merchant-url",
                url, "--checkout", checkout, "--checkout-secret", secret, "--sandbox", setup.sandbox,
            ])
            #expect(paid.status == 0, "\(paid.standardError)")
            let list = try await SharedPostgres.curlJSON(
                admin + [url + "/admin/v1/subscriptions?checkoutId=" + checkout])
            let found = try #require((list["subscriptions"] as? [[String: Any]])?.first?["id"] as? String, "\(list)")
            ids.append(found)
        }
        for cycle in 1...3 {
            var dates: [String] = []
            for id in ids {
                let shown = try await SharedPostgres.curlJSON(
                    admin + [servers.urls[0] + "/admin/v1/subscriptions/" + id])
                dates.append(try #require((shown["subscription"] as? [String: Any])?["nextChargeAt"] as? String))
            }
            // The sandbox clock of both servers moved to the same instant, both schedulers started at once.
            let now = try #require(dates.max())
            let answers = setup.folder.path("charge-due-\(cycle)")
            var config = ""
            for (index, url) in servers.urls.enumerated() {
                if index > 0 { config += "next\n" }
                config += """
                    url = "\(url)/admin/v1/subscriptions/charge-due"
                    request = "POST"
                    header = "Content-Type: application/json"
                    header = "Authorization: Bearer \(RunningServer.adminToken)"
                    data = "{\\"now\\": \\"\(now)\\"}"
                    output = "\(answers)-\(index).json"
                    max-time = 120

                    """
            }
            let configPath = setup.folder.path("charge-due-\(cycle).config")
            try config.write(toFile: configPath, atomically: true, encoding: .utf8)
            let sent = try await Subprocess.run(
                "curl", ["-s", "--parallel", "--parallel-immediate", "-K", configPath], timeout: 300)
            #expect(sent.status == 0, "\(sent.standardError)")
            var recorded: [[String: Any]] = []
            for index in servers.urls.indices {
                let data = try Data(contentsOf: URL(fileURLWithPath: "\(answers)-\(index).json"))
                let answer = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
                recorded += try #require(answer["charges"] as? [[String: Any]], "\(answer)")
            }
            #expect(recorded.count == ids.count, "cycle \(cycle): each subscription charged by one server only")
            #expect(recorded.allSatisfy { $0["cycle"] as? Int == cycle && $0["status"] as? String == "approved" })
        }
        // At the processor: the four trials and three cycles of each, every key once.
        let ledger =
            try await SharedPostgres.curlJSON([servers.processorURL + "/v1/charges"])["charges"] as? [[String: Any]]
        let approved = (ledger ?? []).filter { $0["status"] as? String == "approved" }
        #expect(approved.count == ids.count * 4)
        #expect(Set(approved.compactMap { $0["idempotencyKey"] as? String }).count == ids.count * 4)
        for id in ids {
            let shown = try await SharedPostgres.curlJSON(admin + [servers.urls[1] + "/admin/v1/subscriptions/" + id])
            let cycles = (shown["charges"] as? [[String: Any]] ?? []).compactMap { $0["cycle"] as? Int }
            #expect(cycles.sorted() == [1, 2, 3], "\(id)")
        }
        await servers.stop()
    }

    @Test(
        "PostgreSQL stops under load and starts again: 503 storeUnavailable meanwhile, nothing acknowledged lost")
    func outage() async throws {
        // A cluster of its own: the suite's shared one must keep serving the tests running beside this one.
        let cluster = "/tmp/applepay-pg-outage-" + UUID().uuidString.prefix(8)
        let script = Repository.root.appendingPathComponent("scripts/test-postgres.sh").path
        let started = try await Subprocess.run(script, ["start", cluster], timeout: 120)
        try #require(started.status == 0, "\(started.standardError)")
        defer {
            _ = try? Subprocess.runBlocking(executable: URL(fileURLWithPath: script), ["stop", cluster], timeout: 120)
        }
        let base = started.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        let made = try await SharedPostgres.make()
        defer { made.folder.remove() }
        let setup = SharedPostgres(folder: made.folder, sandbox: made.sandbox, store: base)
        let servers = try await setup.startServers()
        let (processorURL, urls) = (servers.processorURL, servers.urls)
        let payments = try await setup.mint(count: 30, urls: urls)
        func batch(_ range: Range<Int>) -> [SharedPostgres.Request] { range.map { .init(payment: $0, server: $0 % 2) } }

        // Before: acknowledged.
        let before = try await setup.submit(batch(0..<10), payments: payments, urls: urls)
        #expect(before.allSatisfy { $0.status == "success" }, "\(before)")
        // Under load: ten payments in flight while the database stops.
        let inFlightRequests = batch(10..<20)
        async let during = setup.submit(inFlightRequests, payments: payments, urls: urls)
        let halted = try await Subprocess.run(script, ["halt", cluster], timeout: 120)
        #expect(halted.status == 0, "\(halted.standardError)")
        let inFlight = try await during
        // Every payment in flight got an answer (success, 503 or 202 unknown), none was left hanging.
        for answer in inFlight {
            #expect(answer.status != nil || answer.errorCode != nil, "no answer: \(answer)")
        }
        // Down: every payment is refused with 503 storeUnavailable, without waiting on the database (the bound is
        // far above the milliseconds it takes; it only says nobody waited for a timeout of a minute or more).
        let downStarted = ContinuousClock.now
        let down = try await setup.submit(batch(20..<30), payments: payments, urls: urls)
        #expect(ContinuousClock.now - downStarted < .seconds(45))
        for answer in down {
            #expect(answer.errorCode == "storeUnavailable", "\(answer)")
        }
        for url in urls {
            let health = try await Subprocess.run(
                "curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", url + "/healthz"])
            #expect(health.standardOutput == "503", "healthz while down: \(health.standardOutput)")
        }
        let resumed = try await Subprocess.run(script, ["resume", cluster], timeout: 120)
        try #require(resumed.status == 0, "\(resumed.standardError)")
        // Back: both servers serve again without a restart; the refused payments go through.
        let after = try await setup.submit(batch(20..<30), payments: payments, urls: urls)
        #expect(after.allSatisfy { $0.status == "success" }, "\(after)")
        for url in urls {
            let health = try await SharedPostgres.curlJSON([url + "/healthz"])
            #expect(health["status"] as? String == "ok")
        }
        // Nothing acknowledged is lost, and nothing was charged twice.
        let list = try await SharedPostgres.curlJSON([
            "-H", "Authorization: Bearer \(RunningServer.adminToken)", urls[0] + "/admin/v1/orders?limit=1000",
        ])
        let orders = try #require(list["orders"] as? [[String: Any]])
        var byID: [String: [String: Any]] = [:]
        for order in orders { byID[order["id"] as? String ?? ""] = order }
        for answer in before + inFlight + after where answer.status == "success" {
            let order = byID[answer.orderId ?? ""]
            #expect(order?["status"] as? String == "paid", "acknowledged \(answer) stored as \(order ?? [:])")
        }
        let charges = try await SharedPostgres.curlJSON([processorURL + "/v1/charges"])["charges"] as? [[String: Any]]
        let keys = (charges ?? []).compactMap { $0["idempotencyKey"] as? String }
        #expect(Set(keys).count == keys.count)
        #expect(keys.count <= 30)
        await servers.stop()
    }
}

/// A sandbox, a processor service with its ledger, and a fresh schema in the test database for the servers.
struct SharedPostgres: Sendable {
    static let uri = ProcessInfo.processInfo.environment["APPLEPAY_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 }

    let folder: TemporaryDirectory
    let sandbox: String
    /// The store every server of this setup uses: the test database with a schema of its own.
    let store: String

    static func make() async throws -> SharedPostgres {
        let folder = try TemporaryDirectory(prefix: "shared-pg")
        let path = folder.path("sandbox")
        try FileManager.default.copyItem(atPath: try await CommandLineSandbox.path(), toPath: path)
        let base = try #require(uri)
        let schema = "cl_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        let created = try await Subprocess.run("psql", [base, "-q", "-c", "CREATE SCHEMA \(schema)"])
        #expect(created.status == 0, "\(created.standardError)")
        let store = base + (base.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
        return SharedPostgres(folder: folder, sandbox: path, store: store)
    }

    func processor() async throws -> RunningServer {
        let service = try await RunningServer.start(arguments: [
            "processor", "serve", "--ledger", "sqlite:" + folder.path("ledger.sqlite"), "--port", "0", "--sandbox",
            sandbox,
        ])
        _ = try #require(service.baseURL, "the processor did not start: \(service.standardError)")
        return service
    }

    func merchant(processor: String) async throws -> RunningServer {
        let server = try await RunningServer.start(arguments: [
            "serve", "--sandbox", sandbox, "--processor", processor, "--store", store, "--port", "0",
        ])
        _ = try #require(server.baseURL, "the server did not start: \(server.standardError)")
        return server
    }

    /// The processor service and two merchant servers on it.
    struct Servers: Sendable {
        let processor: RunningServer
        let processorURL: String
        let merchants: [RunningServer]
        let urls: [String]

        /// Stops the merchant servers, then the processor.
        func stop() async {
            for merchant in merchants { await merchant.stop() }
            await processor.stop()
        }
    }

    /// A new setup with its servers started (its folder removed if they do not start).
    static func started() async throws -> (SharedPostgres, Servers) {
        let setup = try await make()
        do {
            return (setup, try await setup.startServers())
        } catch {
            setup.folder.remove()
            throw error
        }
    }

    /// Starts the processor service, then two merchant servers charging through it.
    func startServers() async throws -> Servers {
        let processor = try await self.processor()
        let processorURL = try #require(processor.baseURL)
        let first = try await merchant(processor: processorURL)
        let second = try await merchant(processor: processorURL)
        return Servers(
            processor: processor, processorURL: processorURL, merchants: [first, second],
            urls: [try #require(first.baseURL), try #require(second.baseURL)])
    }

    /// Which payment goes to which server.
    struct Request: Sendable {
        var payment: Int
        var server: Int
    }

    /// What a client was answered.
    struct Answer: Sendable, CustomStringConvertible {
        var status: String?
        var orderId: String?
        var errorCode: String?
        var text: String
        var description: String { text }
    }

    /// A checkout, its client secret and its payment body with a freshly minted token.
    struct Payment: Sendable {
        var checkoutID: String
        var checkoutSecret: String
        var bodyPath: String
    }

    /// Creates `count` checkouts (alternating between `urls`) and mints a token for each.
    func mint(count: Int, urls: [String]) async throws -> [Payment] {
        let out = folder.path("payments")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let script = Repository.root.appendingPathComponent("Tests/CommandLineTests/python/mint_payments.py").path
        let result = try await Subprocess.run(
            "python3", [script, CommandLineTool.executable.path, sandbox, out, String(count)] + urls, timeout: 600)
        #expect(result.status == 0, "\(result.standardError)")
        return try (0..<count).map { index in
            let data = try Data(contentsOf: URL(fileURLWithPath: "\(out)/body-\(index).json"))
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let body = try JSONSerialization.data(withJSONObject: try #require(object["body"]))
            let path = "\(out)/payment-\(index).json"
            try body.write(to: URL(fileURLWithPath: path))
            return Payment(
                checkoutID: try #require(object["checkoutId"] as? String),
                checkoutSecret: try #require(object["checkoutSecret"] as? String), bodyPath: path)
        }
    }

    /// Sends the payments concurrently (curl --parallel, 32 at a time) and returns each answer's JSON, in order.
    func submit(_ requests: [Request], payments: [Payment], urls: [String]) async throws -> [Answer] {
        let answers = folder.path("answers")
        try FileManager.default.createDirectory(atPath: answers, withIntermediateDirectories: true)
        var config = ""
        for (index, request) in requests.enumerated() {
            let payment = payments[request.payment]
            if index > 0 { config += "next\n" }  // each transfer its own body, not all bodies joined
            config += """
                url = "\(urls[request.server])/v1/checkouts/\(payment.checkoutID)/payment"
                request = "POST"
                header = "Content-Type: application/json"
                header = "Checkout-Secret: \(payment.checkoutSecret)"
                data-binary = "@\(payment.bodyPath)"
                output = "\(answers)/answer-\(index).json"
                max-time = 120

                """
        }
        let configPath = folder.path("curl.config")
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        let result = try await Subprocess.run(
            "curl", ["-s", "--parallel", "--parallel-max", "32", "-K", configPath], timeout: 600)
        #expect(result.status == 0, "\(result.standardError)")
        return requests.indices.map { index in
            let data = (try? Data(contentsOf: URL(fileURLWithPath: "\(answers)/answer-\(index).json"))) ?? Data()
            let object = ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any]) ?? [:]
            return Answer(
                status: object["status"] as? String, orderId: object["orderId"] as? String,
                errorCode: (object["error"] as? [String: Any])?["code"] as? String,
                text: String(decoding: data, as: UTF8.self))
        }
    }

    static func curlJSON(_ arguments: [String]) async throws -> [String: Any] {
        let result = try await Subprocess.run("curl", ["-s", "--max-time", "60"] + arguments)
        let object = try? JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        return try #require(object, "curl \(arguments.last ?? ""): \(result.standardOutput) \(result.standardError)")
    }
}
