import ApplePay
import Foundation
import MerchantCore
import MerchantHTTP
import MerchantSandbox
import MerchantServer
import MerchantStore
import MerchantTestSupport
import Sandbox
import Testing

/// Plans from checkout to their charges, on a virtual clock: the scheduler is driven day by day with
/// `SubscriptionService.chargeDue(now:)`.
@Suite("Subscriptions")
struct SubscriptionTests {
    /// Buys `sku` with a merchant token; answers the payment's JSON.
    static func subscribe(_ harness: ServerHarness, sku: String) async throws -> [String: Any] {
        let checkout = try await harness.createCheckout([["sku": sku, "quantity": 1]])
        let shown = try await harness.get("/v1/checkouts/\(checkout.id)", checkoutSecret: checkout.secret)
        let request = try JSONDecoder().decode(
            PaymentRequest.self,
            from: try JSONSerialization.data(withJSONObject: shown.json["paymentRequest"] as Any))
        #expect(request.validate().isValid, "\(request.validate().errors)")
        let body = try harness.paymentBody(
            amount: checkout.total, applicationData: checkout.applicationData, merchantToken: true)
        let reply = try await harness.pay(checkout, raw: body)
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply.json["merchantToken"] as? Bool == true)
        return reply.json
    }

    /// A server on the store at `location` charging through `processor`, and `sku` bought on it: runs `body` with
    /// the server, the payment's JSON and the subscription's id.
    static func withSubscription(
        to sku: String, at location: ServerStoreLocation, processor: SandboxProcessor,
        _ body: (ServerHarness, [String: Any], String) async throws -> Void
    ) async throws {
        try await ServerHarness.with(processor: processor, configure: location.apply) { harness in
            let paid = try await subscribe(harness, sku: sku)
            let id = try (paid["subscriptionId"] as? String).orThrow("no subscription id")
            try await body(harness, paid, id)
        }
    }

    static let day: TimeInterval = 86_400

    /// Runs the scheduler once a day over `days` days from `start`, using `services` in turn each day (several
    /// instances on the same store), calling `beforeDay` first.
    static func runDays(
        _ range: Range<Int>, from start: Date, services: [SubscriptionService],
        beforeDay: (Int) async throws -> Void = { _ in }
    ) async throws {
        for day in range {
            try await beforeDay(day)
            let now = start.addingTimeInterval(Double(day) * Self.day)
            for service in services { _ = await service.chargeDue(now: now) }
        }
    }

    /// The year after the checkout (days 0 to 364; the thirteenth month's charge falls on day 365 or 366).
    /// The year of a monthly plan with a one-month $1 trial: the trial at checkout, then $9.99 on each monthly
    /// date from the end of the trial, with cycle 4's first attempt declined and retried the next day.
    func checkYear(restartHalfway: Bool, backend: StoreBackend) async throws {
        let processor = SandboxProcessor()
        let location = try await backend.serverLocation()
        try await Self.withSubscription(to: "BEANS-MONTHLY", at: location, processor: processor) { harness, paid, id in
            let first = try #require(try await harness.application.api.subscriptions?.store.subscription(id: id))
            #expect(first.merchantTokenIdentifier?.hasPrefix("DNITHE") == true)
            #expect(first.status == .active)
            #expect(abs(first.anchor.timeIntervalSince(first.createdAt) - 30 * Self.day) < 2 * Self.day)
            // The scheduler's days start at the checkout's creation, the time of day of every due date (the anchor
            // is a month after it), however long the payment took on a busy machine.
            let checkout = try #require(try await harness.application.store.checkout(id: first.checkoutID))
            let start = checkout.createdAt
            let service = try #require(harness.application.api.subscriptions)
            var injected = false
            let decline: (Int) async throws -> Void = { _ in
                let charges = try await service.store.subscriptionCharges(subscriptionID: id)
                if !injected && charges.filter({ $0.status == "approved" }).count == 3 {
                    processor.declineNextStoredMethodCharges([.insufficientFunds])
                    injected = true
                }
            }
            if restartHalfway {
                try await Self.runDays(0..<180, from: start, services: [service], beforeDay: decline)
                // A new process on the same database, and (for a while) the old one beside it: two instances.
                let reopened = try await location.reopen(harness)
                let restarted = SubscriptionService(
                    store: reopened, processor: processor, logger: .silent, clock: { start })
                try await Self.runDays(180..<200, from: start, services: [restarted, service], beforeDay: decline)
                try await Self.runDays(200..<365, from: start, services: [restarted], beforeDay: decline)
            } else {
                try await Self.runDays(0..<365, from: start, services: [service], beforeDay: decline)
            }
            let charges = try await service.store.subscriptionCharges(subscriptionID: id)
            let approved = charges.filter { $0.status == "approved" }
            let declined = charges.filter { $0.status == "declined" }
            #expect(approved.count == 11)
            #expect(declined.count == 1)
            #expect(declined.first?.cycle == 4)
            #expect(Set(approved.map(\.cycle)) == Set(1...11))
            #expect(approved.allSatisfy { $0.amount == 999 })
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            for charge in approved {
                // Cycle 1 is due a month after the checkout (the trial's end); stored to the millisecond.
                let due = calendar.date(byAdding: .month, value: charge.cycle - 1, to: first.anchor)!
                #expect(abs(charge.dueAt.timeIntervalSince(due)) < 0.002)
                // Charged on the scheduler's first daily run at or after it (the same day; cycle 4 a day later).
                let late = charge.chargedAt.timeIntervalSince(due) - (charge.cycle == 4 ? Self.day : 0)
                #expect(late > -0.002 && late < 5, "cycle \(charge.cycle)")
            }
            // 12 charges in the year at the processor: the $1 trial at checkout and 11 months, each once.
            #expect(processor.chargeCount == 12)
            let stored = processor.charges.filter { $0.status == .approved }.map(\.amount.minorUnits).sorted()
            #expect(stored == [100] + Array(repeating: 999, count: 11))
            let now = try #require(try await service.store.subscription(id: id))
            #expect(now.status == .active)
            #expect(now.cycle == 12)
            // The management page shows it with the secret, and nothing without.
            let secret = try (paid["subscriptionSecret"] as? String).orThrow("no secret")
            let page = try await harness.get("/v1/subscriptions/\(id)/manage?secret=\(secret)")
            #expect(page.status == 200 && page.text.contains("Coffee of the Month"))
            #expect(try await harness.get("/v1/subscriptions/\(id)/manage?secret=nope").status == 404)
        }
    }

    @Test(
        "a year of a monthly plan with a trial: 12 charges at the right amounts and dates, each once, one retry",
        arguments: StoreBackend.available)
    func yearOfMonthlyPlan(_ backend: StoreBackend) async throws {
        try await checkYear(restartHalfway: false, backend: backend)
    }

    @Test(
        "the same year across a restart in the middle, with two instances for a while: the same charges",
        arguments: StoreBackend.available)
    func yearAcrossRestart(_ backend: StoreBackend) async throws {
        try await checkYear(restartHalfway: true, backend: backend)
    }

    @Test(
        "automatic reload: checkout, a balance above the threshold charges nothing, below it reloads once",
        arguments: StoreBackend.available)
    func automaticReload(_ backend: StoreBackend) async throws {
        let processor = SandboxProcessor()
        try await Self.withSubscription(to: "CAFE-CARD", at: try await backend.serverLocation(), processor: processor) {
            harness, _, id in
            #expect(processor.chargeCount == 1)
            let service = try #require(harness.application.api.subscriptions)
            let above = try await harness.admin(
                "POST", "/admin/v1/subscriptions/\(id)/balance", json: ["balance": "7.00"])
            #expect(above.status == 200)
            #expect(await service.chargeDue(now: Date().addingTimeInterval(60)).isEmpty)
            let below = try await harness.admin(
                "POST", "/admin/v1/subscriptions/\(id)/balance", json: ["balance": "3.00"])
            #expect(below.status == 200 && below.json["nextChargeAt"] != nil)
            let charges = await service.chargeDue(now: Date().addingTimeInterval(60))
            #expect(charges.map(\.amount) == [2500])
            #expect(await service.chargeDue(now: Date().addingTimeInterval(120)).isEmpty)
            #expect(processor.chargeCount == 2)
            let list = try await harness.admin("GET", "/admin/v1/subscriptions")
            let first = try ((list.json["subscriptions"] as? [[String: Any]])?.first).orThrow("no list")
            #expect(first["id"] as? String == id)
            #expect(first["status"] as? String == "active")
            #expect((first["merchantTokenIdentifier"] as? String)?.hasPrefix("DNITHE") == true)
        }
    }

    @Test(
        "right after checkout the management page shows the charge just made and dates as a person reads them",
        arguments: StoreBackend.available)
    func pageAfterCheckout(_ backend: StoreBackend) async throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        calendar.locale = Locale(identifier: "en_US_POSIX")
        func human(_ date: Date) -> String {
            let parts = calendar.dateComponents([.day, .month, .year], from: date)
            return "\(parts.day!) \(calendar.standaloneMonthSymbols[parts.month! - 1]) \(parts.year!)"
        }
        let before = Date()
        try await Self.withSubscription(
            to: "BEANS-MONTHLY", at: try await backend.serverLocation(), processor: SandboxProcessor()
        ) { harness, paid, id in
            let secret = try (paid["subscriptionSecret"] as? String).orThrow("no secret")
            let page = try await harness.get("/v1/subscriptions/\(id)/manage?secret=\(secret)")
            #expect(page.status == 200)
            // The $1 trial charged at checkout (the subscription's order) is a past charge, dated today.
            let today = Set([human(before), human(Date())])
            #expect(!page.text.contains("No charges yet."), "\(page.text)")
            #expect(
                today.contains {
                    page.text.contains("<li><span>\($0)</span><span>1.00 USD</span><span>approved at checkout</span>")
                }, "\(page.text)")
            // The next charge, a month later at the trial's end, as "1 January 2027", not ISO 8601.
            let stored = try #require(try await harness.application.api.subscriptions?.store.subscription(id: id))
            let next = try #require(stored.nextChargeAt)
            #expect(page.text.contains(#"<dd id="next-charge">\#(human(next))</dd>"#), "\(page.text)")
            #expect(!page.text.contains(ISO8601DateFormatter().string(from: next).prefix(10)))
        }
        // A deferred plan charges nothing at checkout: nothing to show yet.
        try await Self.withSubscription(
            to: "TASTING-SEAT", at: try await backend.serverLocation(), processor: SandboxProcessor()
        ) { harness, paid, id in
            let secret = try (paid["subscriptionSecret"] as? String).orThrow("no secret")
            let page = try await harness.get("/v1/subscriptions/\(id)/manage?secret=\(secret)")
            #expect(page.text.contains("No charges yet."), "\(page.text)")
            #expect(page.text.contains(#"<dd id="next-charge">31 March 2030</dd>"#), "\(page.text)")
        }
    }

    @Test(
        "the management page's Cancel form (a url-encoded POST with the secret, from the page's own origin) cancels",
        arguments: [false, true])
    func cancelFromThePage(live: Bool) async throws {
        try await ServerHarness.with(processor: SandboxProcessor(), live: live) { harness in
            let paid = try await Self.subscribe(harness, sku: "TASTING-SEAT")
            let id = try (paid["subscriptionId"] as? String).orThrow("no subscription id")
            let secret = try (paid["subscriptionSecret"] as? String).orThrow("no secret")
            let page = try await harness.get("/v1/subscriptions/\(id)/manage?secret=\(secret)")
            #expect(page.status == 200)
            // The form as the browser submits it: its action, a url-encoded body (a button without a name: empty).
            let start = try page.text.range(of: #"action=""#).orThrow("no form on the page")
            let action = String(page.text[start.upperBound...].prefix { $0 != "\"" })
            #expect(action == "/v1/subscriptions/\(id)/cancel?secret=\(secret)")
            // The page as a browser must treat it: a strict policy, nothing cached, the checkout page's style sheet.
            #expect(page.header("Content-Security-Policy")?.contains("default-src 'none'") == true)
            #expect(page.header("Content-Security-Policy")?.contains("form-action 'self'") == true)
            #expect(page.header("Cache-Control") == "no-store")
            #expect(page.text.contains(#"<link rel="stylesheet" href="/checkout.css">"#))
            #expect(page.text.contains("Cancel subscription"))
            let origin = harness.base  // the server's own address is its public URL here
            let form = [(name: "Content-Type", value: "application/x-www-form-urlencoded")]
            let sameOrigin = form + [(name: "Origin", value: origin)]
            let wrong = try await harness.send(
                "POST", "/v1/subscriptions/\(id)/cancel?secret=nope", headers: sameOrigin, body: Data())
            #expect(wrong.status == 404)
            // Another site's form (its Origin, or only its Referer), or a form saying neither: refused.
            for foreign in [
                [(name: "Origin", value: "https://evil.example")],
                [(name: "Referer", value: "https://evil.example/page")], [],
            ] {
                let refused = try await harness.send("POST", action, headers: form + foreign, body: Data())
                #expect(refused.status == 403 && refused.errorCode == "crossOriginForm", "\(foreign)")
            }
            #expect(try await harness.application.api.subscriptions?.store.subscription(id: id)?.isLive == true)
            // The page's own form: cancelled, and back to the page, which says so.
            let cancelled = try await harness.send("POST", action, headers: sameOrigin, body: Data())
            #expect(cancelled.status == 303, "\(cancelled.text)")
            let location = try #require(cancelled.header("Location"))
            #expect(location == "/v1/subscriptions/\(id)/manage?secret=\(secret)")
            let stored = try await harness.application.api.subscriptions?.store.subscription(id: id)
            #expect(stored?.status == .cancelled)
            let after = try await harness.get(location)
            #expect(after.text.contains(#"<strong id="subscription-status">cancelled</strong>"#), "\(after.text)")
            #expect(!after.text.contains("Cancel subscription"))
            // A second click (the Referer of the page alone): still back to the page.
            let again = try await harness.send(
                "POST", action, headers: form + [(name: "Referer", value: harness.base + location)], body: Data())
            #expect(again.status == 303)
            // The JSON API keeps its rule: the same form posted to a JSON route is refused.
            let checkout = try await harness.send("POST", "/v1/checkouts", headers: form, body: Data("items=1".utf8))
            #expect(checkout.status == 415 && checkout.errorCode == "unsupportedMediaType")
        }
    }

    @Test(
        "deferred: nothing charged at checkout, charged once on the billing date; a cancelled one never",
        arguments: StoreBackend.available)
    func deferred(_ backend: StoreBackend) async throws {
        let processor = SandboxProcessor()
        try await Self.withSubscription(
            to: "TASTING-SEAT", at: try await backend.serverLocation(), processor: processor
        ) { harness, paid, id in
            #expect(paid["orderId"] == nil)
            #expect(processor.chargeCount == 0)
            let billing = Date(timeIntervalSince1970: 1_901_145_600)
            let service = try #require(harness.application.api.subscriptions)
            #expect(await service.chargeDue(now: billing.addingTimeInterval(-Self.day)).isEmpty)
            let second = try await Self.subscribe(harness, sku: "TASTING-SEAT")
            let secondID = try (second["subscriptionId"] as? String).orThrow("no id")
            let secret = try (second["subscriptionSecret"] as? String).orThrow("no secret")
            let cancelled = try await harness.post("/v1/subscriptions/\(secondID)/cancel?secret=\(secret)", json: [:])
            #expect(cancelled.status == 200 && cancelled.json["status"] as? String == "cancelled")
            let charges = await service.chargeDue(now: billing)
            #expect(charges.map(\.subscriptionID) == [id])
            #expect(charges.map(\.amount) == [4500])
            #expect(await service.chargeDue(now: billing.addingTimeInterval(Self.day)).isEmpty)
            #expect(processor.chargeCount == 1)
            #expect(try await service.store.subscription(id: id)?.statusReason == "charged")
        }
    }
}

extension ServerHarness.Reply {
    /// A header of the answer, its name in any case (the socket's client gives them lowercased).
    fileprivate func header(_ name: String) -> String? {
        headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }
}
