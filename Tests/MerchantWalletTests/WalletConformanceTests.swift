import ApplePay
import Cryptography
import Foundation
import HTTPCore
import HTTPServer
import MerchantCore
import MerchantServer
import MerchantTestSupport
import MerchantWallet
import Sandbox
import TestSupport
import Testing
import WalletOrders

/// The server's Wallet orders against Apple's shapes, not the sandbox's: the JSON Schema written from Apple's field
/// tables (`Tests/Fixtures/wallet-orders/wallet-orders.schema.json`), checked by Python's `jsonschema` (which shares
/// nothing with the code under test), the web service's headers and status codes as Apple lists them, change
/// tracking finer than a second, and the customer's order page.
@Suite("Wallet orders as Apple reads them")
struct WalletConformanceTests {
    static let schema = Repository.root.appendingPathComponent("Tests/Fixtures/wallet-orders/wallet-orders.schema.json")
    static let checker = Repository.root.appendingPathComponent("Tests/MerchantWalletTests/python/wallet_schema.py")

    /// `jsonschema`'s errors for each document (as an Order, or as `$defs/definition`).
    static func schemaErrors(_ documents: [Data], definition: String? = nil) async throws -> [[String]] {
        let folder = try TemporaryDirectory(prefix: "wallet-schema")
        defer { folder.remove() }
        var paths: [String] = []
        for (index, document) in documents.enumerated() {
            let path = folder.path("\(index).json")
            try document.write(to: URL(fileURLWithPath: path))
            paths.append(path)
        }
        let result = try await Subprocess.run(
            "python3", [checker.path, schema.path] + (definition.map { ["--def", $0] } ?? []) + paths)
        #expect(result.status == 0, "\(result.standardError)")
        struct Answer: Decodable {
            struct Result: Decodable { var errors: [String] }
            var results: [Result]
        }
        return try JSONDecoder().decode(Answer.self, from: Data(result.standardOutput.utf8)).results.map(\.errors)
    }

    /// A paid order on `server`: its `orderDetails` and id.
    static func paidOrder(_ server: ServerHarness) async throws -> (PaymentOrderDetails, String) {
        try await server.payForOrderDetails()
    }

    /// `GET` the order's package with its token and optional validators.
    static func download(
        _ server: ServerHarness, _ details: PaymentOrderDetails, headers extra: [(name: String, value: String)] = []
    ) async throws -> ServerHarness.Reply {
        try await server.send(
            "GET", "/wallet/v1/orders/\(details.orderTypeIdentifier)/\(details.orderIdentifier)",
            headers: [("Authorization", "AppleOrder \(details.authenticationToken)")] + extra)
    }

    static func orderJSON(_ reply: ServerHarness.Reply) throws -> Data {
        try ZIPArchive.read(reply.body)["order.json"].orThrow("no order.json in the package")
    }

    @Test("a paid order's package: the MIME type, every required field with its type and enums, webServiceURL + token")
    func paidPackage() async throws {
        try await ServerHarness.with { server in
            let (details, _) = try await Self.paidOrder(server)
            let reply = try await Self.download(server, details)
            #expect(reply.status == 200)
            #expect(reply.headers["Content-Type"] == "application/vnd.apple.finance.order")
            #expect(reply.headers["Last-Modified"] != nil && reply.headers["ETag"] != nil)
            let data = try Self.orderJSON(reply)
            #expect(try await Self.schemaErrors([data]) == [[]])
            #expect(WalletOrderSchema.problems(in: data) == [])
            let order = try JSONValue(parsing: data)
            let webService = try #require(order["webServiceURL"]?.stringValue)
            #expect(webService.hasPrefix("https://") && webService == details.webServiceURL)
            #expect((order["authenticationToken"]?.stringValue?.count ?? 0) >= 16)
            #expect(order["payment"]?["paymentMethods"]?.arrayValue?.allSatisfy { $0.stringValue != nil } == true)
            #expect(order["payment"]?["status"] == .string("paid"))
            #expect(order["createdAt"]?.stringValue?.hasSuffix("Z") == true)
            // The customer's page, not an API address that needs a secret header.
            let page = try #require(order["orderManagementURL"]?.stringValue)
            #expect(page.hasPrefix(server.base + "/orders/\(details.orderIdentifier)?secret="))
        }
    }

    @Test("what Apple refuses, both the JSON Schema and the sandbox Wallet refuse; the server's order passes both")
    func refusals() async throws {
        let good: Data = try await ServerHarness.with { server in
            let (details, _) = try await Self.paidOrder(server)
            return try Self.orderJSON(try await Self.download(server, details))
        }
        typealias Object = [String: Any]
        let changes: [(String, (inout Object) -> Void)] = [
            (
                "paymentMethods as objects",
                { o in Self.edit(&o, "payment") { $0["paymentMethods"] = [["displayName": "Visa"]] } }
            ),
            (
                "payment.status partiallyRefunded",
                { o in Self.edit(&o, "payment") { $0["status"] = "partiallyRefunded" } }
            ),
            ("payment.status cancelled", { o in Self.edit(&o, "payment") { $0["status"] = "cancelled" } }),
            ("payment without status", { o in Self.edit(&o, "payment") { $0["status"] = nil } }),
            ("webServiceURL over http", { $0["webServiceURL"] = "http://shop.example/wallet" }),
            ("authenticationToken of 15 characters", { $0["authenticationToken"] = "0123456789abcde" }),
            ("webServiceURL without authenticationToken", { $0["authenticationToken"] = nil }),
            ("no orderManagementURL", { $0["orderManagementURL"] = nil }),
            ("no merchant.url", { o in Self.edit(&o, "merchant") { $0["url"] = nil } }),
            ("schemaVersion as a string", { $0["schemaVersion"] = "1" }),
            ("orderType retail", { $0["orderType"] = "retail" }),
            ("status refunded", { $0["status"] = "refunded" }),
            ("createdAt not RFC 3339", { $0["createdAt"] = "2026-11-30 16:51:19" }),
            (
                "total amount as a number",
                { o in Self.edit(&o, "payment") { $0["total"] = ["amount": 9, "currency": "USD"] } }
            ),
            (
                "currency of two letters",
                { o in Self.edit(&o, "payment") { $0["total"] = ["amount": "9.00", "currency": "US"] } }
            ),
            ("line item quantity as a string", { o in Self.editFirst(&o, "lineItems") { $0["quantity"] = "2" } }),
            ("line item without title", { o in Self.editFirst(&o, "lineItems") { $0["title"] = nil } }),
            ("fulfillment status delayed", { o in Self.editFirst(&o, "fulfillments") { $0["status"] = "delayed" } }),
            (
                "fulfillment type courier",
                { o in Self.editFirst(&o, "fulfillments") { $0["fulfillmentType"] = "courier" } }
            ),
        ]
        // Apple's optional objects, filled in as the tables allow: both accept them.
        let extras: [(String, (inout Object) -> Void)] = [
            (
                "a pickup fulfillment with a location, barcode and window",
                { o in
                    var list = o["fulfillments"] as? [Object] ?? []
                    list.append([
                        "fulfillmentType": "pickup", "fulfillmentIdentifier": "p1", "displayName": "Store",
                        "status": "readyForPickup", "location": ["latitude": 48.85, "longitude": 2.35],
                        "barcode": ["format": "qr", "message": "P1", "messageEncoding": "iso-8859-1"],
                        "pickupAt": "2026-12-01T10:00:00+01:00", "pickupWindowDuration": "PT2H",
                    ])
                    o["fulfillments"] = list
                }
            ),
            (
                "returns, return info, customer, provider and change notifications",
                { o in
                    o["returnInfo"] = ["returnPolicyURL": "https://shop.example/returns", "displayCountdown": true]
                    o["returns"] = [
                        ["returnIdentifier": "r1", "status": "onTheWay", "dropOffBy": "2026-12-09T00:00:00Z"]
                    ]
                    o["customer"] = ["givenName": "Ada", "emailAddress": "ada@example.com"]
                    o["orderProvider"] = [
                        "displayName": "Platform", "url": "https://platform.example",
                        "trackingLogoNameLightColorScheme": "light", "trackingLogoNameDarkColorScheme": "dark",
                    ]
                    o["changeNotifications"] = "disabledIfAppInstalled"
                    o["associatedApplications"] = [["storeIdentifier": 123_456]]
                }
            ),
        ]
        let object = try #require(try JSONSerialization.jsonObject(with: good) as? Object)
        var documents = [good]
        for (_, change) in changes + extras {
            var copy = object
            change(&copy)
            documents.append(try JSONSerialization.data(withJSONObject: copy))
        }
        let errors = try await Self.schemaErrors(documents)
        #expect(errors.first == [], "the server's own order.json: \(errors.first ?? [])")
        #expect(WalletOrderSchema.problems(in: good) == [])
        for (index, (name, _)) in extras.enumerated() {
            let document = documents[1 + changes.count + index]
            #expect(errors[1 + changes.count + index] == [], "jsonschema refused: \(name)")
            #expect(WalletOrderSchema.problems(in: document) == [], "the sandbox refused: \(name)")
        }
        for (index, (name, _)) in changes.enumerated() {
            #expect(errors[index + 1].isEmpty == false, "jsonschema accepted: \(name)")
            #expect(
                WalletOrderSchema.problems(in: documents[index + 1]).isEmpty == false, "the sandbox accepted: \(name)")
        }
    }

    static func edit(_ object: inout [String: Any], _ key: String, _ change: (inout [String: Any]) -> Void) {
        var inner = object[key] as? [String: Any] ?? [:]
        change(&inner)
        object[key] = inner
    }

    static func editFirst(_ object: inout [String: Any], _ key: String, _ change: (inout [String: Any]) -> Void) {
        var list = object[key] as? [[String: Any]] ?? [[:]]
        change(&list[0])
        object[key] = list
    }

    @Test(
        "changes within one second are each seen: Last-Modified/If-Modified-Since, ETag and the updated-since list",
        arguments: StoreBackend.available)
    func changesWithinOneSecond(_ backend: StoreBackend) async throws {
        let location = try await backend.serverLocation()
        let frozen = Date()
        let clock: @Sendable () -> Date = { frozen }
        let configure: (inout MerchantServerConfiguration) -> Void = { location.apply(&$0) }
        try await ServerHarness.with(clock: clock, configure: configure) { server in
            let (details, orderID) = try await Self.paidOrder(server)
            let registration =
                "/wallet/v1/devices/device-1/registrations/\(details.orderTypeIdentifier)/\(orderID)"
            let token = ("Authorization", "AppleOrder \(details.authenticationToken)")
            let registered = try await server.send(
                "POST", registration, headers: [token, ("Content-Type", "application/json")],
                body: Data(#"{"pushToken":"token-1"}"#.utf8))
            #expect(registered.status == 201)
            let list = "/wallet/v1/devices/device-1/registrations/\(details.orderTypeIdentifier)"
            let listed = try await server.get(list)
            #expect(listed.status == 200 && listed.headers["Content-Type"]?.hasPrefix("application/json") == true)
            #expect(try await Self.schemaErrors([listed.body], definition: "OrderIdentifiers") == [[]])
            var cursor = try (listed.json["lastModified"] as? String).orThrow("lastModified")

            var reply = try await Self.download(server, details)
            var versions = [try JSONValue(parsing: Self.orderJSON(reply))["updatedAt"]?.stringValue ?? ""]
            // Three changes, all at the same instant of the server's clock: each is a new version.
            let changes: [(String, Any)] = [
                ("/fulfillments", ["status": "shipped", "carrier": "UPS", "trackingNumber": "1Z999"]),
                ("/refunds", ["amount": "1.00", "idempotencyKey": "refund-1"]),
                ("/fulfillments", ["status": "delivered"]),
            ]
            for (path, body) in changes {
                let lastModified = try reply.headers["Last-Modified"].orThrow("Last-Modified")
                let tag = try reply.headers["ETag"].orThrow("ETag")
                #expect(
                    try await Self.download(server, details, headers: [("If-Modified-Since", lastModified)]).status
                        == 304)
                #expect(try await Self.download(server, details, headers: [("If-None-Match", tag)]).status == 304)
                let changed = try await server.admin("POST", "/admin/v1/orders/\(orderID)\(path)", json: body)
                #expect(changed.status == 200 || changed.status == 201, "\(changed.text)")
                reply = try await Self.download(server, details, headers: [("If-Modified-Since", lastModified)])
                #expect(reply.status == 200, "a change in the same second answered \(reply.status)")
                #expect(try await Self.download(server, details, headers: [("If-None-Match", tag)]).status == 200)
                versions.append(try JSONValue(parsing: Self.orderJSON(reply))["updatedAt"]?.stringValue ?? "")

                let since = try await server.get(list + "?ordersModifiedSince=\(cursor)")
                #expect(since.status == 200, "the list missed a change in the same second")
                #expect(since.json["orderIdentifiers"] as? [String] == [orderID])
                cursor = try (since.json["lastModified"] as? String).orThrow("lastModified")
                #expect(try await server.get(list + "?ordersModifiedSince=\(cursor)").status == 204)
                #expect(try await server.get(list + "?lastModified=\(cursor)").status == 204)
            }
            // updatedAt only grows; If-None-Match decides over If-Modified-Since.
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let dates = versions.compactMap { formatter.date(from: $0) }
            #expect(dates.count == 4 && zip(dates, dates.dropFirst()).allSatisfy { $0 < $1 }, "\(versions)")
            let last = try JSONValue(parsing: Self.orderJSON(reply))
            #expect(last["payment"]?["status"] == .string("paid"))
            #expect(
                last["payment"]?["summaryItems"]?.arrayValue?.contains { $0["label"] == .string("Refunded") } == true)
            #expect(last["status"] == .string("completed"))
            let stale = try await Self.download(
                server, details,
                headers: [("If-None-Match", "\"1\""), ("If-Modified-Since", reply.headers["Last-Modified"] ?? "")])
            #expect(stale.status == 200)
        }
    }

    @Test("orderManagementURL is the customer's page: HTML in the checkout look, a CSP, no-store, its secret only")
    func orderPage() async throws {
        try await ServerHarness.with { server in
            let (details, orderID) = try await Self.paidOrder(server)
            let order = try JSONValue(parsing: Self.orderJSON(try await Self.download(server, details)))
            let url = try #require(order["orderManagementURL"]?.stringValue)
            let path = String(url.dropFirst(server.base.count))
            let page = try await server.get(path)
            #expect(page.status == 200)
            #expect(page.headers["Content-Type"] == "text/html; charset=utf-8")
            #expect(page.headers["Cache-Control"] == "no-store")
            #expect(page.headers["Referrer-Policy"] == "no-referrer")
            let policy = try #require(page.headers["Content-Security-Policy"])
            #expect(policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"))
            #expect(!policy.contains("script-src"))
            #expect(page.text.contains(#"<link rel="stylesheet" href="/checkout.css">"#))
            #expect(page.text.contains(String(orderID.uppercased().suffix(12))))
            #expect(page.text.contains("Processing"))
            #expect(page.text.contains("<script") == false)

            _ = try await server.admin(
                "POST", "/admin/v1/orders/\(orderID)/fulfillments",
                json: ["status": "shipped", "carrier": "UPS", "trackingNumber": "1Z<b>"])
            let shipped = try await server.get(path)
            #expect(shipped.text.contains("Shipped") && shipped.text.contains("1Z&lt;b&gt;"))

            // Without its secret, or with another, the page is an unknown order.
            #expect(try await server.get("/orders/\(orderID)").status == 404)
            #expect(try await server.get("/orders/\(orderID)?secret=0000").status == 404)
            #expect(try await server.get("/orders/ord_unknown?secret=0000").status == 404)
            // The address holds the order's secret: the log never does.
            let secret = try #require(url.split(separator: "secret=").last.map(String.init))
            #expect(secret.count >= 16 && !server.log.text.contains(secret))
        }
    }

    /// Answers every request with one body and media type.
    struct FixedResponder: Responder {
        let body: Data
        let mediaType: String
        func respond(to request: HTTPRequest) async -> HTTPResponse {
            HTTPResponse(status: 200, headers: ["Content-Type": mediaType], body: body)
        }
    }

    @Test("the sandbox Wallet refuses a good package served as application/vnd.apple.order, as Wallet does")
    func mediaType() async throws {
        let sandbox = try await SharedSandbox.get()
        let order = WalletOrdersTests.sampleOrder(sandbox)
        let signer = try WalletOrdersTests.signer(sandbox)
        let package = try OrderPackage.make(order, signer: signer)
        for (mediaType, accepted) in [("application/vnd.apple.order", false), (OrderPackage.mediaType, true)] {
            let server = try HTTPServer.start(
                configuration: .init(port: 0), responder: FixedResponder(body: package, mediaType: mediaType))
            let details = PaymentOrderDetails(
                orderTypeIdentifier: sandbox.orderTypeIdentifier, orderIdentifier: "ord_1",
                webServiceURL: "https://127.0.0.1:\(server.port)/wallet", authenticationToken: "0123456789abcdef")
            let wallet = try SandboxWallet(
                details: details, roots: [sandbox.rootCertificate], connectTo: "http://127.0.0.1:\(server.port)")
            let download = try await wallet.download()
            await server.shutdown()
            switch download {
            case .order(let read, _, _): #expect(accepted && read == order, "\(mediaType)")
            case .invalid(let refusal): #expect(!accepted && refusal.check == .mediaType, "\(mediaType): \(refusal)")
            default: Issue.record("\(mediaType): \(download)")
            }
        }
    }

    /// An enum of the fixture schema: `$defs/<object>/properties/<field>/enum`.
    static func schemaEnum(_ object: String, _ field: String) throws -> Set<String> {
        let schema = try JSONValue(parsing: Data(contentsOf: Self.schema))
        let values = schema["$defs"]?[object]?["properties"]?[field]?["enum"]?.arrayValue ?? []
        return Set(values.compactMap(\.stringValue))
    }

    @Test("every order state maps to Apple's values of payment.status and status, per the fixture schema")
    func statusMapping() throws {
        let payment = try Self.schemaEnum("Payment", "status")
        let order = try Self.schemaEnum("Order", "status")
        #expect(payment.count == 6 && order.count == 3)
        for status in OrderStatus.allCases {
            #expect(payment.contains(WalletOrdersService.paymentStatus(status)), "\(status)")
        }
        #expect(WalletOrdersService.paymentStatus(.partiallyRefunded) == "paid")
        #expect(WalletOrdersService.paymentStatus(.voided) == "voided")
        #expect(WalletOrdersService.paymentStatus(.refunded) == "refunded")
    }

    @Test("a voided order and a fully refunded one: Apple's values, and the package still passes the schema")
    func voidedAndRefunded() async throws {
        try await ServerHarness.with { server in
            var documents: [Data] = []
            for (path, expected) in [("void", "voided"), ("refunds", "refunded")] {
                let (details, orderID) = try await Self.paidOrder(server)
                let total = try await server.admin("GET", "/admin/v1/orders/\(orderID)")
                let amount = try ((total.json["totals"] as? [String: Any])?["total"] as? String).orThrow("total")
                let body: Any? = path == "void" ? nil : ["amount": amount, "idempotencyKey": "all-\(orderID)"]
                let changed = try await server.admin("POST", "/admin/v1/orders/\(orderID)/\(path)", json: body)
                #expect(changed.status == 200 || changed.status == 201, "\(changed.text)")
                let data = try Self.orderJSON(try await Self.download(server, details))
                let order = try JSONValue(parsing: data)
                #expect(order["payment"]?["status"] == .string(expected))
                #expect(order["status"] == .string("cancelled"))
                #expect(order["fulfillments"]?[0]?["status"] == .string("cancelled"))
                #expect(WalletOrderSchema.problems(in: data) == [])
                documents.append(data)
            }
            #expect(try await Self.schemaErrors(documents) == [[], []])
        }
    }
}
