import ApplePay
import Foundation
import Foundations
import HTTPClient
import MerchantCore
import ProcessorAPI

/// A ``PaymentProcessor`` that speaks docs/PROCESSOR-PROTOCOL.md to a processor service over HTTP(S).
///
/// Every call is bounded by ``timeout``. Connection failures, dropped connections, time limits, 5xx answers and
/// unreadable answers throw a ``ProcessorError`` whose ``ProcessorError/outcomeIsUnknown`` is true (`unreachable`,
/// `timeout`, `serverError`, `invalidAnswer`): look the charge up with ``charge(idempotencyKey:)`` before
/// concluding anything. 4xx answers throw the definite codes (`chargeNotFound`, `idempotencyConflict`,
/// `notVoidable`, `refundExceedsCharge`, others as sent, `processorInvalidRequest` for malformed requests).
///
/// Cancelling the calling task aborts the transfer (its connection is closed) and ends the call with
/// `processorTimeout` (outcome unknown: the request may have reached the processor). Error messages carry paths,
/// statuses and codes: never a PAN or cryptogram.
public struct HTTPPaymentProcessor: PaymentProcessor {
    public let name = "http"
    /// The service's base URL, e.g. `http://127.0.0.1:9000`.
    public let baseURL: URL
    /// The longest one call may take.
    public let timeout: Duration
    private let client: HTTPClient
    /// Sent as `Authorization: Bearer …` on every request when set (secret: never printed).
    private let bearerToken: String?

    /// - Parameters:
    ///   - baseURL: the service's base URL (`http` or `https`), without a trailing `/v1`.
    ///   - timeout: the time limit of each call (connecting included).
    ///   - clientIdentity: a TLS client certificate, when the service asks for one.
    ///   - trustedRootsPEM: roots to trust instead of the system's, for a private service.
    ///   - proxy: the proxy to use; `nil` goes direct whatever the environment's proxy variables say.
    ///   - bearerToken: sent as `Authorization: Bearer` on every request, when the service asks for one.
    public init(
        baseURL: URL, timeout: Duration = .seconds(10), clientIdentity: ClientIdentity? = nil,
        trustedRootsPEM: Data? = nil, proxy: String? = nil, bearerToken: String? = nil
    ) {
        self.bearerToken = bearerToken
        self.baseURL = baseURL
        self.timeout = timeout
        self.client = HTTPClient.processorClient(
            timeout: timeout, clientIdentity: clientIdentity, trustedRootsPEM: trustedRootsPEM, proxy: proxy)
    }

    public func charge(_ request: ChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        let encoded = HTTPClientRequest.postJSON(url("/v1/charges"), body: Self.body(for: request).jsonData)
        let charge = try await send(
            encoded, as: ChargeEnvelope.self, what: "charge", reading: ChargeEnvelope.init(wireJSON:)
        )
        .charge
        return try Self.processorCharge(charge).outcome
    }

    public func charge(idempotencyKey: String) async throws(ProcessorError) -> ProcessorCharge? {
        let request = HTTPClientRequest(
            url: url("/v1/charges/by-idempotency-key/\(Self.pathSegment(idempotencyKey))"),
            headers: [("Accept", "application/json")])
        do {
            return try Self.processorCharge(
                try await send(
                    request, as: ChargeEnvelope.self, what: "look-up by idempotency key",
                    reading: ChargeEnvelope.init(wireJSON:)
                ).charge)
        } catch  where error.code == .chargeNotFound {
            return nil
        }
    }

    public func void(reference: String) async throws(ProcessorError) -> ProcessorCharge {
        let request = HTTPClientRequest.postJSON(
            url("/v1/charges/\(Self.pathSegment(reference))/void"), body: Data("{}".utf8))
        return try Self.processorCharge(try await send(request, as: ChargeEnvelope.self, what: "void").charge)
    }

    public func refund(reference: String, amount: Money, idempotencyKey: String) async throws(ProcessorError)
        -> ProcessorRefund
    {
        let request: HTTPClientRequest
        do {
            request = try .postJSON(
                url("/v1/charges/\(Self.pathSegment(reference))/refunds"),
                encoding: CreateRefundBody(amount: amount.minorUnits, idempotencyKey: idempotencyKey))
        } catch {
            throw ProcessorError(.invalidRequest, "the refund could not be encoded")
        }
        let answer = try await send(request, as: RefundEnvelope.self, what: "refund")
        let charge = try Self.processorCharge(answer.charge)
        guard answer.refund.currencyCode == charge.amount.currency.code else {
            throw ProcessorError(.invalidAnswer, "the refund's currency is not the charge's")
        }
        return ProcessorRefund(
            reference: answer.refund.reference, idempotencyKey: answer.refund.idempotencyKey,
            amount: Money(minorUnits: answer.refund.amount, currency: charge.amount.currency), charge: charge)
    }

    public func storePaymentMethod(_ token: NetworkToken, idempotencyKey: String, rootFingerprint: String?)
        async throws(ProcessorError) -> String
    {
        let request: HTTPClientRequest
        do {
            request = try .postJSON(
                url("/v1/payment-methods"),
                encoding: StorePaymentMethodBody(
                    idempotencyKey: idempotencyKey, paymentMethod: Self.methodBody(for: token),
                    rootFingerprint: rootFingerprint))
        } catch {
            throw ProcessorError(.invalidRequest, "the payment method could not be encoded")
        }
        return try await send(request, as: PaymentMethodEnvelope.self, what: "keep payment method").paymentMethod
            .reference
    }

    public func charge(storedMethod request: StoredMethodChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        let encoded: HTTPClientRequest
        do {
            encoded = try .postJSON(
                url("/v1/payment-methods/\(Self.pathSegment(request.paymentMethodReference))/charges"),
                encoding: StoredMethodChargeBody(
                    idempotencyKey: request.idempotencyKey, amount: request.amount.minorUnits,
                    currencyCode: request.amount.currency.code))
        } catch {
            throw ProcessorError(.invalidRequest, "the charge could not be encoded")
        }
        let charge = try await send(encoded, as: ChargeEnvelope.self, what: "stored-method charge").charge
        return try Self.processorCharge(charge).outcome
    }

    // MARK: - Wire

    /// The payment method body of a token (written only to the wire).
    static func methodBody(for token: NetworkToken) -> PaymentMethodBody {
        var method = PaymentMethodBody(
            network: token.network, primaryAccountNumber: token.primaryAccountNumber,
            expirationDate: token.expirationDate)
        switch token.authentication {
        case .threeDSecure(let cryptogram, let eci):
            method.cryptogram = cryptogram.base64EncodedString()
            method.eciIndicator = eci
        case .emv(let data, let pin):
            method.emvData = data.base64EncodedString()
            method.encryptedPINData = pin
        }
        return method
    }

    /// The protocol's charge body for a request (the only place card data is written, and only to the wire).
    static func body(for request: ChargeRequest) -> CreateChargeBody {
        let token = request.token
        let method = methodBody(for: token)
        return CreateChargeBody(
            idempotencyKey: request.idempotencyKey, amount: request.amount.minorUnits,
            currencyCode: request.amount.currency.code, paymentMethod: method, rootFingerprint: request.rootFingerprint,
            storePaymentMethod: request.storePaymentMethod ? true : nil)
    }

    static func processorCharge(_ charge: ChargeResource) throws(ProcessorError) -> ProcessorCharge {
        guard let currency = Currency(code: charge.currencyCode) else {
            throw ProcessorError(.invalidAnswer, "the processor answered an unknown currency")
        }
        guard let status = ProcessorChargeStatus(rawValue: charge.status.rawValue) else {
            throw ProcessorError(.invalidAnswer, "the processor answered an unknown charge status")
        }
        return ProcessorCharge(
            reference: charge.reference, idempotencyKey: charge.idempotencyKey,
            amount: Money(minorUnits: charge.amount, currency: currency), status: status,
            declineReason: charge.declineCode.map(DeclineReason.init(code:)),
            refunded: Money(minorUnits: charge.refundedAmount, currency: currency),
            paymentMethodReference: charge.paymentMethodReference)
    }

    func url(_ path: String) -> String {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return base + path
    }

    private static func pathSegment(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~:")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// Sends a request and decodes a 2xx answer (with `reading` when it knows the answer's shape, else with
    /// `JSONDecoder`); maps everything else to a ``ProcessorError``.
    func send<T: Decodable>(
        _ request: HTTPClientRequest, as type: T.Type, what: String, reading: (Data) -> T? = { _ in nil }
    ) async throws(ProcessorError) -> T {
        var request = request
        if let bearerToken { request.headers.append(("Authorization", "Bearer " + bearerToken)) }
        let response: HTTPClientResponse
        switch await Self.cancellableSend(request, with: client) {
        case .success(let answer): response = answer
        case .failure(let error): throw Self.processorError(error, what: what)
        }
        switch response.status {
        case 200..<300:
            if let answer = reading(response.body) { return answer }
            do {
                return try JSONDecoder().decode(T.self, from: response.body)
            } catch {
                throw ProcessorError(.invalidAnswer, "the \(what) answer (\(response.status)) could not be read")
            }
        case 401, 403:
            throw ProcessorError(
                .notAuthorized, "the processor refused our credentials (\(response.status)) for the \(what)")
        case 500...:
            throw ProcessorError(
                .serverError,
                "the processor answered \(response.status) \(Self.wireCode(response) ?? "") to the \(what)")
        default:
            let wire = Self.wireCode(response)
            let code: ProcessorError.Code =
                switch wire {
                case "chargeNotFound"?: .chargeNotFound
                case "idempotencyConflict"?: .idempotencyConflict
                case "notVoidable"?: .notVoidable
                case "paymentMethodNotFound"?: .paymentMethodNotFound
                case "refundExceedsCharge"?: .refundExceedsCharge
                // A bare 404 (no code) is a wrong URL or a proxy's page, never "no such charge": a look-up
                // answered so would settle a charged payment as declined.
                case nil, "invalidRequest"?, "badRequest"?, "notFound"?, "methodNotAllowed"?, "payloadTooLarge"?:
                    .invalidRequest
                case let other?: ProcessorError.Code(other)
                }
            let message =
                (try? JSONDecoder().decode(ErrorEnvelope.self, from: response.body).error.message)
                ?? "the processor answered \(response.status)"
            throw ProcessorError(code, "\(what): \(message)")
        }
    }

    private static func wireCode(_ response: HTTPClientResponse) -> String? {
        try? JSONDecoder().decode(ErrorEnvelope.self, from: response.body).error.code
    }

    private static func processorError(_ error: any Error, what: String) -> ProcessorError {
        if let error = error as? ProcessorError { return error }
        guard let error = error as? HTTPClientError else {
            return ProcessorError(.unreachable, "the \(what) failed: \(error)")
        }
        switch error.code {
        case .timeout: return ProcessorError(.timeout, "no answer to the \(what) in time")
        case .responseTooLarge: return ProcessorError(.invalidAnswer, "the \(what) answer is too large")
        case .invalidURL, .unsupportedProtocol:
            return ProcessorError(.invalidRequest, "the processor URL is not usable: \(error.message)")
        default: return ProcessorError(.unreachable, "the \(what) got no complete answer (\(error.code))")
        }
    }

    /// Sends on the client's transfer threads. Cancelling the task aborts the transfer (its connection is closed)
    /// and answers `processorTimeout`.
    private static func cancellableSend(_ request: HTTPClientRequest, with client: HTTPClient) async
        -> Result<HTTPClientResponse, any Error>
    {
        do {
            return .success(try await client.send(request))
        } catch is CancellationError {
            return .failure(ProcessorError(.timeout, "the call was cancelled before an answer"))
        } catch {
            return .failure(error)
        }
    }
}

extension HTTPPaymentProcessor: ProviderStatements {
    /// `GET /v1/charges` (every charge, oldest first), those created in `[since, until)`: a list of every payment.
    public func statement(since: Date, until: Date, orders: [Order]) async throws(ProcessorError) -> ProviderStatement {
        let request = HTTPClientRequest(url: url("/v1/charges"), headers: [("Accept", "application/json")])
        let charges = try await send(request, as: ChargeListEnvelope.self, what: "charge list").charges
        var entries: [ProviderStatementEntry] = []
        for charge in charges {
            guard let created = try? Date(charge.createdAt, strategy: .iso8601) else {
                throw ProcessorError(.invalidAnswer, "a charge's createdAt is not ISO 8601")
            }
            guard created >= since, created < until else { continue }
            entries.append(
                ProviderStatementEntry(
                    reference: charge.reference, merchantReference: charge.idempotencyKey, amount: charge.amount,
                    currencyCode: charge.currencyCode,
                    captured: charge.status != .declined && charge.status != .voided,
                    refunded: charge.refundedAmount, createdAt: created))
        }
        return ProviderStatement(entries: entries, listsEveryPayment: true)
    }
}
