import Foundation
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
/// | `0053` | `53` | error, `processorError` |
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
    private let state = Mutex<State>(State())

    private struct State {
        var answers: [String: ChargeOutcome] = [:]
        var charges = 0
    }

    /// - Parameter hangDuration: how long the `timeout` trigger waits before answering `processorError`.
    public init(hangDuration: Duration = .seconds(60)) {
        self.hangDuration = hangDuration
    }

    /// How many charges were approved (captured); a repeated idempotency key does not count again.
    public var chargeCount: Int { state.withLock { $0.charges } }

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
        let lastTwo = Int(request.amount.magnitude % 100)
        return Trigger.allCases.first { Int($0.rawValue) == lastTwo }
    }

    public func charge(_ request: ChargeRequest) async throws -> ChargeOutcome {
        if let earlier = state.withLock({ $0.answers[request.idempotencyKey] }) { return earlier }
        let outcome: ChargeOutcome
        switch Self.trigger(for: request) {
        case .insufficientFunds?: outcome = .declined(.insufficientFunds)
        case .lostCard?: outcome = .declined(.lostCard)
        case .processorError?:
            outcome = .error(code: "processorError", message: "sandbox processor error (test trigger)")
        case .timeout?:
            try await Task.sleep(for: hangDuration)
            outcome = .error(code: "processorError", message: "sandbox answered after hanging (test trigger)")
        case nil: outcome = .approved(reference: "sbx_" + randomHex(bytes: 10))
        }
        return state.withLock { state in
            if let earlier = state.answers[request.idempotencyKey] { return earlier }
            state.answers[request.idempotencyKey] = outcome
            if case .approved = outcome { state.charges += 1 }
            return outcome
        }
    }
}
