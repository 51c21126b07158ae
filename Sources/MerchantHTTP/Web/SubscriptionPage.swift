import ApplePay
import Foundation
import MerchantCore

/// The management page: plan, next charge, past charges and a cancel button (a form posting to `.../cancel`).
enum ManagementPage {
    static func html(_ s: Subscription, charges: [SubscriptionCharge]) -> String {
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
