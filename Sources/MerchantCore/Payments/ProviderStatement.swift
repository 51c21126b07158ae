import ApplePay
import Foundation

/// One payment as the provider's own records list it: what a finance team compares with the orders every day.
public struct ProviderStatementEntry: Sendable, Equatable {
    /// The provider's id (`pi_…`, `pay_…`, an Adyen `Psp Reference`, `prc_…`).
    public var reference: String
    /// Our reference as the provider echoes it: the token's transaction id (or the order id).
    public var merchantReference: String?
    /// Minor units.
    public var amount: Int64
    public var currencyCode: String
    /// Whether the provider captured it (settled, for a settlement report).
    public var captured: Bool
    /// Minor units refunded so far.
    public var refunded: Int64
    /// When the provider created it, when it says.
    public var createdAt: Date?

    public init(
        reference: String, merchantReference: String?, amount: Int64, currencyCode: String, captured: Bool,
        refunded: Int64 = 0, createdAt: Date? = nil
    ) {
        self.reference = reference
        self.merchantReference = merchantReference
        self.amount = amount
        self.currencyCode = currencyCode
        self.captured = captured
        self.refunded = refunded
        self.createdAt = createdAt
    }
}

/// What a provider's statement for a period covers.
public struct ProviderStatement: Sendable, Equatable {
    public var entries: [ProviderStatementEntry]
    /// Whether it lists every payment of the period (a list by creation time: Stripe, the processor protocol), so an
    /// order paid here but missing there is a discrepancy. A settlement report (Adyen) lists what was settled in its
    /// batches, and a look-up by reference (Checkout.com) only what we asked about: neither proves a payment absent.
    public var listsEveryPayment: Bool

    public init(entries: [ProviderStatementEntry], listsEveryPayment: Bool) {
        self.entries = entries
        self.listsEveryPayment = listsEveryPayment
    }
}

/// A processor that can list its own records for a period (``PaymentProcessor``s that can: the processor protocol,
/// Stripe, Checkout.com). Adyen has no such API: its Settlement details report is read from a file instead.
public protocol ProviderStatements: Sendable {
    /// The provider's payments created in `[since, until)`. `orders` are ours for the same period: a provider that
    /// is read by reference (Checkout.com `GET /payments?reference=`) is asked about each.
    func statement(since: Date, until: Date, orders: [Order]) async throws(ProcessorError) -> ProviderStatement
}

/// One difference between our orders and the provider's statement. Encodes to the shape `applepay reconcile` and
/// `GET /admin/v1/reconciliation` print.
public struct StatementDiscrepancy: Sendable, Equatable, Encodable {
    /// The kinds (stable strings).
    public enum Kind: String, Sendable, Encodable, CaseIterable {
        /// The provider captured a payment no order of ours is for.
        case chargedWithoutOrder
        /// The provider captured it; our order does not say paid.
        case capturedNotPaid
        /// Our order says paid; the provider did not capture it (or, where its statement lists everything, has no
        /// such payment).
        case paidNotCaptured
        /// The provider charged another amount or currency than our order's.
        case amountMismatch
        /// The provider refunded another amount than we recorded.
        case refundMismatch
    }

    public var kind: Kind
    public var orderID: String?
    public var transactionID: String?
    public var processorReference: String?
    /// What we recorded, in words (`declined`, `4932 USD`, `refunded 300`).
    public var ours: String
    /// What the provider's statement says.
    public var provider: String

    private enum CodingKeys: String, CodingKey {
        case kind
        case orderID = "orderId"
        case transactionID = "transactionId"
        case processorReference, ours, provider
    }
}

/// Compares our orders of a period with a provider's statement for it: the daily check. Pure.
public enum StatementComparison {
    /// Every discrepancy, orders first (in their order), then the provider's entries no order is for.
    public static func compare(orders: [Order], with statement: ProviderStatement) -> [StatementDiscrepancy] {
        var byMerchantReference: [String: Int] = [:]
        var byReference: [String: Int] = [:]
        for (index, entry) in statement.entries.enumerated() {
            if let merchant = entry.merchantReference, !merchant.isEmpty { byMerchantReference[merchant] = index }
            byReference[entry.reference] = index
        }
        var matched = Set<Int>()
        var found: [StatementDiscrepancy] = []
        for order in orders {
            let index =
                byMerchantReference[order.payment.transactionID] ?? byMerchantReference[order.id]
                ?? order.payment.processorReference.flatMap { byReference[$0] }
            func discrepancy(_ kind: StatementDiscrepancy.Kind, ours: String, provider: String) {
                found.append(
                    StatementDiscrepancy(
                        kind: kind, orderID: order.id, transactionID: order.payment.transactionID,
                        processorReference: index.map { statement.entries[$0].reference }
                            ?? order.payment.processorReference,
                        ours: ours, provider: provider))
            }
            let paid = [.paid, .partiallyRefunded, .refunded].contains(order.status)
            guard let index else {
                if paid, statement.listsEveryPayment {
                    discrepancy(.paidNotCaptured, ours: order.status.rawValue, provider: "no such payment")
                }
                continue
            }
            matched.insert(index)
            let entry = statement.entries[index]
            if entry.captured && !paid {
                discrepancy(.capturedNotPaid, ours: order.status.rawValue, provider: "captured")
            } else if paid && !entry.captured {
                discrepancy(.paidNotCaptured, ours: order.status.rawValue, provider: "not captured")
            }
            guard entry.captured else { continue }
            if entry.amount != order.payment.amount
                || entry.currencyCode.uppercased() != order.payment.currencyCode.uppercased()
            {
                discrepancy(
                    .amountMismatch, ours: "\(order.payment.amount) \(order.payment.currencyCode)",
                    provider: "\(entry.amount) \(entry.currencyCode.uppercased())")
            }
            if entry.refunded != order.refunded {
                discrepancy(.refundMismatch, ours: "refunded \(order.refunded)", provider: "refunded \(entry.refunded)")
            }
        }
        for (index, entry) in statement.entries.enumerated() where entry.captured && !matched.contains(index) {
            found.append(
                StatementDiscrepancy(
                    kind: .chargedWithoutOrder, orderID: nil, transactionID: entry.merchantReference,
                    processorReference: entry.reference, ours: "no order",
                    provider: "captured \(entry.amount) \(entry.currencyCode.uppercased())"))
        }
        return found
    }
}

/// The daily check as a use case: our orders of a period against the provider's statement for it.
public struct StatementCheck: Sendable {
    /// What a check found. Encodes to the `applepay reconcile` / `GET /admin/v1/reconciliation` answer.
    public struct Report: Sendable, Equatable, Encodable {
        public var since: Date
        public var until: Date
        /// Our orders created in the period.
        public var orders: Int
        /// The provider's entries.
        public var entries: Int
        public var listsEveryPayment: Bool
        public var discrepancies: [StatementDiscrepancy]

        private enum CodingKeys: String, CodingKey {
            case since, until, orders, entries, listsEveryPayment, discrepancies
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(since.formatted(.iso8601), forKey: .since)
            try c.encode(until.formatted(.iso8601), forKey: .until)
            try c.encode(orders, forKey: .orders)
            try c.encode(entries, forKey: .entries)
            try c.encode(listsEveryPayment, forKey: .listsEveryPayment)
            try c.encode(discrepancies, forKey: .discrepancies)
        }
    }

    public let store: any OrderStore
    /// Where subscription charges are (a merchant-initiated charge is a provider payment without an order): a
    /// capture whose key is a recorded, approved charge of the same amount is not `chargedWithoutOrder`.
    public let subscriptions: (any SubscriptionStore)?
    /// How far beyond the period orders are read to match the provider's entries (a payment begun just before
    /// midnight is created at the provider just after): one hour.
    public static let margin: TimeInterval = 3600
    /// At most this many orders in one check.
    public static let limit = 100_000

    /// A period's edge as a person gives it: `YYYY-MM-DD` (midnight UTC) or an ISO 8601 time; `nil` otherwise.
    public static func date(parsing text: String) -> Date? {
        if text.count == 10, let day = try? Date(text + "T00:00:00Z", strategy: .iso8601) { return day }
        return try? Date(text, strategy: .iso8601)
    }

    public init(store: any OrderStore, subscriptions: (any SubscriptionStore)? = nil) {
        self.store = store
        self.subscriptions = subscriptions ?? store as? any SubscriptionStore
    }

    /// Compares the orders created in `[since, until)` with `statement`, which is given the orders to ask about.
    /// Discrepancies of orders just outside the period (read only to match the provider's entries) are not reported.
    public func run(
        since: Date, until: Date,
        statement: ([Order]) async throws(ProcessorError) -> ProviderStatement
    ) async throws -> Report {
        let nearby = try await store.orders(
            createdFrom: since.addingTimeInterval(-Self.margin), to: until.addingTimeInterval(Self.margin),
            limit: Self.limit)
        let inPeriod = nearby.filter { $0.createdAt >= since && $0.createdAt < until }
        let provided = try await statement(inPeriod)
        let outside = Set(nearby.filter { $0.createdAt < since || $0.createdAt >= until }.map(\.id))
        var discrepancies: [StatementDiscrepancy] = []
        for discrepancy in StatementComparison.compare(orders: nearby, with: provided) {
            if let order = discrepancy.orderID, outside.contains(order) { continue }
            if discrepancy.kind == .chargedWithoutOrder, try await isSubscriptionCharge(discrepancy, provided) {
                continue
            }
            discrepancies.append(discrepancy)
        }
        return Report(
            since: since, until: until, orders: inPeriod.count, entries: provided.entries.count,
            listsEveryPayment: provided.listsEveryPayment, discrepancies: discrepancies)
    }

    /// Whether a capture without an order is a subscription's charge we recorded as approved, of its amount (its key
    /// is `sub_…:c<cycle>:a<attempt>`).
    private func isSubscriptionCharge(_ discrepancy: StatementDiscrepancy, _ statement: ProviderStatement)
        async throws -> Bool
    {
        guard let subscriptions, let key = discrepancy.transactionID, key.hasPrefix("sub_"),
            let id = key.split(separator: ":").first.map(String.init),
            let entry = statement.entries.first(where: { $0.reference == discrepancy.processorReference })
        else { return false }
        return try await subscriptions.subscriptionCharges(subscriptionID: id).contains {
            $0.idempotencyKey == key && $0.status == "approved" && $0.amount == entry.amount
        }
    }
}
