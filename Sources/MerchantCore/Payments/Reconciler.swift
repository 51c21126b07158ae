import ApplePay
import Foundation
import Foundations
import Logging

/// Settles payments whose outcome was not seen: every `pending` or `unknown` order last touched more than
/// ``settleAfter`` ago is looked up at the processor by its idempotency key (the token's `transactionId`) and
/// moved to what the processor's ledger holds (no charge there means nothing was captured: `declined`).
///
/// ``settleAfter`` must be longer than the processor time limit, so that a payment still being charged by a live
/// process is never looked up too early. Several reconcilers (threads, processes, instances) may run at once:
/// the store settles a payment only from `pending` or `unknown`, so each is settled once.
///
/// A plan checkout's payment found charged starts its subscription (``PlanSubscriptions``), exactly as a payment
/// answered at once does: from the card details the checkout recorded before the charge and the kept method's
/// reference in the processor's charge.
public struct Reconciler: Sendable {
    /// One payment this pass settled. Encodes to the `POST /admin/v1/reconcile` answer's shape.
    public struct Settlement: Sendable, Equatable, Encodable {
        public var orderID: String
        public var transactionID: String
        public var from: OrderStatus
        public var to: OrderStatus
        public var processorReference: String?

        private enum CodingKeys: String, CodingKey {
            case orderID = "orderId"
            case transactionID = "transactionId"
            case from, to, processorReference
        }
    }

    public let store: any OrderStore
    public let processor: any PaymentProcessor
    /// How old an unsettled payment must be before it is looked up.
    public let settleAfter: Duration
    /// The time limit of each look-up.
    public let timeout: Duration
    public let logger: Logger
    public let clock: @Sendable () -> Date
    /// Starts the subscription of a plan checkout whose payment it settles as paid; `nil`: no plans.
    public let plans: PlanSubscriptions?

    public init(
        store: any OrderStore, processor: any PaymentProcessor, settleAfter: Duration, timeout: Duration,
        logger: Logger = Logger(label: "applepay.payments"), clock: @escaping @Sendable () -> Date = { Date() },
        plans: PlanSubscriptions? = nil
    ) {
        self.plans = plans
        self.store = store
        self.processor = processor
        self.settleAfter = settleAfter
        self.timeout = timeout
        self.logger = logger
        self.clock = clock
    }

    /// One pass: looks up every unsettled payment old enough and settles those the processor can answer for.
    /// Payments whose look-up fails stay as they are for the next pass.
    /// - Throws: ``OrderStoreError`` when the store cannot list them.
    /// - Parameters:
    ///   - age: overrides ``settleAfter`` for this pass (an operator who knows no payment is in flight may pass 0).
    ///   - limit: at most this many payments.
    public func reconcileOnce(olderThan age: Duration? = nil, limit: Int = 500) async throws(OrderStoreError)
        -> [Settlement]
    {
        let age = age ?? settleAfter
        let seconds = Double(age.components.seconds) + Double(age.components.attoseconds) / 1e18
        let candidates = try await store.unsettledOrders(
            updatedBefore: clock().addingTimeInterval(-seconds), limit: limit)
        var settled: [Settlement] = []
        let resolution = processor.unknownOutcomes
        for order in candidates {
            let key = order.payment.transactionID
            // Past the processor's key lifetime a look-up would guess: the payment waits for a person instead
            // (``needingAttention(limit:)``, the admin API's `GET /admin/v1/attention`).
            if Self.isPastKeyLifetime(order, resolution, now: clock()) { continue }
            // Only the processor's webhook can tell (Adyen): nothing to ask.
            if case .webhook = resolution { continue }
            let charge: ProcessorCharge?
            do {
                charge = try await lookUp(order)
            } catch {
                logger.warning(
                    "reconciliation look-up failed",
                    metadata: ["orderId": "\(order.id)", "transactionId": "\(key)", "code": "\(error.code.rawValue)"])
                continue
            }
            guard let final = try await store.settlePayment(orderID: order.id, charge: charge) else { continue }
            var fields: Logger.Metadata = [
                "orderId": "\(order.id)", "transactionId": "\(key)", "from": "\(order.status.rawValue)",
                "to": "\(final.status.rawValue)",
            ]
            fields["processorReference"] = charge.map { "\($0.reference)" }
            let late = order.status == .unknown && final.status == .paid
            logger.log(
                level: late ? .warning : .info, late ? "late approval settled" : "payment settled", metadata: fields)
            if final.status == .paid, let plans {
                do {
                    if let subscription = try await plans.startIfPlan(order: final, charge: charge) {
                        logger.info(
                            "subscription of a settled payment",
                            metadata: ["orderId": "\(order.id)", "subscriptionId": "\(subscription.id)"])
                    }
                } catch {
                    logger.error(
                        "settled a plan payment but could not start its subscription",
                        metadata: ["orderId": "\(order.id)", "code": "\(error.code.rawValue)"])
                }
            }
            settled.append(
                Settlement(
                    orderID: order.id, transactionID: key, from: order.status, to: final.status,
                    processorReference: charge?.reference))
        }
        try await settleRefunds(updatedBefore: clock().addingTimeInterval(-seconds), limit: limit)
        return settled
    }

    /// Refunds the processor took and did not decide by webhook (never sent, or lost): each is asked about
    /// (``PaymentProcessor/refundStatus(reference:charge:)``) and completed or failed; still pending, or a processor
    /// that only tells by webhook (Adyen), it waits.
    func settleRefunds(updatedBefore cutoff: Date, limit: Int) async throws(OrderStoreError) {
        for refund in try await store.undecidedRefunds(updatedBefore: cutoff, limit: limit) {
            guard let reference = refund.processorReference,
                let charge = try await store.order(id: refund.orderID)?.payment.processorReference
            else { continue }
            let processor = self.processor
            let status: RefundRecord.Status
            switch await PaymentProcessing.withTimeLimit(
                timeout,
                { () async throws(ProcessorError) in
                    try await processor.refundStatus(reference: reference, charge: charge)
                })
            {
            case .success(let answer): status = answer
            case .failure(let error):
                if error.code != .lookUpUnavailable {
                    logger.warning(
                        "refund look-up failed",
                        metadata: [
                            "orderId": "\(refund.orderID)", "refundId": "\(refund.id)",
                            "code": "\(error.code.rawValue)",
                        ])
                }
                continue
            }
            switch status {
            case .pending: continue
            case .succeeded: _ = try await store.completeRefund(id: refund.id, processorReference: reference)
            case .failed: _ = try await store.failRefund(id: refund.id, reason: "refundFailed")
            }
            logger.info(
                "refund settled by look-up",
                metadata: ["orderId": "\(refund.orderID)", "refundId": "\(refund.id)", "status": "\(status.rawValue)"])
        }
    }

    /// Runs a pass now and then every `interval` until the task is cancelled.
    public func run(every interval: Duration) async {
        while !Task.isCancelled {
            do {
                _ = try await reconcileOnce()
            } catch {
                logger.error("reconciliation pass failed", metadata: ["code": "\(error.code.rawValue)"])
            }
            try? await Task.sleep(for: interval)
        }
    }

    /// Unsettled payments older than the processor keeps an idempotency key: no look-up can tell what became of
    /// them any more, so the reconciler leaves them to a person (who asks the provider's dashboard).
    public func needingAttention(limit: Int = 500) async throws(OrderStoreError) -> [Order] {
        let resolution = processor.unknownOutcomes
        guard let lifetime = resolution.keyLifetime else { return [] }
        let now = clock()
        return try await store.unsettledOrders(
            updatedBefore: now.addingTimeInterval(-Self.seconds(lifetime)), limit: limit
        ).filter { Self.isPastKeyLifetime($0, resolution, now: now) }
    }

    static func isPastKeyLifetime(_ order: Order, _ resolution: UnknownOutcomeResolution, now: Date) -> Bool {
        guard let lifetime = resolution.keyLifetime else { return false }
        return order.createdAt.addingTimeInterval(seconds(lifetime)) < now
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private func lookUp(_ order: Order) async throws(ProcessorError) -> ProcessorCharge? {
        let processor = self.processor
        let key = order.payment.transactionID
        // A plan's payment kept its method (its checkout recorded the card before the charge): a connector that
        // sends its first request again sends it as it was (Stripe's names the Customer).
        var keeps = false
        if plans != nil, let checkout = try? await store.checkout(id: order.checkoutID) {
            keeps = checkout.planPaymentMethods?[key] != nil
        }
        let lookup = ChargeLookup(
            idempotencyKey: key,
            amount: Money(
                minorUnits: order.payment.amount, currency: Currency(code: order.payment.currencyCode) ?? .usDollar),
            processorReference: order.payment.processorReference, keepsPaymentMethod: keeps)
        return try await PaymentProcessing.withTimeLimit(timeout) { () async throws(ProcessorError) in
            try await processor.charge(lookingUp: lookup)
        }.get()
    }
}
