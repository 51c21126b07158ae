import ApplePay
import Foundation
import Foundations
import Logging
import Synchronization

/// Refunds and voids of paid orders, as attempts: a refund is reserved in the store under its idempotency key before
/// it is sent (the key travels to the provider), and stays `pending` until the provider decides; a void is sent only
/// when no refund of the order is pending, and recorded once the provider voided (a void it decides later waits for
/// its webhook). Refusals come back as values; the admin API turns them into answers.
public struct OrderReversals: Sendable {
    public let store: any OrderStore
    public let processor: any PaymentProcessor
    /// Upper bound of one processor call.
    public let timeout: Duration
    public let logger: Logger
    private let inFlight = ReversalsInFlight()

    public init(store: any OrderStore, processor: any PaymentProcessor, timeout: Duration, logger: Logger) {
        self.store = store
        self.processor = processor
        self.timeout = timeout
        self.logger = logger
    }

    /// Why a refund or a void is not made.
    public enum Refusal: Sendable, Equatable {
        /// A void of the order is on its way to the processor (a refund), or a refund is (a void).
        case voidPending, refundPending
        /// The key was used for another order or amount.
        case keyReused
        /// The order is not paid (or has no captured payment).
        case notRefundable(OrderStatus)
        /// More than is left to refund (`left` minor units, pending refunds counted).
        case exceedsRemaining(left: Int64)
        /// The refund under this key failed at the processor: a new key is needed.
        case failedBefore
        /// Only a paid order without refunds can be voided.
        case notVoidable(OrderStatus)
        /// The processor refused it (a definite answer: nothing was done there).
        case processorRefused(ProcessorError)
    }

    /// How a refund ended.
    public enum RefundResult: Sendable, Equatable {
        /// Given back; the order after it.
        case succeeded(RefundRecord, Order)
        /// Taken by the provider and decided later: pending, its amount reserved, until its webhook or a look-up.
        case pending(RefundRecord, Order)
        /// No answer seen: pending; the same request again completes it.
        case outcomeUnknown(RefundRecord)
        case refused(Refusal)
    }

    /// Refunds `amount` minor units of `order` under `idempotencyKey` (the same key again answers the same refund).
    /// - Throws: ``OrderStoreError`` when the store fails.
    public func refund(_ order: Order, amount: Int64, idempotencyKey: String) async throws(OrderStoreError)
        -> RefundResult
    {
        guard inFlight.begin(.refund, orderID: order.id) else { return .refused(.voidPending) }
        defer { inFlight.end(.refund, orderID: order.id) }
        let refund: RefundRecord
        switch try await store.beginRefund(orderID: order.id, amount: amount, idempotencyKey: idempotencyKey) {
        case .keyReused: return .refused(.keyReused)
        case .notRefundable(let current): return .refused(.notRefundable(current.status))
        case .exceedsRemaining(let left, _): return .refused(.exceedsRemaining(left: left))
        case .existing(let existing, let current) where existing.succeeded: return .succeeded(existing, current)
        // Sent again, the provider would replay its first answer; the refund failed, and stays failed.
        case .existing(let existing, _) where existing.status == .failed: return .refused(.failedBefore)
        case .existing(let existing, _), .started(let existing, _): refund = existing
        }
        guard let reference = order.payment.processorReference else { return .refused(.notRefundable(order.status)) }
        let currency = Currency(code: order.currencyCode) ?? .usDollar
        let processor = self.processor
        let answer = await PaymentProcessing.withTimeLimit(timeout) { () async throws(ProcessorError) in
            try await processor.refund(
                reference: reference, amount: Money(minorUnits: refund.amount, currency: currency),
                idempotencyKey: refund.idempotencyKey)
        }
        switch answer {
        case .success(let processed) where processed.isPending:
            let final = try await store.acknowledgeRefund(id: refund.id, processorReference: processed.reference)
            logger.info(
                "refund pending at the provider",
                metadata: [
                    "orderId": "\(order.id)", "refundId": "\(refund.id)",
                    "processorReference": "\(processed.reference)",
                ])
            return .pending(refund, final)
        case .success(let processed):
            let final = try await store.completeRefund(id: refund.id, processorReference: processed.reference)
            logger.info(
                "refund succeeded",
                metadata: [
                    "orderId": "\(order.id)", "refundId": "\(refund.id)",
                    "processorReference": "\(processed.reference)",
                ])
            var done = refund
            done.status = .succeeded
            done.processorReference = processed.reference
            return .succeeded(done, final)
        case .failure(let error) where error.outcomeIsUnknown:
            logger.warning(
                "refund outcome unknown",
                metadata: ["orderId": "\(order.id)", "refundId": "\(refund.id)", "code": "\(error.code.rawValue)"])
            return .outcomeUnknown(refund)
        case .failure(let error):
            try await store.cancelRefund(id: refund.id)
            return .refused(.processorRefused(error))
        }
    }

    /// How a void ended.
    public enum VoidResult: Sendable, Equatable {
        case voided(Order)
        /// Taken by the provider and decided later (an Adyen reversal): the order stays paid until its webhook.
        case pending(Order)
        /// No answer seen: the same request again completes it.
        case outcomeUnknown
        case refused(Refusal)
    }

    /// Voids a paid order that has no refunds.
    /// - Throws: ``OrderStoreError`` when the store fails.
    public func void(_ order: Order) async throws(OrderStoreError) -> VoidResult {
        if order.status == .voided { return .voided(order) }
        guard order.status == .paid, order.refunded == 0, let reference = order.payment.processorReference else {
            return .refused(.notVoidable(order.status))
        }
        // A refund on its way, or one whose outcome is not known: the void is not sent.
        guard inFlight.begin(.void, orderID: order.id) else { return .refused(.refundPending) }
        defer { inFlight.end(.void, orderID: order.id) }
        if try await store.refunds(orderID: order.id).contains(where: { $0.status == .pending }) {
            return .refused(.refundPending)
        }
        let processor = self.processor
        let answer = await PaymentProcessing.withTimeLimit(timeout) { () async throws(ProcessorError) in
            try await processor.void(reference: reference)
        }
        switch answer {
        case .success(let charge) where charge.status == .processing:
            logger.info(
                "void pending at the processor",
                metadata: ["orderId": "\(order.id)", "processorReference": "\(reference)"])
            return .pending(order)
        case .success:
            let final = try await store.recordVoid(orderID: order.id)
            logger.info("payment voided", metadata: ["orderId": "\(order.id)", "processorReference": "\(reference)"])
            return .voided(final)
        case .failure(let error) where error.outcomeIsUnknown:
            return .outcomeUnknown
        case .failure(let error):
            return .refused(.processorRefused(error))
        }
    }
}

/// Refunds and voids on their way to the processor, by order id, in this process: a refund never starts while a
/// void of the same order is under way, nor a void while a refund is (several refunds may run at once; the store
/// keeps them within the amount).
final class ReversalsInFlight: Sendable {
    enum Kind: Sendable { case refund, void }
    private let running = Mutex<[String: (kind: Kind, count: Int)]>([:])

    /// Starts an operation; false when one of the other kind is running for the order (or another void).
    func begin(_ kind: Kind, orderID: String) -> Bool {
        running.withLock { running in
            if let current = running[orderID] {
                guard current.kind == kind, kind == .refund else { return false }
                running[orderID] = (kind, current.count + 1)
            } else {
                running[orderID] = (kind, 1)
            }
            return true
        }
    }

    func end(_ kind: Kind, orderID: String) {
        running.withLock { running in
            guard let current = running[orderID], current.kind == kind else { return }
            running[orderID] = current.count > 1 ? (kind, current.count - 1) : nil
        }
    }
}
