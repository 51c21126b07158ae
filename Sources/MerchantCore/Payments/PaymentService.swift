import ApplePay
import Foundation
import Foundations
import Logging
import Synchronization

/// Charges a token at most once per transaction id and records the order: the part of a payment after the token
/// has been verified, decrypted and matched to the checkout.
///
/// Steps: ``OrderStore/beginPayment(_:)`` (pending order + payment, keyed by transaction id) → if new, the
/// processor, bounded by ``timeout`` → ``OrderStore/completePayment(orderID:outcome:)``. An answer that was not
/// seen leaves the order `unknown`, never "nothing was charged"; the ``Reconciler`` settles it. A replay of a known
/// transaction id never reaches the processor: it returns the first outcome, waiting up to ``concurrentWait`` while
/// a simultaneous first attempt is still pending.
public struct PaymentService: Sendable {
    /// How a payment call ended.
    public enum Disposition: String, Sendable {
        /// This call charged (or tried to): the order is `paid`, `declined` or `unknown`.
        case processed
        /// The transaction id was seen before: the first attempt's order.
        case replayed
        /// A simultaneous attempt with this transaction id is still pending after ``concurrentWait``.
        case inProgress
        /// The checkout has another token's order that is paid, pending or unknown; nothing was charged.
        case checkoutLocked
        /// The processor answered but the store could not record it: the order stays `pending` until the
        /// reconciler settles it (the answer was logged with the order id, transaction id and reference).
        case unrecorded
    }

    /// The order and how this call got it.
    ///
    /// A value held in one allocation: a result passes up through every async frame of a payment, and an async
    /// frame keeps room for each value it may hold for as long as the payment waits on its processor (an order
    /// inline is 800 bytes; a result with its attempt and subscription, 1,400).
    public struct Result: Sendable {
        private final class Storage: Sendable {
            let order: Order
            let disposition: Disposition
            let attempt: ChargeAttempt?
            let subscription: Subscription?

            init(order: Order, disposition: Disposition, attempt: ChargeAttempt?, subscription: Subscription?) {
                self.order = order
                self.disposition = disposition
                self.attempt = attempt
                self.subscription = subscription
            }
        }

        private var storage: Storage

        public init(
            order: Order, disposition: Disposition, attempt: ChargeAttempt? = nil, subscription: Subscription? = nil
        ) {
            storage = Storage(order: order, disposition: disposition, attempt: attempt, subscription: subscription)
        }

        public var order: Order {
            get { storage.order }
            set {
                self = Result(order: newValue, disposition: disposition, attempt: attempt, subscription: subscription)
            }
        }
        public var disposition: Disposition {
            get { storage.disposition }
            set { self = Result(order: order, disposition: newValue, attempt: attempt, subscription: subscription) }
        }
        /// What the processor answered this call (nil for replays and locked checkouts).
        public var attempt: ChargeAttempt? {
            get { storage.attempt }
            set { self = Result(order: order, disposition: disposition, attempt: newValue, subscription: subscription) }
        }
        /// The subscription a paid plan checkout started.
        public var subscription: Subscription? {
            get { storage.subscription }
            set { self = Result(order: order, disposition: disposition, attempt: attempt, subscription: newValue) }
        }
    }

    public let store: any OrderStore
    public let processor: any PaymentProcessor
    /// Upper bound of one processor call (``ProcessorSettings/timeout``).
    public let timeout: Duration
    /// How long a replay waits for a pending first attempt before answering ``Disposition/inProgress``.
    public let concurrentWait: Duration
    public let logger: Logger
    /// The payment processor's share of the server for payments (docs/LIMITS.md): ``CheckoutPayments`` takes a
    /// place before anything is written, and refuses a new payment when none is free.
    public let share: Bulkhead
    /// The default share: 1,024 payments in flight (a socket and a deadline each, no thread), 1,024 waiting at most
    /// 2 s: a processor answering in 300 ms carries over 3,000 payments a second inside it.
    public static let defaultShare = Bulkhead.Limits(
        maximumInFlight: 1024, maximumQueued: 1024, maximumWait: .seconds(2))
    /// "Now", on the same clock as the store's `updatedAt` stamps.
    public let clock: @Sendable () -> Date
    private let completions = CompletionSignals()

    public init(
        store: any OrderStore, processor: any PaymentProcessor, timeout: Duration, concurrentWait: Duration? = nil,
        logger: Logger = Logger(label: "applepay.payments"), clock: @escaping @Sendable () -> Date = { Date() },
        share: Bulkhead.Limits = PaymentService.defaultShare
    ) {
        self.share = Bulkhead(name: "processor", limits: share)
        self.store = store
        self.processor = processor
        self.timeout = timeout
        self.concurrentWait = concurrentWait ?? timeout + .seconds(2)
        self.logger = logger
        self.clock = clock
    }

    /// Charges the order's total with the token unless its transaction id was seen before.
    /// - Parameters:
    ///   - order: the order to record (its `transactionID` is the idempotency key).
    ///   - token: the decrypted network token.
    ///   - rootFingerprint: the root the token chained to (a sandbox processor checks it).
    ///   - sealedTokenJSON: the same token as the device sealed it (the whole token object's JSON), for a processor
    ///     that decrypts it itself; read only if the processor asks for it.
    /// - Throws: ``OrderStoreError`` when the store fails before anything was charged.
    public func pay(
        _ order: NewOrder, token: NetworkToken, rootFingerprint: String? = nil, storePaymentMethod: Bool = false,
        sealedTokenJSON: Data? = nil
    )
        async throws(OrderStoreError)
        -> Result
    {
        // Each step in a function of its own: an async function's frame keeps room for everything it may hold, for
        // as long as it runs, and this one runs until the processor answers.
        switch try await begin(order) {
        case .answered(let result): return result
        case .charging(let pending):
            defer { completions.signal(pending.order.payment.transactionID) }
            let attempt = await charge(
                order, pending: pending, token: token, rootFingerprint: rootFingerprint,
                storePaymentMethod: storePaymentMethod, sealedTokenJSON: sealedTokenJSON)
            return await record(attempt, of: pending, transactionID: order.transactionID)
        }
    }

    /// What ``begin(_:)`` found: an answer already, or a new pending order to charge.
    private enum Beginning {
        case answered(Result)
        case charging(PendingOrder)
    }

    /// The pending order this call charges, in one allocation (see ``Result``).
    private final class PendingOrder: Sendable {
        let order: Order
        init(_ order: Order) { self.order = order }
    }

    /// Writes the pending order and payment, or finds the first attempt's order.
    @inline(never)
    private func begin(_ order: NewOrder) async throws(OrderStoreError) -> Beginning {
        switch try await store.beginPayment(order) {
        case .checkoutLocked(let existing):
            return .answered(Result(order: existing, disposition: .checkoutLocked))
        case .existing(let existing):
            return .answered(try await awaitCompletion(of: existing))
        case .started(let pending):
            return .charging(PendingOrder(pending))
        }
    }

    /// Asks the processor, within ``timeout``, and logs an outcome that is not a decision.
    @inline(never)
    private func charge(
        _ order: NewOrder, pending: PendingOrder, token: NetworkToken, rootFingerprint: String?,
        storePaymentMethod: Bool, sealedTokenJSON: Data?
    ) async -> ChargeAttempt {
        let currency = Currency(code: order.currencyCode) ?? .usDollar
        let request = ChargeRequest(
            token: token, amount: Money(minorUnits: order.totals.total, currency: currency),
            idempotencyKey: order.transactionID, rootFingerprint: rootFingerprint,
            storePaymentMethod: storePaymentMethod, sealedTokenJSON: sealedTokenJSON)
        let attempt = await PaymentProcessing.charge(request, with: processor, timeout: timeout)
        switch attempt {
        case .unknown(let error):
            logger.warning(
                "payment outcome unknown",
                metadata: [
                    "orderId": "\(pending.order.id)", "transactionId": "\(order.transactionID)",
                    "code": "\(error.code.rawValue)", "processor": "\(processor.name)",
                    "processorReference": "\(error.processorReference ?? "")",
                ])
        case .refused(let error):
            // The connector's message says what to change (never card data): for the merchant, in the log.
            logger.warning(
                "payment refused before it was sent to the processor: nothing charged",
                metadata: [
                    "orderId": "\(pending.order.id)", "transactionId": "\(order.transactionID)",
                    "code": "\(error.code.rawValue)", "processor": "\(processor.name)",
                    "reason": "\(error.message)",
                ])
        case .decided: break
        }
        return attempt
    }

    /// Records the processor's answer; a store that fails now leaves the order pending for the reconciler, and the
    /// answer in the log.
    @inline(never)
    private func record(_ attempt: ChargeAttempt, of pending: PendingOrder, transactionID: String) async -> Result {
        do {
            let final = try await store.completePayment(orderID: pending.order.id, outcome: attempt)
            return Result(order: final, disposition: .processed, attempt: attempt)
        } catch {
            var fields: Logger.Metadata = [
                "orderId": "\(pending.order.id)", "transactionId": "\(transactionID)",
                "code": "\(error.code.rawValue)",
            ]
            if case .decided(.approved(let reference)) = attempt { fields["processorReference"] = "\(reference)" }
            logger.error("processor answered but the store could not record it", metadata: fields)
            return Result(order: pending.order, disposition: .unrecorded, attempt: attempt)
        }
    }

    /// Waits for a simultaneous first attempt: woken when this process finishes it, and re-reading the store at
    /// most every quarter second for attempts made by another process. A pending order older than the processor's
    /// time limit has no live attempt behind it (its process died between charge and record): it is answered at
    /// once, as an unknown outcome the reconciler will settle, instead of making the customer wait.
    private func awaitCompletion(of existing: Order) async throws(OrderStoreError) -> Result {
        var current = existing
        let age = Duration.seconds(clock().timeIntervalSince(existing.updatedAt))
        let orphanedIn = timeout + .seconds(2) - age
        guard existing.status != .pending || orphanedIn > .zero else {
            return Result(order: current, disposition: .replayed)
        }
        let monotonic = ContinuousClock()
        let deadline = monotonic.now + min(concurrentWait, orphanedIn)
        while current.status == .pending {
            let now = monotonic.now
            guard now < deadline else {
                // Past the time limit nobody is charging it any more: an unknown outcome, not "in progress".
                let orphaned = Duration.seconds(clock().timeIntervalSince(current.updatedAt)) >= timeout + .seconds(2)
                return Result(order: current, disposition: orphaned ? .replayed : .inProgress)
            }
            await completions.wait(
                for: current.payment.transactionID, upTo: min(.milliseconds(250), deadline - now))
            guard !Task.isCancelled else { return Result(order: current, disposition: .inProgress) }
            guard let latest = try await store.order(id: current.id) else {
                throw OrderStoreError(.notFound, "order \(current.id) disappeared while waiting")
            }
            current = latest
        }
        return Result(order: current, disposition: .replayed)
    }
}

/// Wakes the replays waiting for a first attempt when that attempt ends in this process.
final class CompletionSignals: Sendable {
    private struct State {
        var waiters: [String: [UInt64: CheckedContinuation<Void, Never>]] = [:]
        var nextID: UInt64 = 0
    }
    private let state = Mutex(State())

    /// Returns when `key` is signalled or after `limit`, whichever comes first.
    func wait(for key: String, upTo limit: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let id = state.withLock { state -> UInt64 in
                state.nextID += 1
                state.waiters[key, default: [:]][state.nextID] = continuation
                return state.nextID
            }
            Task {
                try? await Task.sleep(for: limit)
                self.state.withLock { $0.waiters[key]?.removeValue(forKey: id) }?.resume()
            }
        }
    }

    /// Wakes every waiter on `key`.
    func signal(_ key: String) {
        let woken = state.withLock { $0.waiters.removeValue(forKey: key) ?? [:] }
        for continuation in woken.values { continuation.resume() }
    }
}
