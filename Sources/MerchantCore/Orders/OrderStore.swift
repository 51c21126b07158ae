import ApplePay
import Foundation
import Foundations

/// Where checkouts, orders, payments, refunds and the event log live. ``SQLiteOrderStore`` is the embedded
/// default; a PostgreSQL store can implement the same protocol (all SQL stays behind it).
///
/// The order state machine: `pending → paid | declined | unknown`, `unknown → paid | declined` (by
/// reconciliation, also `pending →` for a process that died mid-payment), `paid → refunded | partiallyRefunded |
/// voided`, `partiallyRefunded → refunded | partiallyRefunded`. Every transition appends an event in the same
/// transaction, and a transition happens only from the state it expects (so two reconcilers settle a payment
/// once).
///
/// Idempotency contract (the token's `transactionId` is unique across payments):
/// 1. ``beginPayment(_:)`` writes a `pending` order and payment keyed by the transaction id in one transaction
///    **before** any processor is called. If that transaction id was seen before, nothing is written and the
///    existing order comes back (`.existing`); two simultaneous calls with the same id produce exactly one
///    `.started`.
/// 2. After the processor answers, ``completePayment(orderID:outcome:)`` moves the order to `paid`, `declined`
///    or, when no answer was seen, `unknown`.
/// A checkout has at most one order that is not `declined`: paying it again with another token gives
/// `.checkoutLocked` (paid, or its outcome still unknown).
public protocol OrderStore: WalletOrderStore {
    /// Stores a new checkout. - Throws: ``OrderStoreError`` `conflict` if the id exists.
    func insertCheckout(_ checkout: Checkout) async throws(OrderStoreError)
    /// The checkout with this id, or `nil`.
    func checkout(id: String) async throws(OrderStoreError) -> Checkout?
    /// Replaces a checkout's state. - Throws: ``OrderStoreError`` `notFound`.
    func updateCheckout(_ checkout: Checkout) async throws(OrderStoreError)
    /// Records the intent to charge (see the type's documentation).
    /// - Throws: ``OrderStoreError`` `notFound` for an unknown checkout.
    func beginPayment(_ order: NewOrder) async throws(OrderStoreError) -> PaymentStart
    /// Merges the processor's answer (or its absence) into the order (``PaymentStateMachine``: a webhook that
    /// settled it while the call was in flight stands) and returns the order.
    /// - Throws: ``OrderStoreError`` `notFound`.
    func completePayment(orderID: String, outcome: ChargeAttempt) async throws(OrderStoreError) -> Order
    /// Orders whose payment is `pending`, `unknown` or `processing` and was last updated before `cutoff`, oldest
    /// first.
    func unsettledOrders(updatedBefore cutoff: Date, limit: Int) async throws(OrderStoreError) -> [Order]
    /// Merges what the processor's ledger holds into the order (`nil`: the processor has no charge for it, so
    /// nothing was charged). Returns the order when this moved it, `nil` when it told nothing new (someone else
    /// settled it, or the provider is still deciding).
    func settlePayment(orderID: String, charge: ProcessorCharge?) async throws(OrderStoreError) -> Order?
    /// The order with this id, or `nil`.
    func order(id: String) async throws(OrderStoreError) -> Order?
    /// The order whose payment carries this token transaction id, or `nil`.
    func order(transactionID: String) async throws(OrderStoreError) -> Order?
    /// Orders, newest first, optionally only those in `status`.
    func orders(status: OrderStatus?, limit: Int) async throws(OrderStoreError) -> [Order]
    /// Orders created in `[from, to)`, oldest first (the daily check against the provider's statement).
    func orders(createdFrom from: Date, to: Date, limit: Int) async throws(OrderStoreError) -> [Order]
    /// Reserves a refund of `amount` minor units under `idempotencyKey` (see ``RefundStart``).
    /// - Throws: ``OrderStoreError`` `notFound`.
    func beginRefund(orderID: String, amount: Int64, idempotencyKey: String) async throws(OrderStoreError)
        -> RefundStart
    /// Records the processor's refund and moves the order to `partiallyRefunded` or `refunded`.
    func completeRefund(id: String, processorReference: String) async throws(OrderStoreError) -> Order
    /// Records the provider's reference of a refund it took and decides later: the refund stays `pending` (its
    /// amount reserved) until a webhook or a look-up says.
    func acknowledgeRefund(id: String, processorReference: String) async throws(OrderStoreError) -> Order
    /// Forgets a pending refund the processor refused (it reserved nothing there).
    func cancelRefund(id: String) async throws(OrderStoreError)
    /// Records that the processor failed a refund it had taken (a look-up's answer): the refund is `failed`, its
    /// amount free again.
    func failRefund(id: String, reason: String) async throws(OrderStoreError) -> Order
    /// Refunds the processor took (they have its reference) and has not decided, last changed before `cutoff`,
    /// oldest first: what the reconciler asks about when their webhook did not come.
    func undecidedRefunds(updatedBefore cutoff: Date, limit: Int) async throws(OrderStoreError) -> [RefundRecord]
    /// The order's refunds, pending ones (``RefundRecord/succeeded`` false) included.
    func refunds(orderID: String) async throws(OrderStoreError) -> [RefundRecord]
    /// Records a void the processor made: a `paid` order with nothing refunded becomes `voided`, and a refund of it
    /// still pending here (begun meanwhile, by another instance) becomes `failed`: the processor voided the charge,
    /// so it cannot refund it.
    /// - Throws: ``OrderStoreError`` `conflict` when the order is not `paid` or has succeeded refunds.
    func recordVoid(orderID: String) async throws(OrderStoreError) -> Order
    /// The event log entries about a checkout (and its orders), oldest first.
    func events(checkoutID: String) async throws(OrderStoreError) -> [StoreEvent]
    /// The discrepancies between what we recorded and what the provider decided, oldest first (`openOnly`: those
    /// no person has resolved).
    func discrepancies(openOnly: Bool, limit: Int) async throws(OrderStoreError) -> [DiscrepancyRecord]
    /// Marks a discrepancy resolved by a person, with what they did; `nil` when there is no such discrepancy.
    func resolveDiscrepancy(id: String, resolution: String) async throws(OrderStoreError) -> DiscrepancyRecord?
    /// Deletes the checkouts created before `cutoff` that never got an order, and their events (the only events
    /// ever deleted; those of orders are kept). Returns how many checkouts were deleted.
    func pruneExpiredCheckouts(createdBefore cutoff: Date, batch: Int) async throws(OrderStoreError) -> Int
}

/// The answer of ``OrderStore/beginPayment(_:)``.
public enum PaymentStart: Sendable, Equatable {
    /// New: a pending order and payment were written; the caller charges now.
    case started(Order)
    /// The transaction id was seen before: this is its order. Do not charge.
    case existing(Order)
    /// The checkout already has an order under another transaction id that is paid (or later), pending or of
    /// unknown outcome. Do not charge.
    case checkoutLocked(Order)
}

/// The answer of ``OrderStore/beginRefund(orderID:amount:idempotencyKey:)``.
public enum RefundStart: Sendable, Equatable {
    /// A pending refund was reserved: send it to the processor.
    case started(RefundRecord, Order)
    /// The key was used before for this order: send it again if still pending (processors are idempotent by key).
    case existing(RefundRecord, Order)
    /// The key was used for another order or another amount.
    case keyReused
    /// The order is not `paid` or `partiallyRefunded`.
    case notRefundable(Order)
    /// More than what is left to refund (`left` minor units, counting pending refunds).
    case exceedsRemaining(left: Int64, Order)
}

/// A refund of an order.
public struct RefundRecord: Sendable, Equatable {
    /// Where a refund stands.
    public enum Status: String, Sendable, Codable {
        /// Recorded before it was sent, or taken by the provider and not decided yet: its amount is reserved.
        case pending
        /// The provider gave the money back.
        case succeeded
        /// The provider failed it: nothing was given back, and its amount is free again.
        case failed
    }

    public var id: String
    public var orderID: String
    public var idempotencyKey: String
    public var amount: Int64
    public var status: Status
    public var processorReference: String?
    /// Whether the provider confirmed it.
    public var succeeded: Bool { status == .succeeded }

    package init(
        id: String, orderID: String, idempotencyKey: String, amount: Int64, status: Status,
        processorReference: String? = nil
    ) {
        self.id = id
        self.orderID = orderID
        self.idempotencyKey = idempotencyKey
        self.amount = amount
        self.status = status
        self.processorReference = processorReference
    }
}

/// A discrepancy between what we recorded and what the provider decided (``PaymentDiscrepancy``), as stored.
public struct DiscrepancyRecord: Sendable, Equatable, Encodable {
    /// `dsc_` followed by 24 hexadecimal digits.
    public var id: String
    public var orderID: String
    public var checkoutID: String
    /// The order's status before (`declined`, `paid`, ...).
    public var recorded: String
    /// What the provider said (`approved`, `declined`, `absent`, `voided`).
    public var provider: String
    /// `answer`, `lookUp` or `webhook`.
    public var source: String
    /// Whether the order was moved to the provider's state.
    public var corrected: Bool
    public var processorReference: String?
    /// Set when the provider captured a payment the checkout had also been paid by under another order: that
    /// order's id (one of the two is to be refunded).
    public var doubleChargeOrderID: String?
    public var detectedAt: Date
    public var resolvedAt: Date?
    /// What the person who resolved it did, in their words.
    public var resolution: String?

    package init(
        id: String, orderID: String, checkoutID: String, recorded: String, provider: String, source: String,
        corrected: Bool, processorReference: String?, doubleChargeOrderID: String?, detectedAt: Date,
        resolvedAt: Date?, resolution: String?
    ) {
        self.id = id
        self.orderID = orderID
        self.checkoutID = checkoutID
        self.recorded = recorded
        self.provider = provider
        self.source = source
        self.corrected = corrected
        self.processorReference = processorReference
        self.doubleChargeOrderID = doubleChargeOrderID
        self.detectedAt = detectedAt
        self.resolvedAt = resolvedAt
        self.resolution = resolution
    }

    private enum CodingKeys: String, CodingKey {
        case id, orderId, checkoutId, recorded, provider, source, corrected, processorReference, doubleChargeOrderId
        case detectedAt, resolvedAt, resolution
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(orderID, forKey: .orderId)
        try c.encode(checkoutID, forKey: .checkoutId)
        try c.encode(recorded, forKey: .recorded)
        try c.encode(provider, forKey: .provider)
        try c.encode(source, forKey: .source)
        try c.encode(corrected, forKey: .corrected)
        try c.encodeIfPresent(processorReference, forKey: .processorReference)
        try c.encodeIfPresent(doubleChargeOrderID, forKey: .doubleChargeOrderId)
        try c.encode(detectedAt.formatted(.iso8601), forKey: .detectedAt)
        try c.encodeIfPresent(resolvedAt?.formatted(.iso8601), forKey: .resolvedAt)
        try c.encodeIfPresent(resolution, forKey: .resolution)
    }
}

/// The status of an order.
public enum OrderStatus: String, Codable, Sendable, CaseIterable {
    /// Written before the processor call; the outcome is not known yet.
    case pending
    /// The processor approved and captured the payment.
    case paid
    /// The processor declined: nothing was captured.
    case declined
    /// The processor's answer was not seen (time limit, lost connection, 5xx, a store failure after the
    /// answer): the reconciler will ask the processor and settle it.
    case unknown
    /// The provider took the payment and decides later (Adyen `Received`, Checkout.com `202`, Stripe
    /// `processing`): never a decline. The customer is told it is being confirmed, the checkout stays locked, and a
    /// webhook or the reconciler's look-up settles it.
    case processing
    /// Captured, then refunded in full.
    case refunded
    /// Captured, then refunded in part.
    case partiallyRefunded
    /// Captured, then voided before settlement.
    case voided

    /// Whether the payment's outcome is not settled yet.
    public var isUnsettled: Bool { self == .pending || self == .unknown || self == .processing }
}

/// The status of a payment row.
public enum PaymentStatus: String, Codable, Sendable {
    case pending, approved, declined, unknown, voided, processing
}

/// An order line: what was bought, at what unit price (minor units).
public struct OrderLine: Codable, Sendable, Equatable {
    public var sku: String
    public var name: String
    public var quantity: Int
    public var unitPrice: Int64
    public var amount: Int64

    public init(sku: String, name: String, quantity: Int, unitPrice: Int64, amount: Int64) {
        self.sku = sku
        self.name = name
        self.quantity = quantity
        self.unitPrice = unitPrice
        self.amount = amount
    }
}

/// The order's money, in minor units of its currency.
public struct OrderTotals: Codable, Sendable, Equatable {
    public var subtotal: Int64
    public var discount: Int64
    public var shipping: Int64
    public var tax: Int64
    /// Payment method surcharge.
    public var fee: Int64
    public var total: Int64

    public init(subtotal: Int64, discount: Int64, shipping: Int64, tax: Int64, fee: Int64 = 0, total: Int64) {
        self.subtotal = subtotal
        self.discount = discount
        self.shipping = shipping
        self.tax = tax
        self.fee = fee
        self.total = total
    }
}

/// The shipping method an order ships with.
public struct OrderShippingMethod: Codable, Sendable, Equatable {
    public var identifier: String
    public var label: String
    /// Minor units.
    public var amount: Int64

    public init(identifier: String, label: String, amount: Int64) {
        self.identifier = identifier
        self.label = label
        self.amount = amount
    }
}

/// What the caller knows about an order before charging: input of ``OrderStore/beginPayment(_:)``.
public struct NewOrder: Sendable, Equatable {
    public var checkoutID: String
    /// The token header's `transactionId` (hex): the idempotency key.
    public var transactionID: String
    public var currencyCode: String
    public var lines: [OrderLine]
    public var totals: OrderTotals
    public var shippingMethod: OrderShippingMethod?
    public var couponCode: String?
    public var shippingContact: Contact?
    public var billingContact: Contact?
    /// The card network (`Visa`, ...), from the token's payment method.
    public var paymentNetwork: String?
    /// Last four digits of the device PAN; never more.
    public var panLastFour: String?

    public init(
        checkoutID: String, transactionID: String, currencyCode: String, lines: [OrderLine], totals: OrderTotals,
        shippingMethod: OrderShippingMethod? = nil, couponCode: String? = nil, shippingContact: Contact? = nil,
        billingContact: Contact? = nil, paymentNetwork: String? = nil, panLastFour: String? = nil
    ) {
        self.checkoutID = checkoutID
        self.transactionID = transactionID
        self.currencyCode = currencyCode
        self.lines = lines
        self.totals = totals
        self.shippingMethod = shippingMethod
        self.couponCode = couponCode
        self.shippingContact = shippingContact
        self.billingContact = billingContact
        self.paymentNetwork = paymentNetwork
        self.panLastFour = panLastFour
    }

    /// The order for a priced checkout paid with a token.
    /// - Parameters:
    ///   - checkout: the checkout being paid.
    ///   - breakdown: its current price (``CheckoutPricing/price(_:)``), which the token's amount matched.
    ///   - transactionID: the token header's `transactionId`.
    ///   - token: the decrypted token: only its network and last four digits are kept.
    ///   - shippingContact: the full shipping contact from the authorized payment.
    ///   - billingContact: the billing contact from the authorized payment.
    public init(
        checkout: Checkout, breakdown: PriceBreakdown, transactionID: String, token: NetworkToken?,
        shippingContact: Contact?, billingContact: Contact?, configuration: StoreConfiguration
    ) {
        let lines = breakdown.lines.filter { $0.kind == .item }.map { line in
            let quantity = line.quantity ?? 1
            let name = configuration.product(sku: line.sku ?? "")?.name ?? line.label
            return OrderLine(
                sku: line.sku ?? "", name: name, quantity: quantity,
                unitPrice: quantity == 0 ? line.amount : line.amount / Int64(quantity), amount: line.amount)
        }
        self.init(
            checkoutID: checkout.id, transactionID: transactionID, currencyCode: breakdown.currencyCode,
            lines: lines,
            totals: OrderTotals(
                subtotal: breakdown.subtotal, discount: breakdown.discount, shipping: breakdown.shipping,
                tax: breakdown.tax, fee: breakdown.fee, total: breakdown.total),
            shippingMethod: breakdown.selectedShippingMethod.map {
                OrderShippingMethod(identifier: $0.identifier, label: $0.label, amount: breakdown.shipping)
            },
            couponCode: breakdown.appliedCoupon?.code, shippingContact: shippingContact,
            billingContact: billingContact, paymentNetwork: token?.network ?? checkout.paymentMethodNetwork,
            panLastFour: token?.lastFour)
    }
}

/// The payment attached to an order.
public struct PaymentRecord: Sendable, Equatable {
    public var id: String
    public var transactionID: String
    public var status: PaymentStatus
    public var amount: Int64
    public var currencyCode: String
    /// The processor's reference when approved.
    public var processorReference: String?
    /// Stable code when declined or failed (`insufficientFunds`, `lostCard`, `processorError`, `processorTimeout`).
    public var failureCode: String?
    public var failureMessage: String?

    package init(
        id: String, transactionID: String, status: PaymentStatus, amount: Int64, currencyCode: String,
        processorReference: String? = nil, failureCode: String? = nil, failureMessage: String? = nil
    ) {
        self.id = id
        self.transactionID = transactionID
        self.status = status
        self.amount = amount
        self.currencyCode = currencyCode
        self.processorReference = processorReference
        self.failureCode = failureCode
        self.failureMessage = failureMessage
    }
}

/// A stored order. Encodes to the `GET /v1/orders/{id}` shape: amounts as Apple Pay JS decimal strings.
public struct Order: Sendable, Equatable, Encodable {
    /// `ord_` followed by 24 hexadecimal digits.
    public var id: String
    public var checkoutID: String
    public var status: OrderStatus
    public var currencyCode: String
    public var lines: [OrderLine]
    public var totals: OrderTotals
    public var shippingMethod: OrderShippingMethod?
    public var couponCode: String?
    public var shippingContact: Contact?
    public var billingContact: Contact?
    public var paymentNetwork: String?
    public var panLastFour: String?
    public var payment: PaymentRecord
    /// Minor units refunded so far (succeeded refunds).
    public var refunded: Int64
    /// The random value that lets the customer see the order (`GET /v1/orders/{id}?secret=`): returned in the
    /// payment answer, never logged.
    public var viewSecret: String
    public var createdAt: Date
    public var updatedAt: Date

    package init(
        id: String, checkoutID: String, status: OrderStatus, currencyCode: String, lines: [OrderLine],
        totals: OrderTotals, shippingMethod: OrderShippingMethod? = nil, couponCode: String? = nil,
        shippingContact: Contact? = nil, billingContact: Contact? = nil, paymentNetwork: String? = nil,
        panLastFour: String? = nil, payment: PaymentRecord, refunded: Int64, viewSecret: String, createdAt: Date,
        updatedAt: Date
    ) {
        self.id = id
        self.checkoutID = checkoutID
        self.status = status
        self.currencyCode = currencyCode
        self.lines = lines
        self.totals = totals
        self.shippingMethod = shippingMethod
        self.couponCode = couponCode
        self.shippingContact = shippingContact
        self.billingContact = billingContact
        self.paymentNetwork = paymentNetwork
        self.panLastFour = panLastFour
        self.payment = payment
        self.refunded = refunded
        self.viewSecret = viewSecret
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    private enum CodingKeys: String, CodingKey {
        case id, checkoutId, status, currencyCode, items, totals, shippingMethod, couponCode, shippingContact
        case billingContact, payment, createdAt, updatedAt, refunded
    }

    /// The customer's view (`GET /v1/orders/{id}` with the order's secret): status, items, totals and the card's
    /// last four digits; no contacts, no processor details.
    public var customerView: CustomerView { CustomerView(order: self) }

    /// See ``customerView``.
    public struct CustomerView: Encodable, Sendable {
        let order: Order

        public func encode(to encoder: any Encoder) throws { try order.encode(to: encoder, withContacts: false) }
    }

    /// The merchant's view (the admin API): everything, contacts included.
    public func encode(to encoder: any Encoder) throws { try encode(to: encoder, withContacts: true) }

    private func encode(to encoder: any Encoder, withContacts: Bool) throws {
        let currency = Currency(code: currencyCode) ?? .usDollar
        func money(_ minor: Int64) -> String { Money(minorUnits: minor, currency: currency).amountString }
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(checkoutID, forKey: .checkoutId)
        try c.encode(status, forKey: .status)
        try c.encode(currencyCode, forKey: .currencyCode)
        struct Item: Encodable {
            var sku: String
            var name: String
            var quantity: Int
            var unitPrice: String
            var amount: String
        }
        try c.encode(
            lines.map {
                Item(
                    sku: $0.sku, name: $0.name, quantity: $0.quantity, unitPrice: money($0.unitPrice),
                    amount: money($0.amount))
            }, forKey: .items)
        try c.encode(
            [
                "subtotal": money(totals.subtotal), "discount": money(totals.discount),
                "shipping": money(totals.shipping),
                "tax": money(totals.tax), "fee": money(totals.fee), "total": money(totals.total),
            ], forKey: .totals)
        if let shippingMethod {
            try c.encode(
                [
                    "identifier": shippingMethod.identifier, "label": shippingMethod.label,
                    "amount": money(shippingMethod.amount),
                ], forKey: .shippingMethod)
        }
        try c.encodeIfPresent(couponCode, forKey: .couponCode)
        if withContacts {
            try c.encodeIfPresent(shippingContact, forKey: .shippingContact)
            try c.encodeIfPresent(billingContact, forKey: .billingContact)
        }
        try c.encode(money(refunded), forKey: .refunded)
        var payment = [
            "status": self.payment.status.rawValue, "transactionId": self.payment.transactionID,
            "amount": money(self.payment.amount),
        ]
        payment["network"] = paymentNetwork
        payment["lastFour"] = panLastFour
        payment["failureCode"] = self.payment.failureCode
        if withContacts { payment["processorReference"] = self.payment.processorReference }
        try c.encode(payment, forKey: .payment)
        // A format style, not an ISO8601DateFormatter (an ICU object built per order).
        try c.encode(createdAt.formatted(.iso8601), forKey: .createdAt)
        try c.encode(updatedAt.formatted(.iso8601), forKey: .updatedAt)
    }
}

/// One entry of the append-only event log.
public struct StoreEvent: Sendable, Equatable {
    /// Increasing sequence number.
    public var sequence: Int64
    public var at: Date
    /// `checkoutCreated`, `checkoutUpdated`, `paymentStarted`, `paymentApproved`, `paymentDeclined`,
    /// `paymentOutcomeUnknown`, `paymentProcessing`, `paymentRefusedBeforeSending`, `paymentReconciled`,
    /// `paymentCorrected`, `paymentDiscrepancy`, `discrepancyResolved`, `refundRequested`, `refundAccepted`,
    /// `refundSucceeded`, `refundFailed`, `refundCancelled`, `paymentVoided`.
    public var kind: String
    public var checkoutID: String?
    public var orderID: String?
    /// A small JSON object with non-secret details.
    public var detail: String

    package init(
        sequence: Int64, at: Date, kind: String, checkoutID: String? = nil, orderID: String? = nil, detail: String
    ) {
        self.sequence = sequence
        self.at = at
        self.kind = kind
        self.checkoutID = checkoutID
        self.orderID = orderID
        self.detail = detail
    }
}

/// The domain of ``OrderStoreError``: its codes are ``ErrorCode`` of it.
public enum OrderStoreErrorDomain {}

/// A store failure with a stable code (``OrderStoreError.Code``).
public typealias OrderStoreError = CodedFailure<OrderStoreErrorDomain>

/// The stable codes of ``OrderStoreError``.
extension ErrorCode<OrderStoreError> {
    /// No such checkout or order.
    public static var notFound: Self { Self("notFound") }
    /// The write contradicts what is stored (duplicate id, order no longer pending).
    public static var conflict: Self { Self("conflict") }
    /// The database failed (I/O, busy beyond the timeout, ...); nothing was written.
    public static var storage: Self { Self("storage") }
    /// A stored row could not be read back (corrupt JSON, unknown status).
    public static var corrupt: Self { Self("corrupt") }
    /// The store location is invalid (`--store` value).
    public static var invalidLocation: Self { Self("invalidLocation") }
}
