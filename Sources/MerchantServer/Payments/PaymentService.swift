import ApplePay
import Foundation

/// Charges a token at most once per transaction id and records the order: the part of `POST
/// /v1/checkouts/{id}/payment` after the token has been verified, decrypted and matched to the checkout.
///
/// Steps: ``OrderStore/beginPayment(_:)`` (pending order + payment, keyed by transaction id) → if new, the
/// processor, bounded by ``timeout`` → ``OrderStore/completePayment(orderID:outcome:)``. A replay of a known
/// transaction id never reaches the processor: it returns the first outcome, waiting up to ``concurrentWait``
/// while a simultaneous first attempt is still pending.
public struct PaymentService: Sendable {
    /// How a payment call ended.
    public enum Disposition: String, Sendable {
        /// This call charged (or tried to): the order is `paid` or `failed`.
        case processed
        /// The transaction id was seen before: the first attempt's order, unchanged.
        case replayed
        /// A simultaneous attempt with this transaction id is still pending after ``concurrentWait``.
        case inProgress
        /// The checkout was already paid with another token; nothing was charged.
        case checkoutAlreadyPaid
    }

    /// The order and how this call got it.
    public struct Result: Sendable {
        public var order: Order
        public var disposition: Disposition
    }

    public let store: any OrderStore
    public let processor: any PaymentProcessor
    /// Upper bound of one processor call (``ProcessorSettings/timeout``).
    public let timeout: Duration
    /// How long a replay waits for a pending first attempt before answering ``Disposition/inProgress``.
    public let concurrentWait: Duration

    public init(
        store: any OrderStore, processor: any PaymentProcessor, timeout: Duration,
        concurrentWait: Duration? = nil
    ) {
        self.store = store
        self.processor = processor
        self.timeout = timeout
        self.concurrentWait = concurrentWait ?? timeout + .seconds(2)
    }

    /// Charges the order's total with the token unless its transaction id was seen before.
    /// - Parameters:
    ///   - order: the order to record (its `transactionID` is the idempotency key).
    ///   - token: the decrypted network token.
    /// - Returns: the final order (`paid`/`failed`), or the pending one for ``Disposition/inProgress``.
    /// - Throws: ``OrderStoreError`` when the store fails; if that happens after the processor approved, the
    ///   order stays `pending` with the approval lost to the store (logged by the caller, reconciled by hand).
    public func pay(_ order: NewOrder, token: NetworkToken, rootFingerprint: String? = nil) async throws(OrderStoreError)
        -> Result
    {
        switch try await store.beginPayment(order) {
        case .checkoutAlreadyPaid(let existing):
            return Result(order: existing, disposition: .checkoutAlreadyPaid)
        case .existing(let existing):
            return try await awaitCompletion(of: existing)
        case .started(let pending):
            let currency = Currency(code: order.currencyCode) ?? Currency(code: "USD")!
            let request = ChargeRequest(
                token: token, amount: Money(minorUnits: order.totals.total, currency: currency),
                idempotencyKey: order.transactionID, rootFingerprint: rootFingerprint)
            let outcome = await PaymentProcessing.charge(request, with: processor, timeout: timeout)
            let final = try await store.completePayment(orderID: pending.id, outcome: outcome)
            return Result(order: final, disposition: .processed)
        }
    }

    private func awaitCompletion(of existing: Order) async throws(OrderStoreError) -> Result {
        var current = existing
        let clock = ContinuousClock()
        let deadline = clock.now + concurrentWait
        while current.status == .pending {
            guard clock.now < deadline else { return Result(order: current, disposition: .inProgress) }
            do { try await Task.sleep(for: .milliseconds(20)) } catch {
                return Result(order: current, disposition: .inProgress)
            }
            guard let latest = try await store.order(id: current.id) else {
                throw OrderStoreError(.notFound, "order \(current.id) disappeared while waiting")
            }
            current = latest
        }
        return Result(order: current, disposition: .replayed)
    }
}
