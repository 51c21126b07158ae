import Foundation
import MerchantServer
import TestSupport
import Testing

/// A device token with this PAN (16 digits), a 3-D Secure cryptogram and ECI 07.
func testToken(pan: String = "4817499999010019", network: String = "Visa") -> NetworkToken {
    NetworkToken(
        primaryAccountNumber: pan, expirationDate: "301231",
        authentication: .threeDSecure(cryptogram: Data("CRYPTOGRAM-SECRET-BYTES".utf8), eciIndicator: "07"),
        network: network)
}

/// A processor that answers `answer` after `delay`, ignoring task cancellation (a badly behaved client library).
struct StubbornProcessor: PaymentProcessor {
    let name = "stubborn"
    let delay: Double
    let answer: ChargeOutcome

    func charge(_ request: ChargeRequest) async throws -> ChargeOutcome {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { continuation.resume() }
        }
        return answer
    }
}

/// A processor that throws.
struct ThrowingProcessor: PaymentProcessor {
    struct Broken: Error {}
    let name = "throwing"
    func charge(_ request: ChargeRequest) async throws -> ChargeOutcome { throw Broken() }
}

@Suite("Payment processors")
struct ProcessorTests {
    static let outcomes: [(pan: String, amount: Int64, expected: ChargeOutcome?)] = [
        ("4817499999010019", 4829, nil),  // approved
        ("4817499999000051", 4829, .declined(.insufficientFunds)),
        ("4817499999090052", 4829, .declined(.lostCard)),
        ("4817499999080053", 4829, .error(code: "processorError", message: "")),
        ("4817499999010019", 1251, .declined(.insufficientFunds)),
        ("4817499999010019", 1252, .declined(.lostCard)),
        ("4817499999010019", 1253, .error(code: "processorError", message: "")),
        ("4817499999010019", 151, .declined(.insufficientFunds)),  // e.g. ¥151
    ]

    @Test("the sandbox's documented test outcomes, by PAN suffix or amount", arguments: outcomes.indices)
    func sandboxOutcomes(index: Int) async throws {
        let (pan, amount, expected) = Self.outcomes[index]
        let sandbox = SandboxProcessor()
        let outcome = try await sandbox.charge(
            ChargeRequest(token: testToken(pan: pan), amount: amount, currencyCode: "USD", idempotencyKey: "k\(index)"))
        switch (outcome, expected) {
        case (.approved(let reference), nil):
            #expect(reference.hasPrefix("sbx_") && reference.count == 24)
            #expect(sandbox.chargeCount == 1)
        case (.declined(let reason), .declined(let expectedReason)?):
            #expect(reason == expectedReason)
            #expect(sandbox.chargeCount == 0)
        case (.error(let code, _), .error(let expectedCode, _)?):
            #expect(code == expectedCode)
            #expect(sandbox.chargeCount == 0)
        default:
            Issue.record(
                "PAN …\(pan.suffix(4)), amount \(amount): got \(outcome), expected \(String(describing: expected))")
        }
    }

    @Test("the same idempotency key charges once and answers the same")
    func sandboxIdempotency() async throws {
        let sandbox = SandboxProcessor()
        let request = ChargeRequest(token: testToken(), amount: 1000, currencyCode: "USD", idempotencyKey: "abc")
        let first = try await sandbox.charge(request)
        let second = try await sandbox.charge(request)
        #expect(first == second)
        #expect(sandbox.chargeCount == 1)
        _ = try await sandbox.charge(
            ChargeRequest(token: testToken(), amount: 1000, currencyCode: "USD", idempotencyKey: "def"))
        #expect(sandbox.chargeCount == 2)
    }

    @Test("a hanging processor is cut off at the time limit with processorTimeout")
    func timeout() async {
        let sandbox = SandboxProcessor(hangDuration: .seconds(30))
        let (outcome, elapsed) = await CooperativePool.measuring {
            let start = ContinuousClock.now
            let outcome = await PaymentProcessing.charge(
                ChargeRequest(
                    token: testToken(pan: "4817499999070054"), amount: 100, currencyCode: "USD", idempotencyKey: "t"),
                with: sandbox, timeout: .milliseconds(150))
            return (outcome, ContinuousClock.now - start)
        }
        guard case .error(let code, _) = outcome else {
            Issue.record("expected a timeout, got \(outcome)")
            return
        }
        #expect(code == "processorTimeout")
        #expect(elapsed >= .milliseconds(140) && elapsed < .seconds(2), "took \(elapsed)")
        #expect(sandbox.chargeCount == 0)
    }

    @Test("the time limit holds even when the processor ignores cancellation")
    func stubbornTimeout() async {
        let (outcome, elapsed) = await CooperativePool.measuring {
            let start = ContinuousClock.now
            let outcome = await PaymentProcessing.charge(
                ChargeRequest(token: testToken(), amount: 100, currencyCode: "USD", idempotencyKey: "s"),
                with: StubbornProcessor(delay: 1.5, answer: .approved(reference: "late")), timeout: .milliseconds(100))
            return (outcome, ContinuousClock.now - start)
        }
        #expect(elapsed < .seconds(1))
        #expect(outcome == .error(code: "processorTimeout", message: ""))
    }

    @Test("a fast answer comes back at once; a thrown error becomes processorError")
    func fastAndThrowing() async {
        let (fast, elapsed) = await CooperativePool.measuring {
            let start = ContinuousClock.now
            let fast = await PaymentProcessing.charge(
                ChargeRequest(token: testToken(), amount: 100, currencyCode: "USD", idempotencyKey: "f"),
                with: SandboxProcessor(), timeout: .seconds(10))
            return (fast, ContinuousClock.now - start)
        }
        #expect(elapsed < .seconds(1))
        guard case .approved = fast else {
            Issue.record("expected approval, got \(fast)")
            return
        }
        let thrown = await PaymentProcessing.charge(
            ChargeRequest(token: testToken(), amount: 100, currencyCode: "USD", idempotencyKey: "x"),
            with: ThrowingProcessor(), timeout: .seconds(10))
        guard case .error(let code, let message) = thrown else {
            Issue.record("expected an error, got \(thrown)")
            return
        }
        #expect(code == "processorError")
        #expect(message.contains("throwing"))
    }

    @Test("the documented test PANs hit their triggers")
    func testPANs() {
        for trigger in [nil] + SandboxProcessor.Trigger.allCases.map(Optional.some) {
            let request = ChargeRequest(
                token: testToken(pan: SandboxProcessor.testPAN(for: trigger)), amount: 1000, currencyCode: "USD",
                idempotencyKey: "k")
            #expect(SandboxProcessor.trigger(for: request) == trigger)
        }
    }

    @Test("tokens and charge requests never print the PAN or the cryptogram")
    func redactedDescriptions() {
        let token = testToken()
        let request = ChargeRequest(token: token, amount: 100, currencyCode: "USD", idempotencyKey: "k")
        for text in [token.description, token.debugDescription, "\(request)", String(reflecting: token)] {
            #expect(!text.contains("4817499999010019"))
            #expect(!text.contains("CRYPTOGRAM"))
            #expect(!text.contains("301231"))
        }
        #expect(token.description.contains("0019"))
        #expect(token.lastFour == "0019")
    }
}
