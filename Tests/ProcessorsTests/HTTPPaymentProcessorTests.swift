import ApplePay
import Foundation
import Foundations
import HTTPCore
import HTTPServer
import MerchantCore
import MerchantTestSupport
import ProcessorAPI
import ProcessorService
import Processors
import TestSupport
import Testing

/// A charge of `request` through `processor` fails with `code` and an outcome that is unknown: the error.
@discardableResult
private func expectUnknownOutcome(
    of request: ChargeRequest, from processor: HTTPPaymentProcessor, code: ProcessorError.Code,
    sourceLocation: SourceLocation = #_sourceLocation
) async -> ProcessorError? {
    let error = await #expect(throws: ProcessorError.self, sourceLocation: sourceLocation) {
        try await processor.charge(request)
    }
    #expect(error?.code == code, sourceLocation: sourceLocation)
    #expect(error?.outcomeIsUnknown == true, sourceLocation: sourceLocation)
    return error
}

private func request(key: String, amount: Int64 = 1250, pan: String = "4817499999010019") -> ChargeRequest {
    ChargeRequest(
        token: NetworkToken(
            primaryAccountNumber: pan, expirationDate: "301231",
            authentication: .threeDSecure(cryptogram: Data("cryptogram".utf8), eciIndicator: "7"), network: "Visa"),
        amount: Money(minorUnits: amount, currency: .usDollar), idempotencyKey: key)
}

@Suite("HTTPPaymentProcessor against the processor service")
struct HTTPPaymentProcessorTests {
    @Test("charges, replays, declines, looks up, voids and refunds with the definite error codes")
    func lifecycle() async throws {
        let service = try LoopbackProcessor()
        let processor = service.client
        let outcome = try await processor.charge(request(key: "t-1"))
        guard case .approved(let reference) = outcome else {
            Issue.record("expected an approval, got \(outcome)")
            await service.stop()
            return
        }
        #expect(try await processor.charge(request(key: "t-1")) == outcome)
        await #expect(throws: ProcessorError(.idempotencyConflict, "")) {
            try await processor.charge(request(key: "t-1", amount: 999))
        }
        #expect(try await processor.charge(request(key: "t-2", amount: 1251)) == .declined(.insufficientFunds))
        #expect(
            try await processor.charge(request(key: "t-3", pan: "4817499999090052")) == .declined(.lostCard))

        let found = try await processor.charge(idempotencyKey: "t-1")
        #expect(found?.reference == reference)
        #expect(found?.amount == Money(minorUnits: 1250, currency: .usDollar))
        #expect(try await processor.charge(idempotencyKey: "never-sent") == nil)

        let refund = try await processor.refund(
            reference: reference, amount: Money(minorUnits: 250, currency: .usDollar), idempotencyKey: "rf-1")
        #expect(refund.charge.status == .partiallyRefunded)
        #expect(refund.charge.refunded.minorUnits == 250)
        let replayed = try await processor.refund(
            reference: reference, amount: Money(minorUnits: 250, currency: .usDollar), idempotencyKey: "rf-1")
        #expect(replayed == refund)
        await #expect(throws: ProcessorError(.refundExceedsCharge, "")) {
            try await processor.refund(
                reference: reference, amount: Money(minorUnits: 1001, currency: .usDollar), idempotencyKey: "rf-2")
        }
        await #expect(throws: ProcessorError(.notVoidable, "")) { try await processor.void(reference: reference) }
        await #expect(throws: ProcessorError(.chargeNotFound, "")) { try await processor.void(reference: "prc_none") }

        guard case .approved(let other) = try await processor.charge(request(key: "t-4")) else {
            Issue.record("expected an approval")
            await service.stop()
            return
        }
        #expect(try await processor.void(reference: other).status == .voided)
        await service.stop()
    }

    @Test("a 500 before committing is an unknown outcome, and the look-up finds nothing")
    func failBeforeCommit() async throws {
        let service = try LoopbackProcessor(armed: FaultBody(kind: .failBeforeCommit))
        await expectUnknownOutcome(of: request(key: "f-fail"), from: service.client, code: .serverError)
        #expect(try await service.client.charge(idempotencyKey: "f-fail") == nil)
        // The 53 trigger behaves the same way.
        let triggered = await #expect(throws: ProcessorError.self) {
            try await service.client.charge(request(key: "f-53", amount: 1253))
        }
        #expect(triggered?.code == .serverError)
        #expect(try await service.client.charge(idempotencyKey: "f-53") == nil)
        await service.stop()
    }

    @Test("a connection dropped after committing is unknown (unreachable), and the look-up finds the approval")
    func dropAfterCommit() async throws {
        let service = try LoopbackProcessor(armed: FaultBody(kind: .dropAfterCommit))
        await expectUnknownOutcome(of: request(key: "f-drop"), from: service.client, code: .unreachable)
        let found = try await service.client.charge(idempotencyKey: "f-drop")
        #expect(found?.status == .approved)
        // A retry with the same key is the same charge, answered this time.
        #expect(try await service.client.charge(request(key: "f-drop")) == found?.outcome)
        await service.stop()
    }

    @Test("a late answer is a timeout (unknown) at the client's limit, and the look-up finds the approval")
    func delayPastTheLimit() async throws {
        let service = try LoopbackProcessor(armed: FaultBody(kind: .delay, count: 1, seconds: 20))
        let impatient = HTTPPaymentProcessor(baseURL: service.server.url, timeout: .seconds(2))
        await expectUnknownOutcome(of: request(key: "f-delay"), from: impatient, code: .timeout)
        let found = try await service.client.charge(idempotencyKey: "f-delay")
        #expect(found?.status == .approved)
        await service.stop()
    }

    @Test("cancelling the calling task ends the call early with an unknown outcome")
    func cancellation() async throws {
        try await onTestThreads {
            let service = try LoopbackProcessor()
            try service.server.arm(FaultBody(kind: .delay, count: 1, seconds: 20))
            let processor = service.client
            let clock = ContinuousClock()
            let start = clock.now
            let task = Task(executorPreference: TestThreads.shared) { () async -> ProcessorError? in
                do throws(ProcessorError) {
                    _ = try await processor.charge(request(key: "f-cancel"))
                    return nil
                } catch {
                    return error
                }
            }
            try await Task.sleep(for: .milliseconds(300))
            task.cancel()
            let error = await task.value
            #expect(error?.code == .timeout)
            #expect(clock.now - start < .seconds(15))
            await service.stop()
        }
    }

    @Test("no service listening is unreachable (unknown); the error never shows the PAN")
    func unreachable() async throws {
        let folder = try TemporaryDirectory(prefix: "http-processor-gone")
        defer { folder.remove() }
        let server = try ProcessorServer.start(ledgerPath: folder.path("ledger.sqlite"))
        let url = server.url
        await server.shutdown()
        let processor = HTTPPaymentProcessor(baseURL: url, timeout: .seconds(10))
        let error = await expectUnknownOutcome(of: request(key: "gone"), from: processor, code: .unreachable)
        #expect(error.map { !$0.description.contains("4817499999010019") } == true)
        let attempt = await PaymentProcessing.charge(request(key: "gone"), with: processor, timeout: .seconds(20))
        #expect(attempt == .unknown(ProcessorError(.unreachable, "")))
    }
}

/// Answers every request with a bare 404: no body, as a wrong URL or a proxy's error page may.
private struct BareNotFound: Responder {
    func respond(to request: HTTPRequest) async -> HTTPResponse { HTTPResponse(status: 404) }
}

@Suite("HTTPPaymentProcessor against a server that is not a processor")
struct HTTPPaymentProcessorBareAnswerTests {
    @Test("a bare 404 is neither a decline nor 'no such charge': a look-up answered so settles nothing")
    func bareNotFound() async throws {
        let server = try HTTPServer.start(configuration: .init(port: 0), responder: BareNotFound())
        let processor = HTTPPaymentProcessor(
            baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, timeout: .seconds(10))
        let lookUp = await #expect(throws: ProcessorError.self) {
            try await processor.charge(idempotencyKey: "bare-404")
        }
        #expect(lookUp?.code == .invalidRequest)
        let attempt = await PaymentProcessing.charge(request(key: "bare-404"), with: processor, timeout: .seconds(10))
        guard case .unknown = attempt else {
            Issue.record("a bare 404 was taken as an outcome: \(attempt)")
            await server.shutdown()
            return
        }
        await server.shutdown()
    }
}
