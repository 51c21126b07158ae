import ApplePay
import Foundation
import HTTPCore
import MerchantCore

/// The customer's subscription pages, from the template `Web/Assets/subscription.html`, in the checkout page's
/// style sheet: the management page (plan, next charge, past charges with what their refunds gave back and those
/// pending or failed, the one at checkout first, a charge whose outcome is awaited last as "awaiting the provider's
/// answer", dates as "1 January 2027" in UTC; the card as Apple describes it with its `fpanSuffix`, cycles skipped
/// after an outage, and a Cancel form posting to `.../cancel`), and short messages (a subscription that has not
/// started yet, a link without its secret). Served with a
/// Content-Security-Policy that allows this server's style sheet and nothing else (no script at all, forms posted
/// only here), `Cache-Control: no-store` (the URL carries the secret) and no framing.
enum ManagementPage {
    static let template = CustomerPage.template(WebAssets.subscriptionHTML)

    /// The pages' Content-Security-Policy.
    static let contentSecurityPolicy = CustomerPage.contentSecurityPolicy(images: "'self'", forms: "'self'")

    /// The management page of `s`.
    /// - Parameters:
    ///   - charges: the scheduler's charges of `s`.
    ///   - checkoutOrder: the order of the payment at checkout (``Subscription/orderID``: the trial's charge, or the
    ///     first cycle's), shown first among the past charges; `nil` when nothing was charged then.
    ///   - storeName: the page's header.
    static func html(
        _ s: Subscription, charges: [SubscriptionCharge], checkoutOrder: Order? = nil,
        storeName: String = "Subscription"
    ) -> String {
        let date = dateFormatter()
        func amount(_ minorUnits: Int64, _ code: String) -> String {
            Money(minorUnits: minorUnits, currency: Currency(code: code) ?? .usDollar).amountString
        }
        var rows: [PageTemplate.Context] = []
        if let order = checkoutOrder {
            rows.append([
                "chargedAt": .text(date.string(from: order.createdAt)),
                "amount": .text(amount(order.payment.amount, order.payment.currencyCode)),
                "currencyCode": .text(order.payment.currencyCode), "status": .text(checkoutStatus(order.status)),
                "declined": .list([]), "refunded": .list([]),
            ])
        }
        rows += charges.map { charge in
            [
                "chargedAt": .text(date.string(from: charge.chargedAt)),
                "amount": .text(amount(charge.amount, charge.currencyCode)),
                "currencyCode": .text(charge.currencyCode), "status": .text(charge.status),
                "declined": .list(charge.declineCode.map { [["declineCode": .text($0)]] } ?? []),
                "refunded": .list(refundNotes(charge, date).map { ["text": .text($0)] }),
            ]
        }
        if let attempt = s.unresolvedCharge {
            // Sent, its outcome not known yet (an answer lost, or decided later): neither charged nor failed.
            rows.append([
                "chargedAt": .text(date.string(from: attempt.since)), "amount": .text(amount(s.amount, s.currencyCode)),
                "currencyCode": .text(s.currencyCode), "status": .text(Self.awaitingStatus), "declined": .list([]),
                "refunded": .list([]),
            ])
        }
        let card = s.cardDescription ?? s.network ?? "Card"
        var terms = "Cancelling stops future charges."
        if SubscriptionBilling.cancellationOwesCharge(s, at: Date()) {
            terms = "The free cancellation period is over: the amount is still charged on the billing date."
        }
        let subscription: PageTemplate.Context = [
            "productName": .text(s.productName), "planDescription": .text(s.plan.description ?? s.plan.kind),
            "amount": .text(amount(s.amount, s.currencyCode)), "currencyCode": .text(s.currencyCode),
            "status": .text(s.status.rawValue),
            "reason": .list(s.statusReason.map { [["text": .text($0)]] } ?? []),
            "nextCharge": .text(s.nextChargeAt.map { date.string(from: $0) } ?? "none"),
            "cardName": .text(card), "suffix": .list(s.cardSuffix.map { [["digits": .text($0)]] } ?? []),
            "skipped": .list(s.skippedCycles > 0 ? [["count": .text(String(s.skippedCycles))]] : []),
            "charges": .list(rows), "noCharges": .list(rows.isEmpty ? [[:]] : []),
            "cancel": .list(
                s.isLive ? [["id": .text(s.id), "secret": .text(s.secret), "terms": .text(terms)]] : []),
        ]
        return template.render([
            "title": .text("\(s.productName): your subscription"), "storeName": .text(storeName),
            "referrer": .text("same-origin"),
            "subscription": .list([subscription]), "message": .list([]),
        ])
    }

    /// Dates as a person reads them ("1 January 2027"), in UTC: the zone of the billing calendar
    /// (``BillingCalendar``) and of a deferred plan's billing date; the store configuration names no zone of its own.
    static func dateFormatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "d MMMM yyyy"
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter
    }

    /// How a charge sent whose outcome the provider has not given yet is shown.
    static let awaitingStatus = "awaiting the provider's answer"

    /// What was given back of a charge, in words: "refunded 4 March 2030" (the whole, or an amount not recorded),
    /// "3.00 USD refunded 4 March 2030" (a part), and each refund still pending or failed.
    static func refundNotes(_ charge: SubscriptionCharge, _ date: DateFormatter) -> [String] {
        let currency = Currency(code: charge.currencyCode) ?? .usDollar
        func money(_ minorUnits: Int64) -> String {
            Money(minorUnits: minorUnits, currency: currency).amountString + " " + charge.currencyCode
        }
        var notes: [String] = []
        if let at = charge.refundedAt {
            let part = charge.refunded > 0 && charge.refunded < charge.amount
            notes.append((part ? money(charge.refunded) + " " : "") + "refunded " + date.string(from: at))
        }
        for refund in charge.refunds {
            switch refund.status {
            case .pending: notes.append("a refund of \(money(refund.amount)) being confirmed")
            case .failed: notes.append("a refund of \(money(refund.amount)) failed")
            case .succeeded: break
            }
        }
        return notes
    }

    /// The checkout charge's status, in the words of the scheduler's charges.
    static func checkoutStatus(_ status: OrderStatus) -> String {
        switch status {
        case .paid: "approved at checkout"
        case .refunded: "approved at checkout, refunded"
        case .partiallyRefunded: "approved at checkout, partly refunded"
        case .pending, .unknown, .processing: "being confirmed"
        case .declined: "declined"
        case .voided: "voided"
        }
    }

    /// A page saying one thing.
    static func message(heading: String, text: String, storeName: String = "Subscription") -> String {
        template.render([
            "title": .text(heading), "storeName": .text(storeName), "referrer": .text("same-origin"),
            "subscription": .list([]),
            "message": .list([["heading": .text(heading), "text": .text(text)]]),
        ])
    }

    /// An HTML answer with the pages' headers.
    static func response(_ html: String, status: Int = 200) -> HTTPResponse {
        CustomerPage.response(
            html, status: status, contentSecurityPolicy: contentSecurityPolicy, referrerPolicy: "same-origin")
    }
}
