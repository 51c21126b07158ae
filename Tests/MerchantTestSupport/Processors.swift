// Payment processors for tests: charge-only stand-ins, the processor service on loopback, an undecided provider.

import ApplePay
import Foundation
import Foundations
import HTTPClient
import MerchantCore
import MerchantSandbox
import ProcessorAPI
import ProcessorService
import Processors
import Synchronization
import TestSupport

/// A test processor that only charges: it keeps no charges to look up, void or refund.
public protocol ChargeOnlyProcessor: PaymentProcessor {}

extension ChargeOnlyProcessor {
    public func charge(idempotencyKey: String) async throws(ProcessorError) -> ProcessorCharge? { nil }
    public func void(reference: String) async throws(ProcessorError) -> ProcessorCharge {
        throw ProcessorError(.chargeNotFound, reference)
    }
    public func refund(reference: String, amount: Money, idempotencyKey: String) async throws(ProcessorError)
        -> ProcessorRefund
    { throw ProcessorError(.chargeNotFound, reference) }
}

/// A processor that throws.
public struct ThrowingProcessor: ChargeOnlyProcessor {
    public let name = "throwing"

    public init() {}
    public func charge(_ request: ChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        throw ProcessorError(.unreachable, "throwing: connection refused")
    }
}

/// A merchant server whose processor is the real sandbox processor service on loopback, with its SQLite ledger.
public struct ProcessorHarness: Sendable {
    public let service: ProcessorServer
    public let folder: TemporaryDirectory
    public let client = HTTPClient(configuration: .init(timeout: .seconds(20)))

    public static func start() throws -> ProcessorHarness {
        let folder = try TemporaryDirectory(prefix: "processor-ledger")
        let service = try ProcessorServer.start(ledgerPath: folder.path("ledger.sqlite"))
        return ProcessorHarness(service: service, folder: folder)
    }

    /// A service with `fault` armed.
    public static func start(armed fault: FaultBody) async throws -> ProcessorHarness {
        let harness = try start()
        do {
            try harness.service.arm(fault)
            return harness
        } catch {
            await harness.stop()
            throw error
        }
    }

    /// Runs `body` with a new service (`fault` armed, when given), then stops the service, also when `body` throws.
    public static func with<T>(armed fault: FaultBody? = nil, _ body: (ProcessorHarness) async throws -> T) async throws
        -> T
    {
        let harness = if let fault { try await start(armed: fault) } else { try start() }
        return try await withCleanup {
            try await body(harness)
        } cleanup: {
            await harness.stop()
        }
    }

    /// The merchant server's client for this service (time limit `timeout`).
    public func processor(timeout: Duration) -> HTTPPaymentProcessor {
        HTTPPaymentProcessor(baseURL: service.url, timeout: timeout)
    }

    /// The ledger as the service lists it.
    public func charges() async throws -> [ChargeResource] {
        let response = try await client.send(HTTPClientRequest(url: service.url.absoluteString + "/v1/charges"))
        return try JSONDecoder().decode(ChargeListEnvelope.self, from: response.body).charges
    }

    /// Approved (or later refunded/voided) charges for `key`.
    public func captured(_ key: String) async throws -> [ChargeResource] {
        try await charges().filter { $0.idempotencyKey == key && $0.status != .declined }
    }

    /// Waits until the ledger holds a charge for `key` (the service commits before a delayed or dropped answer).
    public func waitForCharge(_ key: String) async throws {
        for _ in 0..<200 {
            if try await !charges().filter({ $0.idempotencyKey == key }).isEmpty { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw HarnessError("the ledger never got a charge for \(key)")
    }

    public func stop() async {
        await service.shutdown()
        folder.remove()
    }
}

/// The processor service on loopback with a ledger in a temporary folder, and a client for it.
public struct LoopbackProcessor: Sendable {
    public let folder: TemporaryDirectory
    public let server: ProcessorServer
    /// A client with a generous limit, for everything but the timeout tests.
    public let client: HTTPPaymentProcessor

    /// A new service, with `fault` armed when there is one.
    public init(armed fault: FaultBody? = nil) throws {
        folder = try TemporaryDirectory(prefix: "loopback-processor")
        server = try ProcessorServer.start(ledgerPath: folder.path("ledger.sqlite"))
        client = HTTPPaymentProcessor(baseURL: server.url, timeout: .seconds(30))
        if let fault { try server.arm(fault) }
    }

    /// Takes back any fault armed, stops the service and removes its ledger.
    public func stop() async {
        server.disarm()
        await server.shutdown()
        folder.remove()
    }
}

/// A processor whose stored-method answers do not decide: each charge is made at an inner sandbox processor (so the
/// ledger holds it), and then its answer is lost (a time-out) or is `processing`; look-ups answer `processing` until
/// the test decides. It records every charge request and every look-up, and says how it settles lost answers
/// (`unknownOutcomes`) as the test asks: Stripe's and Checkout.com's look-up for 24 hours, Adyen's webhook.
public final class UndecidedProcessor: PaymentProcessor {
    /// What a stored-method charge answers.
    public enum Answer: Sendable {
        /// The inner processor's answer, as it is.
        case decided
        /// Charged at the inner processor; the answer is lost (`processorTimeout`).
        case lost
        /// Charged at the inner processor; answered `processing` (decided later), and looked up as such.
        case processing
    }

    struct State {
        var answer: Answer
        /// Look-ups answer `processing` (the provider has not decided) while true.
        var undecided = false
        /// Look-ups throw `lookUpUnavailable` (Checkout.com after a restart) while true.
        var lookUpUnavailable = false
        /// Voids are refused (Stripe's captured PaymentIntent) and refunds taken but decided later (Stripe `pending`,
        /// Adyen `received`, Checkout.com `202`) while true.
        var refundsOnlyDecidedLater = false
        var chargeRequests: [String] = []
        var lookUps: [String] = []
    }

    public let inner = SandboxProcessor()
    public let unknownOutcomes: UnknownOutcomeResolution
    private let state: Mutex<State>

    public init(answer: Answer, resolution: UnknownOutcomeResolution = .lookUp(keyLifetime: .seconds(24 * 3600))) {
        state = Mutex(State(answer: answer, undecided: answer == .processing))
        unknownOutcomes = resolution
    }

    public var name: String { "undecided" }

    /// Every `charge(storedMethod:)` request's idempotency key, in order.
    public var chargeRequests: [String] { state.withLock { $0.chargeRequests } }
    /// Every look-up's idempotency key, in order.
    public var lookUps: [String] { state.withLock { $0.lookUps } }

    /// How the next charges answer.
    public func answer(_ answer: Answer) { state.withLock { $0.answer = answer } }
    /// Whether look-ups can tell at all.
    public func lookUps(available: Bool) { state.withLock { $0.lookUpUnavailable = !available } }
    /// Whether the provider has decided: look-ups then answer the ledger's charge.
    public func decide(_ decided: Bool = true) { state.withLock { $0.undecided = !decided } }
    /// Whether voids are refused and refunds answered pending.
    public func refundsOnlyDecidedLater(_ later: Bool) { state.withLock { $0.refundsOnlyDecidedLater = later } }

    public func charge(storedMethod request: StoredMethodChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        let answer = state.withLock { state in
            state.chargeRequests.append(request.idempotencyKey)
            return state.answer
        }
        let outcome = try await inner.charge(storedMethod: request)
        switch answer {
        case .decided: return outcome
        case .lost: throw ProcessorError(.timeout, "the answer was lost")
        case .processing:
            // Taken, decided later (approved or declined at the ledger already): its reference only.
            let charge = try await inner.charge(idempotencyKey: request.idempotencyKey)
            return .processing(reference: charge?.reference ?? "")
        }
    }

    public func charge(lookingUp payment: ChargeLookup) async throws(ProcessorError) -> ProcessorCharge? {
        try await charge(idempotencyKey: payment.idempotencyKey)
    }

    public func charge(idempotencyKey: String) async throws(ProcessorError) -> ProcessorCharge? {
        let (undecided, unavailable) = state.withLock { state in
            state.lookUps.append(idempotencyKey)
            return (state.undecided, state.lookUpUnavailable)
        }
        if unavailable { throw ProcessorError(.lookUpUnavailable, "the request is no longer in memory") }
        guard var charge = try await inner.charge(idempotencyKey: idempotencyKey) else { return nil }
        if undecided { charge.status = .processing }
        return charge
    }

    public func charge(_ request: ChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        try await inner.charge(request)
    }
    public func void(reference: String) async throws(ProcessorError) -> ProcessorCharge {
        if state.withLock({ $0.refundsOnlyDecidedLater }) {
            throw ProcessorError(.notVoidable, "captured: refund it")
        }
        return try await inner.void(reference: reference)
    }
    public func refund(reference: String, amount: Money, idempotencyKey: String) async throws(ProcessorError)
        -> ProcessorRefund
    {
        var refund = try await inner.refund(reference: reference, amount: amount, idempotencyKey: idempotencyKey)
        refund.isPending = state.withLock { $0.refundsOnlyDecidedLater }
        return refund
    }
    public func storePaymentMethod(_ token: NetworkToken, idempotencyKey: String, rootFingerprint: String?)
        async throws(ProcessorError) -> String
    {
        try await inner.storePaymentMethod(token, idempotencyKey: idempotencyKey, rootFingerprint: rootFingerprint)
    }
}
