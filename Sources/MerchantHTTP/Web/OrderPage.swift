import ApplePay
import Foundation
import MerchantCore
import MerchantWallet

/// The customer's order page, the Wallet order's `orderManagementURL`: the items, totals, payment and shipment, in the
/// checkout page's look (its style sheet), from the template `Web/Assets/order.html` in
/// the pages' layout (``CustomerPage``).
enum OrderPage {
    static let template = CustomerPage.template(WebAssets.orderHTML)

    /// Nothing from another host, no script at all, no form, no framing.
    static let contentSecurityPolicy = CustomerPage.contentSecurityPolicy(images: "'self' data:", forms: "'none'")

    static func html(_ order: Order, steps: [FulfillmentStep], storeName: String) -> String {
        let currency = Currency(code: order.currencyCode) ?? .usDollar
        func amount(_ minorUnits: Int64) -> String { Money(minorUnits: minorUnits, currency: currency).amountString }
        let date = Date.FormatStyle(date: .abbreviated, time: .shortened, timeZone: .gmt)
        let latest = steps.last
        let carrier = steps.last(where: { $0.carrier != nil })?.carrier
        let tracking = steps.last(where: { $0.trackingNumber != nil })?.trackingNumber
        let status = WalletOrdersService.orderStatus(order, latest: latest?.status)
        let number = String(order.id.uppercased().suffix(12))
        return template.render([
            "title": .text("Order \(number) · \(storeName)"), "referrer": .text("no-referrer"),
            "storeName": .text(storeName), "orderNumber": .text(number),
            "createdAt": .text(order.createdAt.formatted(date) + " UTC"),
            "updatedAt": .text(order.updatedAt.formatted(date) + " UTC"),
            "status": .text(status.capitalized), "currencyCode": .text(currency.code),
            "items": .list(
                order.lines.map {
                    [
                        "title": .text($0.name), "quantity": .text(String($0.quantity)),
                        "unitPrice": .text(amount($0.unitPrice)),
                    ]
                }),
            "summary": .list(
                WalletOrdersService.summary(of: order).map {
                    ["label": .text($0.label), "amount": .text(amount($0.amount))]
                }
            ),
            "total": .text(amount(order.totals.total)),
            "card": .text(
                [order.paymentNetwork ?? "a card", order.panLastFour.map { "ending in \($0)" }].compactMap { $0 }
                    .joined(separator: " ")),
            "paymentStatus": .text(WalletOrdersService.paymentStatus(order.status).capitalized),
            "fulfillmentStatus": .text(
                Self.words(latest?.status.rawValue ?? (status == "cancelled" ? "cancelled" : "processing"))),
            "tracking": .list(
                tracking.map { [["carrier": .text(carrier ?? "Carrier"), "trackingNumber": .text($0)]] } ?? []),
        ])
    }

    /// `outForDelivery` → `Out for delivery`.
    static func words(_ status: String) -> String {
        var text = ""
        for character in status {
            if character.isUppercase { text += " " + character.lowercased() } else { text.append(character) }
        }
        return text.prefix(1).uppercased() + text.dropFirst()
    }
}
