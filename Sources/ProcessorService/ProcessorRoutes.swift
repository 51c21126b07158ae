import ApplePay
import Foundation
import Foundations
import HTTPCore
import ProcessorAPI
import Synchronization

/// The routes of docs/PROCESSOR-PROTOCOL.md over a ``ProcessorLedger``, with the sandbox's test triggers and the
/// armed faults (docs/SANDBOX-PROCESSOR.md).
final class ProcessorRoutes: Sendable {
    let ledger: ProcessorLedger
    let rootFingerprint: String?
    let hangDuration: Duration
    let faults = Mutex<ArmedFault?>(nil)
    /// Set by shutdown: delays and hangs end at once.
    let stopping = Mutex(false)

    struct ArmedFault: Sendable {
        var kind: FaultBody.Kind
        var remaining: Int
        var delay: Duration
    }

    /// The test triggers: a PAN ending in `00` + the raw value, or an amount whose last two minor-unit digits are it.
    enum Trigger: String, CaseIterable {
        case insufficientFunds = "51"
        case lostCard = "52"
        case processorError = "53"
        case hang = "54"
    }

    init(ledger: ProcessorLedger, rootFingerprint: String?, hangDuration: Duration) {
        self.ledger = ledger
        self.rootFingerprint = rootFingerprint
        self.hangDuration = hangDuration
    }

    /// The protocol's routes. The router holds this object (not the other way round).
    func makeRouter() -> Router {
        var router = Router()
        router.add(.post, "/v1/charges") { request, _ in
            await self.answerAsync { () async throws(HTTPError) in try await self.createCharge(request) }
        }
        router.add(.get, "/v1/charges") { _, _ in
            await self.answerAsync { () async throws(HTTPError) in
                try Self.json(ChargeListEnvelope(charges: try await self.ledger.charges()))
            }
        }
        router.add(.get, "/v1/charges/by-idempotency-key/{key}") { _, context in
            await self.answerAsync { () async throws(HTTPError) in
                let key = try context.parameter("key")
                guard let charge = try await self.ledger.charge(idempotencyKey: key) else {
                    throw HTTPError(
                        status: 404, code: "chargeNotFound", message: "No charge with that idempotency key.")
                }
                return try Self.json(ChargeEnvelope(charge: charge))
            }
        }
        router.add(.post, "/v1/charges/{reference}/void") { _, context in
            await self.answerAsync { () async throws(HTTPError) in
                let reference = try context.parameter("reference")
                return try Self.json(ChargeEnvelope(charge: try await self.ledger.void(reference: reference)))
            }
        }
        router.add(.post, "/v1/charges/{reference}/refunds") { request, context in
            await self.answerAsync { () async throws(HTTPError) in
                try await self.createRefund(request, reference: try context.parameter("reference"))
            }
        }
        router.add(.post, "/v1/payment-methods") { request, _ in
            await self.answerAsync { () async throws(HTTPError) in try await self.keepPaymentMethod(request) }
        }
        router.add(.post, "/v1/payment-methods/{reference}/charges") { request, context in
            await self.answerAsync { () async throws(HTTPError) in
                try await self.chargeKeptMethod(request, reference: try context.parameter("reference"))
            }
        }
        router.add(.post, "/v1/faults") { request, _ in
            self.answer { () throws(HTTPError) in
                let fault: FaultBody = try Self.decode(request)
                try self.arm(fault)
                return try Self.json(fault)
            }
        }
        router.add(.delete, "/v1/faults") { _, _ in
            self.disarm()
            return HTTPResponse(status: 204)
        }
        return router
    }

    // MARK: - Faults

    /// Arms `fault` for the next `count` charge requests, replacing any armed one.
    /// - Throws: `400 invalidRequest` for a count below 1 or a negative or absurd delay.
    func arm(_ fault: FaultBody) throws(HTTPError) {
        let count = fault.count ?? 1
        let seconds = fault.seconds ?? 10
        guard count >= 1, seconds >= 0, seconds <= 3600 else {
            throw HTTPError(
                status: 400, code: "invalidRequest", message: "count must be at least 1 and seconds within 0...3600.")
        }
        faults.withLock {
            $0 = ArmedFault(kind: fault.kind, remaining: count, delay: .milliseconds(Int64(seconds * 1000)))
        }
    }

    func disarm() { faults.withLock { $0 = nil } }

    private func takeFault() -> ArmedFault? {
        faults.withLock { armed in
            guard var fault = armed else { return nil }
            fault.remaining -= 1
            armed = fault.remaining > 0 ? fault : nil
            return fault
        }
    }

    /// Sleeps `duration`, or less when the service is stopping.
    private func pause(_ duration: Duration) async {
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: duration)
        while clock.now < end, !stopping.withLock({ $0 }) {
            try? await Task.sleep(for: min(.milliseconds(50), end - clock.now))
        }
    }

    // MARK: - Charges

    private func createCharge(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        let body: CreateChargeBody = try Self.decode(request)
        try Self.validate(body)
        let fault = takeFault()
        if let earlier = try await ledger.charge(idempotencyKey: body.idempotencyKey) {
            try ProcessorLedger.checkSameRequest(earlier, amount: body.amount, currencyCode: body.currencyCode)
            return try await deliver(earlier, fault: fault)
        }
        var declineCode: String?
        if let rootFingerprint, body.rootFingerprint?.lowercased() != rootFingerprint {
            declineCode = "notSandboxToken"
        } else {
            switch Self.trigger(for: body) {
            case .insufficientFunds?: declineCode = "insufficientFunds"
            case .lostCard?: declineCode = "lostCard"
            case .processorError?:
                throw HTTPError(
                    status: 500, code: "processorError", message: "Processor error before committing (test trigger).")
            case .hang?:
                await pause(hangDuration)
                throw HTTPError(
                    status: 500, code: "processorError",
                    message: "Answered after hanging, nothing committed (test trigger).")
            case nil: break
            }
        }
        if fault?.kind == .failBeforeCommit {
            throw HTTPError(
                status: 500, code: "processorError", message: "Failed before committing (injected fault).")
        }
        let method = body.paymentMethod
        let lastFour = method.lastFour
        let keep =
            body.storePaymentMethod == true
            ? PaymentMethodResource(
                reference: Self.newReference("ppm_"), idempotencyKey: "charge:" + body.idempotencyKey,
                network: method.network,
                lastFour: lastFour.count == 4 && lastFour.allSatisfy(\.isASCIIDigit) ? lastFour : nil,
                createdAt: Self.timestamp()) : nil
        let charge = ChargeResource(
            reference: Self.newReference("prc_"), idempotencyKey: body.idempotencyKey, amount: body.amount,
            currencyCode: body.currencyCode, status: declineCode == nil ? .approved : .declined,
            declineCode: declineCode, network: method.network,
            lastFour: lastFour.count == 4 && lastFour.allSatisfy(\.isASCIIDigit) ? lastFour : nil,
            createdAt: Self.timestamp())
        let recorded = try await ledger.record(charge, rootFingerprint: body.rootFingerprint, keep: keep)
        return try await deliver(recorded, fault: fault)
    }

    /// `POST /v1/payment-methods`: keeps a method without charging it (network and last four digits only).
    private func keepPaymentMethod(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        let body: StorePaymentMethodBody = try Self.decode(request)
        try Self.validate(
            CreateChargeBody(
                idempotencyKey: body.idempotencyKey, amount: 1, currencyCode: "USD", paymentMethod: body.paymentMethod,
                rootFingerprint: body.rootFingerprint))
        if let rootFingerprint, body.rootFingerprint?.lowercased() != rootFingerprint {
            throw HTTPError(status: 422, code: "notSandboxToken", message: "The token is not from this sandbox.")
        }
        let lastFour = body.paymentMethod.lastFour
        let method = PaymentMethodResource(
            reference: Self.newReference("ppm_"), idempotencyKey: body.idempotencyKey,
            network: body.paymentMethod.network,
            lastFour: lastFour.count == 4 && lastFour.allSatisfy(\.isASCIIDigit) ? lastFour : nil,
            createdAt: Self.timestamp())
        return try Self.json(
            PaymentMethodEnvelope(
                paymentMethod: try await ledger.keepPaymentMethod(method, rootFingerprint: body.rootFingerprint)))
    }

    /// `POST /v1/payment-methods/{reference}/charges`: a merchant-initiated charge, idempotent by key. The test
    /// triggers apply to the kept method's last four digits and to the amount, as for charges; the faults too.
    private func chargeKeptMethod(_ request: HTTPRequest, reference: String) async throws(HTTPError) -> HTTPResponse {
        let body: StoredMethodChargeBody = try Self.decode(request)
        guard ProcessorKey.isValid(body.idempotencyKey), body.amount > 0, Currency.isKnown(body.currencyCode) else {
            throw HTTPError(
                status: 400, code: "invalidRequest",
                message: "A charge needs an idempotency key, an amount above zero and an ISO 4217 currencyCode.")
        }
        let fault = takeFault()
        if let earlier = try await ledger.charge(idempotencyKey: body.idempotencyKey) {
            try ProcessorLedger.checkSameRequest(earlier, amount: body.amount, currencyCode: body.currencyCode)
            return try await deliver(earlier, fault: fault)
        }
        guard let method = try await ledger.paymentMethod(reference: reference) else {
            throw HTTPError(status: 404, code: "paymentMethodNotFound", message: "No kept payment method \(reference).")
        }
        let lastFour = method.lastFour ?? ""
        var declineCode: String?
        let trigger =
            Trigger.allCases.first { lastFour == "00" + $0.rawValue }
            ?? Trigger.allCases.first { Int($0.rawValue) == Int(body.amount.magnitude % 100) }
        switch trigger {
        case .insufficientFunds?: declineCode = "insufficientFunds"
        case .lostCard?: declineCode = "lostCard"
        case .processorError?, .hang?:
            throw HTTPError(
                status: 500, code: "processorError", message: "Processor error before committing (test trigger).")
        case nil: break
        }
        if fault?.kind == .failBeforeCommit {
            throw HTTPError(status: 500, code: "processorError", message: "Failed before committing (injected fault).")
        }
        let charge = ChargeResource(
            reference: Self.newReference("prc_"), idempotencyKey: body.idempotencyKey, amount: body.amount,
            currencyCode: body.currencyCode, status: declineCode == nil ? .approved : .declined,
            declineCode: declineCode, network: method.network, lastFour: method.lastFour, createdAt: Self.timestamp(),
            paymentMethodReference: reference)
        return try await deliver(try await ledger.record(charge, rootFingerprint: nil), fault: fault)
    }

    /// Answers a committed charge, late or not at all when a fault says so.
    private func deliver(_ charge: ChargeResource, fault: ArmedFault?) async throws(HTTPError) -> HTTPResponse {
        switch fault?.kind {
        case .delay?: await pause(fault?.delay ?? .zero)
        case .dropAfterCommit?: return .closeConnection
        case .failBeforeCommit?, nil: break
        }
        return try Self.json(ChargeEnvelope(charge: charge))
    }

    private func createRefund(_ request: HTTPRequest, reference: String) async throws(HTTPError) -> HTTPResponse {
        let body: CreateRefundBody = try Self.decode(request)
        guard body.amount > 0, ProcessorKey.isValid(body.idempotencyKey) else {
            throw HTTPError(
                status: 400, code: "invalidRequest",
                message:
                    "A refund needs an amount above zero and an idempotency key of 1 to 255 of A-Z a-z 0-9 . _ ~ : -.")
        }
        return try Self.json(
            await ledger.refund(
                reference: reference, amount: body.amount,
                idempotencyKey: body.idempotencyKey, newReference: Self.newReference("prf_"),
                createdAt: Self.timestamp()))
    }

    static func trigger(for body: CreateChargeBody) -> Trigger? {
        let pan = body.paymentMethod.primaryAccountNumber
        for trigger in Trigger.allCases where pan.hasSuffix("00" + trigger.rawValue) { return trigger }
        let lastTwo = Int(body.amount.magnitude % 100)
        return Trigger.allCases.first { Int($0.rawValue) == lastTwo }
    }

    static func validate(_ body: CreateChargeBody) throws(HTTPError) {
        func invalid(_ message: String) -> HTTPError {
            HTTPError(status: 400, code: "invalidRequest", message: message)
        }
        guard ProcessorKey.isValid(body.idempotencyKey) else {
            throw invalid("idempotencyKey must be 1 to 255 of A-Z a-z 0-9 . _ ~ : -.")
        }
        guard body.amount > 0 else { throw invalid("amount must be a whole number of minor units above zero.") }
        guard Currency.isKnown(body.currencyCode) else { throw invalid("currencyCode is not an ISO 4217 code.") }
        let method = body.paymentMethod
        guard (12...19).contains(method.primaryAccountNumber.count),
            method.primaryAccountNumber.allSatisfy(\.isASCIIDigit)
        else { throw invalid("paymentMethod.primaryAccountNumber must be 12 to 19 digits.") }
        guard method.expirationDate.count == 6, method.expirationDate.allSatisfy(\.isASCIIDigit) else {
            throw invalid("paymentMethod.expirationDate must be YYMMDD.")
        }
        switch (method.cryptogram, method.emvData) {
        case (let cryptogram?, nil):
            guard Data(base64Encoded: cryptogram) != nil else {
                throw invalid("paymentMethod.cryptogram is not base64.")
            }
        case (nil, let emv?):
            guard Data(base64Encoded: emv) != nil else { throw invalid("paymentMethod.emvData is not base64.") }
        default:
            throw invalid("paymentMethod needs either cryptogram (with eciIndicator) or emvData, not both.")
        }
    }

    // MARK: - Support

    /// Runs a route, turning a thrown `HTTPError` into its JSON answer.
    private func answer(_ body: () throws(HTTPError) -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return error.response }
    }

    private func answerAsync(_ body: () async throws(HTTPError) -> HTTPResponse) async -> HTTPResponse {
        do { return try await body() } catch { return error.response }
    }

    /// Decodes a JSON body; the error names only the coding path, never a value (the body holds card data).
    static func decode<T: Decodable>(_ request: HTTPRequest) throws(HTTPError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: request.body)
        } catch let error as DecodingError {
            let path: [any CodingKey]
            switch error {
            case .keyNotFound(let key, let context): path = context.codingPath + [key]
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
                path = context.codingPath
            @unknown default: path = []
            }
            let field = path.map(\.stringValue).joined(separator: ".")
            throw HTTPError(
                status: 400, code: "invalidRequest",
                message: field.isEmpty
                    ? "The body is not the expected JSON." : "The body's \(field) is missing or invalid.")
        } catch {
            throw HTTPError(status: 400, code: "invalidRequest", message: "The body is not the expected JSON.")
        }
    }

    static func json<T: Encodable>(_ value: T) throws(HTTPError) -> HTTPResponse {
        do { return try .json(value) } catch { throw HTTPError.internalError("The answer could not be encoded.") }
    }

    static func newReference(_ prefix: String) -> String { prefix + randomHex(bytes: 10) }

    /// Now in ISO 8601 with milliseconds, from a format style (an ISO8601DateFormatter is an ICU object built per
    /// call: this runs for every charge).
    static func timestamp() -> String {
        Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
