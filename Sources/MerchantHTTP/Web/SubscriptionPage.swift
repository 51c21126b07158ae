import ApplePay
import Foundation
import MerchantCore

/// The management page: plan, next charge, past charges and a cancel button (a form posting to `.../cancel`), from
/// the template `Web/Assets/subscription.html`.
enum ManagementPage {
    // The template is compiled into the binary and checked by the tests: it cannot fail to parse at run time.
    static let template = try! PageTemplate(WebAssets.subscriptionHTML)

    static func html(_ s: Subscription, charges: [SubscriptionCharge]) -> String {
        let iso = ISO8601DateFormatter()
        func amount(_ minorUnits: Int64, _ code: String) -> String {
            Money(minorUnits: minorUnits, currency: Currency(code: code) ?? .usDollar).amountString
        }
        let rows: [PageTemplate.Context] = charges.map { charge in
            [
                "chargedAt": .text(iso.string(from: charge.chargedAt)),
                "amount": .text(amount(charge.amount, charge.currencyCode)),
                "currencyCode": .text(charge.currencyCode), "status": .text(charge.status),
                "declined": .list(charge.declineCode.map { [["declineCode": .text($0)]] } ?? []),
            ]
        }
        return template.render([
            "productName": .text(s.productName), "planKind": .text(s.plan.kind),
            "amount": .text(amount(s.amount, s.currencyCode)), "currencyCode": .text(s.currencyCode),
            "status": .text(s.status.rawValue),
            "nextCharge": .text(s.nextChargeAt.map { iso.string(from: $0) } ?? "none"),
            "network": .text(s.network ?? ""), "cardSuffix": .text(s.cardSuffix ?? ""),
            "charges": .list(rows),
            "cancel": .list(s.isLive ? [["id": .text(s.id), "secret": .text(s.secret)]] : []),
        ])
    }
}
