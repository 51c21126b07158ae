import ApplePay
import Foundation
import Foundations
import MerchantCore
import Synchronization

/// A processor for tests and demos: approves everything except a few documented test triggers, charges each
/// idempotency key at most once, and never talks to a network.
///
/// Test outcomes (also in docs/SANDBOX-PROCESSOR.md). The device PAN's last four digits are checked first, then
/// the amount's last two digits in minor units (`amount % 100`; `12.51` USD, `151` JPY, `1.051` KWD):
///
/// | PAN ends in | or amount ends in | outcome |
/// |---|---|---|
/// | `0051` | `51` | declined, `insufficientFunds` |
/// | `0052` | `52` | declined, `lostCard` |
/// | `0053` | `53` | fails with 5xx `processorError` before committing (outcome unknown to the caller) |
/// | `0054` | `54` | no answer for ``hangDuration`` (then `processorError`): exercises the caller's timeout |
/// | anything else | | approved, reference `sbx_` + 20 hex digits |
///
/// ``testPAN(for:)`` gives a Luhn-valid device PAN for each row (the sandbox token minter wants one).
///
/// The same idempotency key always gets the first answer back without a second charge (``chargeCount`` counts
/// real charges). A hang honours task cancellation.
public final class SandboxProcessor: PaymentProcessor {
    /// The test triggers, as a value.
    public enum Trigger: String, Sendable, CaseIterable {
        case insufficientFunds = "51"
        case lostCard = "52"
        case processorError = "53"
        case timeout = "54"
    }

    public let name = "sandbox"
    /// How long a `timeout` trigger stays silent (default 60 s; tests set it short).
    public let hangDuration: Duration
    /// The sandbox root's fingerprint (``ChargeRequest/rootFingerprint``); when set, other tokens are declined
    /// with ``DeclineReason/notSandboxToken``.
    public let sandboxRootFingerprint: String?
    private let state = Mutex<State>(State())

    private struct State {
        var charges: [String: ProcessorCharge] = [:]
        var refunds: [String: ProcessorRefund] = [:]
        var approved = 0
        /// Kept payment methods by reference: the PAN's last four digits only (the sandbox's triggers need no
        /// more), never the PAN.
        var methods: [String: KeptMethod] = [:]
        /// Kept methods by the idempotency key that stored them.
        var methodKeys: [String: String] = [:]
        var declineNextStoredCharges: [DeclineReason] = []
    }

    private struct KeptMethod {
        var lastFour: String
        var network: String?
    }

    /// - Parameters:
    ///   - hangDuration: how long the `timeout` trigger waits before failing with `processorError`.
    ///   - sandboxRootFingerprint: accept only tokens that chained to this root.
    public init(hangDuration: Duration = .seconds(60), sandboxRootFingerprint: String? = nil) {
        self.hangDuration = hangDuration
        self.sandboxRootFingerprint = sandboxRootFingerprint
    }

    /// How many charges were approved (captured); a repeated idempotency key does not count again.
    public var chargeCount: Int { state.withLock { $0.approved } }

    /// Every charge in the ledger.
    public var charges: [ProcessorCharge] { state.withLock { Array($0.charges.values) } }

    /// A Luhn-valid 16-digit Visa device PAN that hits `trigger` (or is approved, for `nil`), for minting
    /// sandbox tokens: `4817499999010019` approved, `4817499999000051` insufficient funds, `4817499999090052`
    /// lost card, `4817499999080053` processor error, `4817499999070054` hang.
    public static func testPAN(for trigger: Trigger?) -> String {
        switch trigger {
        case nil: "4817499999010019"
        case .insufficientFunds?: "4817499999000051"
        case .lostCard?: "4817499999090052"
        case .processorError?: "4817499999080053"
        case .timeout?: "4817499999070054"
        }
    }

    /// The trigger a charge would hit, if any.
    public static func trigger(for request: ChargeRequest) -> Trigger? {
        let pan = request.token.primaryAccountNumber
        for trigger in Trigger.allCases where pan.hasSuffix("00" + trigger.rawValue) { return trigger }
        let lastTwo = Int(request.amount.minorUnits.magnitude % 100)
        return Trigger.allCases.first { Int($0.rawValue) == lastTwo }
    }

    /// Test hook: the next stored-method charges are declined with these reasons, in order (one each).
    public func declineNextStoredMethodCharges(_ reasons: [DeclineReason]) {
        state.withLock { $0.declineNextStoredCharges.append(contentsOf: reasons) }
    }

    public func storePaymentMethod(_ token: NetworkToken, idempotencyKey: String, rootFingerprint: String?)
        async throws(ProcessorError) -> String
    {
        if let expected = sandboxRootFingerprint, rootFingerprint != expected {
            throw ProcessorError(.invalidRequest, "not a token of the sandbox's root")
        }
        return state.withLock { state in
            if let earlier = state.methodKeys[idempotencyKey] { return earlier }
            let reference = "pm_" + randomHex(bytes: 10)
            state.methods[reference] = KeptMethod(lastFour: token.lastFour, network: token.network)
            state.methodKeys[idempotencyKey] = reference
            return reference
        }
    }

    public func charge(storedMethod request: StoredMethodChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        try state.withLock { state throws(ProcessorError) -> ChargeOutcome in
            if let earlier = state.charges[request.idempotencyKey] { return earlier.outcome }
            guard let method = state.methods[request.paymentMethodReference] else {
                throw ProcessorError(.paymentMethodNotFound, "no kept payment method \(request.paymentMethodReference)")
            }
            var decline: DeclineReason?
            if !state.declineNextStoredCharges.isEmpty {
                decline = state.declineNextStoredCharges.removeFirst()
            } else if method.lastFour == "0051" || request.amount.minorUnits % 100 == 51 {
                decline = .insufficientFunds
            } else if method.lastFour == "0052" || request.amount.minorUnits % 100 == 52 {
                decline = .lostCard
            }
            let charge = ProcessorCharge(
                reference: "sbx_" + randomHex(bytes: 10), idempotencyKey: request.idempotencyKey,
                amount: request.amount, status: decline == nil ? .approved : .declined, declineReason: decline,
                paymentMethodReference: request.paymentMethodReference)
            state.charges[request.idempotencyKey] = charge
            if decline == nil { state.approved += 1 }
            return charge.outcome
        }
    }

    public func charge(_ request: ChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        if let earlier = state.withLock({ $0.charges[request.idempotencyKey] }) { return earlier.outcome }
        var decline: DeclineReason?
        if let expected = sandboxRootFingerprint, request.rootFingerprint != expected {
            decline = .notSandboxToken
        } else {
            switch Self.trigger(for: request) {
            case .insufficientFunds?: decline = .insufficientFunds
            case .lostCard?: decline = .lostCard
            case .processorError?:
                throw ProcessorError(.serverError, "sandbox processor error before committing (test trigger)")
            case .timeout?:
                do { try await Task.sleep(for: hangDuration) } catch {}
                throw ProcessorError(.serverError, "sandbox answered after hanging (test trigger)")
            case nil: break
            }
        }
        var charge = ProcessorCharge(
            reference: "sbx_" + randomHex(bytes: 10), idempotencyKey: request.idempotencyKey, amount: request.amount,
            status: decline == nil ? .approved : .declined, declineReason: decline)
        return state.withLock { state in
            if let earlier = state.charges[request.idempotencyKey] { return earlier.outcome }
            if decline == nil, request.storePaymentMethod {
                let reference = "pm_" + randomHex(bytes: 10)
                state.methods[reference] = KeptMethod(lastFour: request.token.lastFour, network: request.token.network)
                charge.paymentMethodReference = reference
            }
            state.charges[request.idempotencyKey] = charge
            if decline == nil { state.approved += 1 }
            return charge.outcome
        }
    }

    public func charge(idempotencyKey: String) async throws(ProcessorError) -> ProcessorCharge? {
        state.withLock { $0.charges[idempotencyKey] }
    }

    public func void(reference: String) async throws(ProcessorError) -> ProcessorCharge {
        try state.withLock { state throws(ProcessorError) in
            guard var charge = state.charges.values.first(where: { $0.reference == reference }) else {
                throw ProcessorError(.chargeNotFound, "no charge \(reference)")
            }
            if charge.status == .voided { return charge }
            guard charge.status == .approved, charge.refunded.minorUnits == 0 else {
                throw ProcessorError(.notVoidable, "charge \(reference) is \(charge.status.rawValue)")
            }
            charge.status = .voided
            state.charges[charge.idempotencyKey] = charge
            return charge
        }
    }

    public func refund(reference: String, amount: Money, idempotencyKey: String) async throws(ProcessorError)
        -> ProcessorRefund
    {
        try state.withLock { state throws(ProcessorError) in
            if let earlier = state.refunds[idempotencyKey] {
                guard earlier.amount == amount, earlier.charge.reference == reference else {
                    throw ProcessorError(.idempotencyConflict, "refund key \(idempotencyKey) was used differently")
                }
                return earlier
            }
            guard var charge = state.charges.values.first(where: { $0.reference == reference }) else {
                throw ProcessorError(.chargeNotFound, "no charge \(reference)")
            }
            guard charge.status == .approved || charge.status == .partiallyRefunded else {
                throw ProcessorError(.notVoidable, "charge \(reference) is \(charge.status.rawValue)")
            }
            let left = charge.amount.minorUnits - charge.refunded.minorUnits
            guard amount.currency == charge.amount.currency, amount.minorUnits > 0, amount.minorUnits <= left else {
                throw ProcessorError(
                    .refundExceedsCharge, "refund of \(amount) exceeds the \(left) minor units left on \(reference)")
            }
            charge.refunded.minorUnits += amount.minorUnits
            charge.status = charge.refunded == charge.amount ? .refunded : .partiallyRefunded
            state.charges[charge.idempotencyKey] = charge
            let refund = ProcessorRefund(
                reference: "sbr_" + randomHex(bytes: 10), idempotencyKey: idempotencyKey, amount: amount,
                charge: charge)
            state.refunds[idempotencyKey] = refund
            return refund
        }
    }
}
