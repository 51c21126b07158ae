import ApplePay
import Foundation
import HTTPCore
import TestSupport
import Testing

@testable import MerchantCore
@testable import MerchantHTTP

/// Issue 21: the web pages are files in `Sources/MerchantHTTP/Web/Assets/`, compiled into the binary.
@Suite("The web pages' assets: files in the source tree, embedded at build time")
struct WebAssetsTests {
    static let assets = Repository.root.appendingPathComponent("Sources/MerchantHTTP/Web/Assets")
    let page = WebCheckout(settings: .init(), configuration: .demo, sandboxMode: true)

    @Test("no Swift file under Sources holds the page's JavaScript")
    func noScriptInSwift() throws {
        let sources = Repository.root.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var swiftFiles = 0
        for case let url as URL in files where url.pathExtension == "swift" {
            swiftFiles += 1
            let text = try String(contentsOf: url, encoding: .utf8)
            for marker in ["addEventListener(", "document.getElementById"] {
                #expect(!text.contains(marker), "\(url.path) contains \(marker)")
            }
        }
        #expect(swiftFiles > 50)
        #expect(
            try String(contentsOf: Self.assets.appendingPathComponent("checkout.js"), encoding: .utf8)
                .contains("document.getElementById"))
    }

    @Test("/checkout.js and /checkout.css are the files' bytes; / is checkout.html with the SDK marker filled")
    func servedBytes() throws {
        func file(_ name: String) throws -> Data { try Data(contentsOf: Self.assets.appendingPathComponent(name)) }
        func served(_ page: WebCheckout, _ path: String) throws -> Data {
            let resource = try #require(page.resources.first { $0.path == path })
            let response = resource.response(to: HTTPRequest(method: .get, path: path))
            #expect(response.status == 200 && response.body == resource.body)
            return response.body
        }
        #expect(try served(page, "/checkout.js") == file("checkout.js"))
        #expect(try served(page, "/checkout.css") == file("checkout.css"))
        let html = try String(decoding: file("checkout.html"), as: UTF8.self)
        #expect(html.contains("<!--SDK-->"))
        #expect(try served(page, "/") == Data(html.replacingOccurrences(of: "<!--SDK-->", with: "").utf8))
        let withSDK = WebCheckout(
            settings: .init(loadsApplePayJSSDK: true), configuration: .demo, sandboxMode: false)
        let tag = "<script src=\"\(WebCheckout.sdkURL)\" crossorigin=\"anonymous\" defer></script>"
        #expect(try served(withSDK, "/") == Data(html.replacingOccurrences(of: "<!--SDK-->", with: tag).utf8))
        #expect(try served(withSDK, "/checkout.js") == file("checkout.js"))
    }

    @Test("the management page: plan, next charge, charges with refunds, the card's fpanSuffix, skipped cycles, Cancel")
    func managementPage() throws {
        let date = { (day: Double) in Date(timeIntervalSince1970: 1_896_048_000 + day * 86_400) }
        var live = Subscription(
            id: "sub_1", secret: "s&cr\"t", checkoutID: "chk_1", orderID: nil, sku: "BEANS",
            productName: "Beans <Dark> & \"Roast\"", plan: .deferred(DeferredPlan(billingDate: date(60))),
            amount: 1234, currencyCode: "USD", merchantTokenIdentifier: nil, paymentMethodReference: "pm",
            network: "Visa", cardSuffix: "4242", cardExpiration: nil, anchor: date(0), nextChargeAt: date(60),
            createdAt: date(0), updatedAt: date(0))
        live.cardDescription = "Visa <Debit>"
        var cancelled = live
        cancelled.status = .cancelled
        cancelled.statusReason = "customer"
        cancelled.nextChargeAt = nil
        cancelled.cardDescription = nil
        cancelled.cardSuffix = nil
        cancelled.skippedCycles = 2
        func charge(_ day: Double, _ status: String, _ decline: String?) -> SubscriptionCharge {
            SubscriptionCharge(
                subscriptionID: "sub_1", cycle: Int(day), attempt: 0, idempotencyKey: "k", amount: 999,
                currencyCode: "JPY", status: status, processorReference: nil, declineCode: decline,
                dueAt: date(day), chargedAt: date(day))
        }
        var refunded = charge(32, "approved", nil)
        refunded.refundedAt = date(32)
        let charges = [charge(30, "approved", nil), charge(31, "declined", "insufficient_<funds>"), refunded]
        for (subscription, charges) in [(live, charges), (live, []), (cancelled, charges), (cancelled, [])] {
            let html = ManagementPage.html(subscription, charges: charges, storeName: "Shop")
            #expect(html.contains("Cancel subscription</button>") == subscription.isLive)
            #expect(html.contains("No charges yet.") == charges.isEmpty)
            #expect(html.contains(#"<link rel="stylesheet" href="/checkout.css">"#))
            #expect(!html.contains("{{") && !html.contains("}}") && !html.contains("<script"))
        }
        let page = ManagementPage.html(live, charges: charges, storeName: "Shop")
        #expect(page.contains("<title>Beans &lt;Dark&gt; &amp; &quot;Roast&quot;: your subscription</title>"))
        #expect(page.contains("action=\"/v1/subscriptions/sub_1/cancel?secret=s&amp;cr&quot;t\""))
        #expect(page.contains("declined (insufficient_&lt;funds&gt;)"))
        #expect(page.contains(#"<dd id="card">Visa &lt;Debit&gt; ending in 4242</dd>"#))
        // Dates as a person reads them, in UTC: no ISO 8601 text.
        #expect(page.contains("approved, refunded 4 March 2030"))
        #expect(page.contains("<li><span>2 March 2030</span><span>999 JPY</span><span>approved</span></li>"))
        #expect(page.contains(#"<dd id="next-charge">1 April 2030</dd>"#))
        #expect(!page.contains("2030-") && !page.contains("T00:00"))
        // The charge made at checkout (the subscription's order): a past charge, first, even before the scheduler's.
        let order = Order(
            id: "ord_1", checkoutID: "chk_1", status: .paid, currencyCode: "USD", lines: [],
            totals: OrderTotals(subtotal: 100, discount: 0, shipping: 0, tax: 0, total: 100),
            payment: PaymentRecord(
                id: "pay_1", transactionID: "t", status: .approved, amount: 100, currencyCode: "USD"),
            refunded: 0, viewSecret: "v", createdAt: date(0).addingTimeInterval(23 * 3600), updatedAt: date(0))
        let justPaid = ManagementPage.html(live, charges: [], checkoutOrder: order, storeName: "Shop")
        #expect(!justPaid.contains("No charges yet."))
        #expect(
            justPaid.contains(
                "<li><span>31 January 2030</span><span>1.00 USD</span><span>approved at checkout</span></li>"))
        let both = ManagementPage.html(live, charges: charges, checkoutOrder: order, storeName: "Shop")
        let atCheckout = try #require(both.range(of: "approved at checkout"))
        let scheduled = try #require(both.range(of: "2 March 2030"))
        #expect(atCheckout.lowerBound < scheduled.lowerBound)
        // Partly refunded, one refund failed and one still being confirmed; and a charge sent whose outcome the
        // provider has not given yet: shown as awaited, last, neither omitted nor failed.
        var partly = charge(33, "approved", nil)
        partly.refundedAt = date(34)
        partly.refunded = 300
        partly.refunds = [
            SubscriptionChargeRefund(
                chargeKey: "k", refundKey: nil, reference: "re_1", amount: 300, status: .succeeded, createdAt: date(34)),
            SubscriptionChargeRefund(
                chargeKey: "k", refundKey: nil, reference: "re_2", amount: 200, status: .failed, createdAt: date(34)),
            SubscriptionChargeRefund(
                chargeKey: "k", refundKey: "k:refund", reference: "re_3", amount: 100, status: .pending,
                createdAt: date(35)),
        ]
        var awaiting = live
        awaiting.unresolvedCharge = SubscriptionChargeAttempt(idempotencyKey: "sub_1:c2:a0", since: date(36))
        let refundsPage = ManagementPage.html(awaiting, charges: [partly], storeName: "Shop")
        #expect(
            refundsPage.contains(
                "approved, 300 JPY refunded 6 March 2030, a refund of 200 JPY failed, a refund of 100 JPY being confirmed"
            ))
        #expect(
            refundsPage.contains(
                "<li><span>8 March 2030</span><span>12.34 USD</span><span>awaiting the provider&#39;s answer</span></li>"
            ))
        let awaited = try #require(refundsPage.range(of: "awaiting the provider"))
        #expect(try #require(refundsPage.range(of: "5 March 2030")).lowerBound < awaited.lowerBound)
        #expect(!refundsPage.contains("No charges yet."))
        #expect(!ManagementPage.html(awaiting, charges: [], storeName: "Shop").contains("No charges yet."))
        let ended = ManagementPage.html(cancelled, charges: [], storeName: "Shop")
        #expect(ended.contains(#"<dd id="card">Visa</dd>"#))
        #expect(ended.contains("2 billing cycle(s) missed"))
        #expect(ended.contains(#"<strong id="subscription-status">cancelled</strong> (customer)"#))
        let response = ManagementPage.response(page)
        #expect(response.headers["Content-Security-Policy"] == ManagementPage.contentSecurityPolicy)
        #expect(response.headers["Cache-Control"] == "no-store")
        #expect(ManagementPage.contentSecurityPolicy.contains("default-src 'none'"))
    }

    @Test("templates: values escaped, sections repeated with inner names first, bad syntax refused")
    func templates() throws {
        let template = try PageTemplate("<p title=\"{{a}}\">{{#list}}[{{a}}{{b}}]{{/list}}</p>")
        let items: [PageTemplate.Context] = [["a": .text("1")], [:], ["b": .text("x")]]
        let rendered = template.render(["a": .text("<'&\">"), "b": .text(""), "list": .list(items)])
        let quoted = "&lt;&#39;&amp;&quot;&gt;"
        #expect(rendered == "<p title=\"\(quoted)\">[1][\(quoted)][\(quoted)x]</p>")
        #expect(template.render(["a": .text(""), "list": .list([])]) == "<p title=\"\"></p>")
        for bad in ["{{a", "{{#a}}", "{{/a}}", "{{#a}}{{/b}}", "{{}}"] {
            #expect(throws: PageTemplate.SyntaxError.self) { try PageTemplate(bad) }
        }
    }
}
