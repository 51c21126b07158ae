// A real merchant server for tests: the shared sandbox, a fresh SQLite file, requests in process or over the socket.

import ApplePay
import Foundation
import Foundations
import HTTPClient
import HTTPCore
import JSONLogging
import Logging
import MerchantCore
import MerchantHTTP
import MerchantSandbox
import MerchantServer
import MerchantStore
import SQLite
import Sandbox
import Synchronization
import TestSupport

/// One sandbox for every server test (key generation is the slow part), made once on a thread of its own
/// (`blocking` from TestSupport):
/// tests await it without blocking any of Swift's cooperative threads (a `static let` initialiser would hold every
/// waiting thread, and the pool has only as many threads as cores).
public enum SharedSandbox {
    private static let sandbox = MadeOnce(inFolder: "merchant-server-sandbox") {
        try Sandbox.create(
            at: $0.url.appendingPathComponent("sandbox"), merchantIdentifier: "merchant.com.example.tests")
    }

    public static func get() async throws -> Sandbox { try await sandbox.value }
}

/// Lines written by the server's logger.
public final class CapturedLog: Sendable {
    private let lines = Mutex<[String]>([])

    public init() {}

    /// The server's own handler (``JSONLogHandler``), writing into this capture.
    public var logger: Logger {
        Logger(label: "applepay.test") { _ in JSONLogHandler { [self] line in lines.withLock { $0.append(line) } } }
    }
    public var all: [String] { lines.withLock { $0 } }
    public var text: String { all.joined(separator: "\n") }

    /// Every line, parsed.
    public var entries: [[String: Any]] {
        all.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// The parsed request lines.
    public var requests: [[String: Any]] { entries.filter { $0["msg"] as? String == "request" } }
}

/// A real merchant server on 127.0.0.1:0 with the shared sandbox's keys and a fresh SQLite file.
public struct ServerHarness: Sendable {
    public let application: MerchantApplication
    public let sandbox: Sandbox
    public let directory: TemporaryDirectory
    public let log: CapturedLog
    public let databasePath: String
    public let client = HTTPClient(configuration: .init(timeout: .seconds(20)))

    public var base: String { application.url }

    /// Starts a server; `configure` may change the configuration first.
    public static func start(
        processor: (any PaymentProcessor)? = nil, live: Bool = false,
        clock: @escaping @Sendable () -> Date = { Date() },
        configure: (inout MerchantServerConfiguration) -> Void = { _ in }
    ) async throws -> ServerHarness {
        let sandbox = try await SharedSandbox.get()
        let directory = try TemporaryDirectory(prefix: "merchant-server")
        var configuration = MerchantServerConfiguration()
        configuration.port = 0
        configuration.threads = 2
        configuration.useSandbox(folder: sandbox.folder.path)
        let databasePath = directory.path("orders.sqlite")
        configuration.storeLocation = .sqlite(path: databasePath)
        configuration.store.processor.timeoutSeconds = 10
        configuration.adminToken = ServerHarness.adminToken
        configure(&configuration)
        let log = CapturedLog()
        let application: MerchantApplication
        do {
            application = try await MerchantApplication.start(
                configuration, processor: processor ?? SandboxProcessor(hangDuration: .seconds(30)),
                plugins: [SandboxMode()], logger: log.logger,
                clock: clock)
        } catch {
            // A server that refused to start (tests of start-up errors) leaves no folder behind.
            directory.remove()
            throw error
        }
        return ServerHarness(
            application: application, sandbox: sandbox, directory: directory, log: log, databasePath: databasePath,
            live: live)
    }

    /// A server on a new sandbox processor and a ``MovableClock`` (at the present time until the test moves it).
    public static func withMovableClock(
        _ body: (ServerHarness, SandboxProcessor, MovableClock) async throws -> Void
    ) async throws {
        let processor = SandboxProcessor()
        let clock = MovableClock()
        try await with(processor: processor, clock: clock.now) { try await body($0, processor, clock) }
    }

    /// Runs `body` with a started server, stopping it afterwards.
    public static func with<T>(
        processor: (any PaymentProcessor)? = nil, live: Bool = false,
        clock: @escaping @Sendable () -> Date = { Date() },
        configure: (inout MerchantServerConfiguration) -> Void = { _ in }, body: (ServerHarness) async throws -> T
    ) async throws -> T {
        let harness = try await start(processor: processor, live: live, clock: clock, configure: configure)
        return try await withCleanup {
            try await body(harness)
        } cleanup: {
            await harness.stop()
        }
    }

    public func stop() async {
        await application.shutdown()
        directory.remove()
    }

    // MARK: HTTP

    public struct Reply: Sendable {
        public var status: Int
        public var body: Data
        public var headers: [String: String]
        public var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any]) ?? [:] }
        public var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Whether requests go over the socket (libcurl → libmicrohttpd) or straight to the responder in process.
    /// Most tests are about the API, not the transport: in process they need no socket and no client thread.
    /// `live` servers keep the socket path honest.
    public var live = false

    /// A request answered by the server: in process (`MerchantAPI.respond(to:)`) or over the socket.
    public func send(_ method: String, _ path: String, headers: [(name: String, value: String)] = [], body: Data? = nil)
        async throws -> Reply
    {
        if live {
            let response = try await client.send(
                HTTPClientRequest(method: method, url: base + path, headers: headers, body: body))
            return Reply(status: response.status, body: response.body, headers: response.headers)
        }
        let parts = path.split(separator: "?", maxSplits: 1)
        var query: [String: String] = [:]
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let item = pair.split(separator: "=", maxSplits: 1).map {
                    String($0).removingPercentEncoding ?? String($0)
                }
                query[item[0]] = item.count == 2 ? item[1] : ""
            }
        }
        var fields = HTTPHeaders()
        for (name, value) in headers { fields.add(name: name, value: value) }
        let request = HTTPRequest(
            method: HTTPMethod(rawValue: method), path: String(parts.first ?? ""), query: query, headers: fields,
            body: body ?? Data())
        let response = await application.api.respond(to: request)
        var answer: [String: String] = [:]
        for (name, value) in response.headers { answer[name] = value }
        return Reply(status: response.status, body: response.body, headers: answer)
    }

    /// A `GET`; `checkoutSecret`, when given, goes in the `Checkout-Secret` header (a route under a checkout).
    public func get(_ path: String, checkoutSecret: String? = nil) async throws -> Reply {
        try await send("GET", path, headers: Self.secretHeader(checkoutSecret))
    }

    /// A JSON `POST`; `checkoutSecret`, when given, goes in the `Checkout-Secret` header.
    public func post(_ path: String, raw: Data, checkoutSecret: String? = nil) async throws -> Reply {
        try await send(
            "POST", path, headers: [("Content-Type", "application/json")] + Self.secretHeader(checkoutSecret),
            body: raw)
    }

    public func post(_ path: String, json: Any, checkoutSecret: String? = nil) async throws -> Reply {
        try await post(path, raw: try JSONSerialization.data(withJSONObject: json), checkoutSecret: checkoutSecret)
    }

    /// The `Checkout-Secret` header of `secret`, if any.
    public static func secretHeader(_ secret: String?) -> [(name: String, value: String)] {
        secret.map { [("Checkout-Secret", $0)] } ?? []
    }

    /// The admin token every harness server gets.
    public static let adminToken = "harness-admin-token-0123456789abcdef"

    /// An admin API request with `token` (default: the right one) as bearer token.
    public func admin(_ method: String, _ path: String, json: Any? = nil, token: String? = ServerHarness.adminToken)
        async throws -> Reply
    {
        var headers: [(name: String, value: String)] = []
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        var body: Data?
        if let json { body = try JSONSerialization.data(withJSONObject: json) }
        if json != nil || method == "POST" { headers.append(("Content-Type", "application/json")) }
        return try await send(method, path, headers: headers, body: body)
    }

    // MARK: Flow helpers

    /// A checkout made through the API: what its creation answered.
    public struct CreatedCheckout: Sendable {
        public var id: String
        /// `clientSecret`: the `Checkout-Secret` of every route under `/v1/checkouts/{id}`.
        public var secret: String
        /// The total, a decimal string (the last one the server priced, once a test updates it).
        public var total: String
        public var applicationData: String
    }

    /// Creates a checkout and returns its id, client secret, total and applicationData.
    public func createCheckout(_ items: [[String: Any]] = [["sku": "MUG-01", "quantity": 2]]) async throws
        -> CreatedCheckout
    {
        let reply = try await post("/v1/checkouts", json: ["items": items])
        guard reply.status == 201, let id = reply.json["id"] as? String,
            let secret = reply.json["clientSecret"] as? String,
            let request = reply.json["paymentRequest"] as? [String: Any],
            let total = (request["total"] as? [String: Any])?["amount"] as? String,
            let applicationData = request["applicationData"] as? String
        else { throw HarnessError("checkout not created: \(reply.status) \(reply.text)") }
        return CreatedCheckout(id: id, secret: secret, total: total, applicationData: applicationData)
    }

    /// Posts `body` to the checkout's payment route with its secret.
    public func pay(_ checkout: CreatedCheckout, raw body: Data) async throws -> Reply {
        try await post("/v1/checkouts/\(checkout.id)/payment", raw: body, checkoutSecret: checkout.secret)
    }

    /// A new checkout shipped to California (its total updated), with the payment body for that total.
    public func shippedCheckout(
        _ items: [[String: Any]] = [["sku": "MUG-01", "quantity": 2]], version: TokenVersion = .ecV1
    )
        async throws -> (checkout: CreatedCheckout, body: Data)
    {
        var checkout = try await createCheckout(items)
        checkout.total = try await shipToCalifornia(checkout)
        return (
            checkout,
            try paymentBody(amount: checkout.total, applicationData: checkout.applicationData, version: version)
        )
    }

    /// A ``shippedCheckout(_:version:)`` with its payment posted: the checkout, the body and the answer.
    public func paidCheckout() async throws -> (checkout: CreatedCheckout, body: Data, reply: Reply) {
        let (checkout, body) = try await shippedCheckout()
        return (checkout, body, try await pay(checkout, raw: body))
    }

    /// Sets a Californian shipping address and returns the new total.
    public func shipToCalifornia(_ checkout: CreatedCheckout) async throws -> String {
        let reply = try await post(
            "/v1/checkouts/\(checkout.id)/shipping-contact",
            json: ["locality": "Cupertino", "administrativeArea": "CA", "postalCode": "95014", "countryCode": "US"],
            checkoutSecret: checkout.secret)
        guard reply.status == 200, let total = (reply.json["newTotal"] as? [String: Any])?["amount"] as? String else {
            throw HarnessError("shipping contact failed: \(reply.status) \(reply.text)")
        }
        return total
    }

    /// The `ApplePayPayment` body for `token`, shipped to Cupertino for the person named, billed to 95014.
    public static func paymentJSON(token: Any, givenName: String, familyName: String) throws -> Data {
        try JSONSerialization.data(withJSONObject: [
            "token": token,
            "shippingContact": [
                "givenName": givenName, "familyName": familyName,
                "emailAddress": "\(givenName.lowercased())@example.com", "phoneNumber": "+1 408 555 0100",
                "addressLines": ["1 Infinite Loop"], "locality": "Cupertino", "administrativeArea": "CA",
                "postalCode": "95014", "countryCode": "US",
            ],
            "billingContact": ["postalCode": "95014", "countryCode": "US"],
        ])
    }

    /// A sandbox token for `amount` bound to `applicationData`, as the `ApplePayPayment` body.
    public func paymentBody(
        amount: String, applicationData: String?, card: SandboxCard? = nil, version: TokenVersion = .ecV1,
        signingTime: Date = Date(), transactionIdentifier: Data? = nil, merchantToken: Bool = false,
        tokenNotificationURL: String? = nil, tamper: ((inout [String: Any]) -> Void)? = nil
    ) throws -> Data {
        let chosenCard = try card ?? SandboxCard.testCard(network: .visa).orThrow("no visa test card")
        let request = MintRequest(
            card: chosenCard, amount: try Decimal(string: amount).orThrow("bad amount"), currencyCode: "USD",
            applicationData: applicationData.map { .base64($0) }, signingTime: signingTime,
            transactionIdentifier: transactionIdentifier)
        let token =
            merchantToken
            ? try sandbox.mintWithMerchantToken(
                request, tokenNotificationURL: tokenNotificationURL, version: version
            ).token
            : try sandbox.mint(request, version: version)
        var tokenObject = try (JSONSerialization.jsonObject(with: token.jsonData()) as? [String: Any]).orThrow("token")
        tamper?(&tokenObject)
        return try Self.paymentJSON(token: tokenObject, givenName: "Ada", familyName: "Lovelace")
    }

    // MARK: The database, read directly

    /// Row counts of the tables that a payment writes.
    public func counts() throws -> (orders: Int64, payments: Int64, events: Int64) {
        let connection = try Connection(path: databasePath, readOnly: true)
        func count(_ table: String) throws -> Int64 {
            try connection.query("SELECT count(*) AS n FROM \(table)").first?.int64("n") ?? -1
        }
        return (try count("orders"), try count("payments"), try count("events"))
    }

    /// Every row of a table as text, for checking that nothing secret was stored.
    public func dump(_ table: String) throws -> String {
        let connection = try Connection(path: databasePath, readOnly: true)
        return try connection.query("SELECT * FROM \(table)").map { row in
            row.values.map(\.description).joined(separator: "|")
        }.joined(separator: "\n")
    }

    /// Order and payment statuses, in insertion order.
    public func statuses() throws -> [String] {
        let connection = try Connection(path: databasePath, readOnly: true)
        return try connection.query(
            "SELECT o.status AS o, p.status AS p FROM orders o JOIN payments p ON p.order_id = o.id ORDER BY o.rowid"
        ).map { "\(try $0.string("o"))/\(try $0.string("p"))" }
    }
}

/// Where a test server keeps its store: the harness's SQLite file, or a fresh schema of the test PostgreSQL database.
public struct ServerStoreLocation: Sendable {
    /// The PostgreSQL URI (`nil`: the harness's own SQLite file).
    public var postgres: String?

    public init(postgres: String?) { self.postgres = postgres }

    public func apply(_ configuration: inout MerchantServerConfiguration) {
        if let postgres { configuration.storeLocation = .postgres(uri: postgres) }
    }

    /// The same store opened again, as another instance (or a restarted process) would.
    public func reopen(_ harness: ServerHarness) async throws -> any SubscriptionStore {
        if let postgres { return try await PostgresOrderStore(uri: postgres, poolSize: 2) }
        return try SQLiteOrderStore(path: harness.databasePath)
    }
}

extension StoreBackend {
    public func serverLocation() async throws -> ServerStoreLocation {
        switch self {
        case .sqlite: ServerStoreLocation(postgres: nil)
        case .postgres: ServerStoreLocation(postgres: try await TestPostgres.freshSchema())
        }
    }
}
