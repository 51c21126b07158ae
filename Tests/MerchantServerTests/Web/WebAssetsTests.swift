import ApplePay
import Foundation
import HTTPServer
import MerchantCore
import TestSupport
import Testing

@testable import MerchantHTTP

/// Issue 21: the web pages are files in `Sources/MerchantHTTP/Web/Assets/`, compiled into the binary.
@Suite("The web pages' assets: files in the source tree, embedded at build time")
struct WebAssetsTests {
    static let assets = Repository.root.appendingPathComponent("Sources/MerchantHTTP/Web/Assets")
    let page = WebCheckout(settings: .init(), storeName: "Shop", currencyCode: "USD", sandboxMode: true)

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
            settings: .init(loadsApplePayJSSDK: true), storeName: "Shop", currencyCode: "USD", sandboxMode: false)
        let tag = "<script src=\"\(WebCheckout.sdkURL)\" crossorigin=\"anonymous\" defer></script>"
        #expect(try served(withSDK, "/") == Data(html.replacingOccurrences(of: "<!--SDK-->", with: tag).utf8))
        #expect(try served(withSDK, "/checkout.js") == file("checkout.js"))
    }

    @Test("the management page renders as the Swift string did, values HTML-escaped")
    func managementPage() throws {
        let date = { (day: Double) in Date(timeIntervalSince1970: 1_896_048_000 + day * 86_400) }
        let live = Subscription(
            id: "sub_1", secret: "s&cr\"t", checkoutID: "chk", orderID: nil, sku: "BEANS",
            productName: "Beans <Dark> & \"Roast\"", plan: .deferred(DeferredPlan(billingDate: date(60))),
            amount: 1234, currencyCode: "USD", merchantTokenIdentifier: nil, paymentMethodReference: "pm",
            network: "Visa", cardSuffix: "4242", cardExpiration: nil, anchor: date(0), nextChargeAt: date(60),
            createdAt: date(0), updatedAt: date(0))
        var cancelled = live
        cancelled.status = .cancelled
        cancelled.nextChargeAt = nil
        cancelled.network = nil
        cancelled.cardSuffix = nil
        func charge(_ day: Double, _ status: String, _ decline: String?) -> SubscriptionCharge {
            SubscriptionCharge(
                subscriptionID: "sub_1", cycle: Int(day), attempt: 0, idempotencyKey: "k", amount: 999,
                currencyCode: "JPY", status: status, processorReference: nil, declineCode: decline,
                dueAt: date(day), chargedAt: date(day))
        }
        let charges = [charge(30, "approved", nil), charge(31, "declined", "insufficient_<funds>")]
        for (subscription, charges) in [(live, charges), (live, []), (cancelled, charges), (cancelled, [])] {
            let html = ManagementPage.html(subscription, charges: charges)
            #expect(html == Self.swiftStringPage(subscription, charges: charges) + "\n")
            #expect(html.contains("<button type=\"submit\">Cancel</button>") == subscription.isLive)
        }
        let page = ManagementPage.html(live, charges: charges)
        #expect(page.contains("<title>Beans &lt;Dark&gt; &amp; &quot;Roast&quot;</title>"))
        #expect(page.contains("action=\"/v1/subscriptions/sub_1/cancel?secret=s&amp;cr&quot;t\""))
        #expect(page.contains("<td>declined (insufficient_&lt;funds&gt;)</td>"))
        #expect(!page.contains("{{") && !page.contains("}}"))
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

    /// The management page as `SubscriptionPage.swift` built it before issue 21, kept here as the reference.
    static func swiftStringPage(_ s: Subscription, charges: [SubscriptionCharge]) -> String {
        func escape(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        let iso = ISO8601DateFormatter()
        let amount = Money(minorUnits: s.amount, currency: Currency(code: s.currencyCode) ?? .usDollar).amountString
        let rows = charges.map { charge in
            let value = Money(minorUnits: charge.amount, currency: Currency(code: charge.currencyCode) ?? .usDollar)
            return "<tr><td>\(iso.string(from: charge.chargedAt))</td><td>\(value.amountString) "
                + "\(escape(charge.currencyCode))</td><td>\(escape(charge.status))"
                + "\(charge.declineCode.map { " (\(escape($0)))" } ?? "")</td></tr>"
        }.joined()
        let cancel =
            s.isLive
            ? "<form method=\"post\" action=\"/v1/subscriptions/\(escape(s.id))/cancel?secret=\(escape(s.secret))\">"
                + "<button type=\"submit\">Cancel</button></form>" : ""
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><title>\(escape(s.productName))</title></head>
            <body><h1>\(escape(s.productName))</h1>
            <p>Plan: \(escape(s.plan.kind)), \(amount) \(escape(s.currencyCode)). Status: \(escape(s.status.rawValue)).</p>
            <p>Next charge: \(s.nextChargeAt.map { iso.string(from: $0) } ?? "none")</p>
            <p>Card: \(escape(s.network ?? "")) …\(escape(s.cardSuffix ?? ""))</p>
            <table><tr><th>Date</th><th>Amount</th><th>Result</th></tr>\(rows)</table>\(cancel)</body></html>
            """
    }
}
