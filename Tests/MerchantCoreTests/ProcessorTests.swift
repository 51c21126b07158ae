import ApplePay
import Foundation
import MerchantCore
import MerchantSandbox
import MerchantTestSupport
import TestSupport
import Testing

/// A processor that refuses every charge before sending anything (a token it cannot send as its provider requires).
struct RefusingProcessor: ChargeOnlyProcessor {
    let name = "refusing"

    func charge(_ request: ChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        throw ProcessorError(.eciRequired, "no ECI: nothing was sent").beforeSending()
    }
}

/// A processor that answers `answer` after `delay`, ignoring task cancellation (a badly behaved client library).
struct StubbornProcessor: ChargeOnlyProcessor {
    let name = "stubborn"
    let delay: Double
    let answer: ChargeOutcome

    func charge(_ request: ChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { continuation.resume() }
        }
        return answer
    }
}

@Suite("Payment processors")
struct ProcessorTests {
    /// `PaymentProcessing.charge` of `request` with `processor` and `timeout`, timed while no test holds the
    /// cooperative pool: the attempt and how long it took.
    static func timedCharge(
        _ request: ChargeRequest, with processor: any PaymentProcessor, timeout: Duration
    ) async -> (ChargeAttempt, Duration) {
        await CooperativePool.measuring {
            let start = ContinuousClock.now
            let attempt = await PaymentProcessing.charge(request, with: processor, timeout: timeout)
            return (attempt, ContinuousClock.now - start)
        }
    }

    static let outcomes: [(pan: String, amount: Int64, expected: ChargeAttempt?)] = [
        ("4817499999010019", 4829, nil),  // approved
        ("4817499999000051", 4829, .decided(.declined(.insufficientFunds))),
        ("4817499999090052", 4829, .decided(.declined(.lostCard))),
        ("4817499999080053", 4829, .unknown(ProcessorError(.serverError, ""))),
        ("4817499999010019", 1251, .decided(.declined(.insufficientFunds))),
        ("4817499999010019", 1252, .decided(.declined(.lostCard))),
        ("4817499999010019", 1253, .unknown(ProcessorError(.serverError, ""))),
        ("4817499999010019", 151, .decided(.declined(.insufficientFunds))),  // e.g. ¥151
    ]

    @Test("the sandbox's documented test outcomes, by PAN suffix or amount", arguments: outcomes.indices)
    func sandboxOutcomes(index: Int) async throws {
        let (pan, amount, expected) = Self.outcomes[index]
        let sandbox = SandboxProcessor()
        let outcome = await PaymentProcessing.charge(
            ChargeRequest(token: testToken(pan: pan), amount: usd(amount), idempotencyKey: "k\(index)"),
            with: sandbox, timeout: .seconds(30))
        switch (outcome, expected) {
        case (.decided(.approved(let reference)), nil):
            #expect(reference.hasPrefix("sbx_") && reference.count == 24)
            #expect(sandbox.chargeCount == 1)
        case (.decided(.declined(let reason)), .decided(.declined(let expectedReason))?):
            #expect(reason == expectedReason)
            #expect(sandbox.chargeCount == 0)
        case (.unknown(let error), .unknown(let expectedError)?):
            #expect(error.code == expectedError.code)
            #expect(sandbox.chargeCount == 0)
        default:
            Issue.record(
                "PAN …\(pan.suffix(4)), amount \(amount): got \(outcome), expected \(String(describing: expected))")
        }
    }

    @Test("the same idempotency key charges once and answers the same")
    func sandboxIdempotency() async throws {
        let sandbox = SandboxProcessor()
        let request = ChargeRequest(token: testToken(), amount: usd(1000), idempotencyKey: "abc")
        let first = try await sandbox.charge(request)
        let second = try await sandbox.charge(request)
        #expect(first == second)
        #expect(sandbox.chargeCount == 1)
        _ = try await sandbox.charge(
            ChargeRequest(token: testToken(), amount: usd(1000), idempotencyKey: "def"))
        #expect(sandbox.chargeCount == 2)
    }

    @Test("a hanging processor is cut off at the time limit with processorTimeout")
    func timeout() async {
        let sandbox = SandboxProcessor(hangDuration: .seconds(30))
        let (outcome, elapsed) = await Self.timedCharge(
            ChargeRequest(token: testToken(pan: "4817499999070054"), amount: usd(100), idempotencyKey: "t"),
            with: sandbox, timeout: .milliseconds(150))
        guard case .unknown(let error) = outcome else {
            Issue.record("expected a timeout, got \(outcome)")
            return
        }
        #expect(error.code == .timeout)
        #expect(elapsed >= .milliseconds(140) && elapsed < .seconds(2), "took \(elapsed)")
        #expect(sandbox.chargeCount == 0)
    }

    @Test("the time limit holds even when the processor ignores cancellation")
    func stubbornTimeout() async {
        let (outcome, elapsed) = await Self.timedCharge(
            ChargeRequest(token: testToken(), amount: usd(100), idempotencyKey: "s"),
            with: StubbornProcessor(delay: 1.5, answer: .approved(reference: "late")), timeout: .milliseconds(100))
        #expect(elapsed < .seconds(1))
        #expect(outcome == .unknown(ProcessorError(.timeout, "")))
    }

    @Test("a fast answer comes back at once; a thrown error leaves the outcome unknown")
    func fastAndThrowing() async {
        let (fast, elapsed) = await Self.timedCharge(
            ChargeRequest(token: testToken(), amount: usd(100), idempotencyKey: "f"), with: SandboxProcessor(),
            timeout: .seconds(10))
        #expect(elapsed < .seconds(1))
        guard case .decided(.approved) = fast else {
            Issue.record("expected approval, got \(fast)")
            return
        }
        let thrown = await PaymentProcessing.charge(
            ChargeRequest(token: testToken(), amount: usd(100), idempotencyKey: "x"),
            with: ThrowingProcessor(), timeout: .seconds(10))
        guard case .unknown(let error) = thrown else {
            Issue.record("expected an unknown outcome, got \(thrown)")
            return
        }
        #expect(error.code == .unreachable)
        #expect(error.outcomeIsUnknown)
        // A connector that refused before sending anything: known, nothing charged.
        let refused = await PaymentProcessing.charge(
            ChargeRequest(token: testToken(), amount: usd(100), idempotencyKey: "r"),
            with: RefusingProcessor(), timeout: .seconds(10))
        guard case .refused(let refusal) = refused else {
            Issue.record("expected a refusal before sending, got \(refused)")
            return
        }
        #expect(refusal.code == .eciRequired && refusal.nothingWasSent && !refusal.outcomeIsUnknown)
    }

    @Test("the documented test PANs hit their triggers")
    func testPANs() {
        for trigger in [nil] + SandboxProcessor.Trigger.allCases.map(Optional.some) {
            let request = ChargeRequest(
                token: testToken(pan: SandboxProcessor.testPAN(for: trigger)), amount: usd(1000),
                idempotencyKey: "k")
            #expect(SandboxProcessor.trigger(for: request) == trigger)
        }
    }

    @Test("tokens and charge requests never print the PAN or the cryptogram")
    func redactedDescriptions() {
        let token = testToken()
        let request = ChargeRequest(token: token, amount: usd(100), idempotencyKey: "k")
        for text in [token.description, token.debugDescription, "\(request)", String(reflecting: token)] {
            #expect(!text.contains("4817499999010019"))
            #expect(!text.contains("CRYPTOGRAM"))
            #expect(!text.contains("301231"))
        }
        #expect(token.description.contains("0019"))
        #expect(token.lastFour == "0019")
    }
}
