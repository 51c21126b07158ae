import ApplePay
import Foundation
import Foundations
import Synchronization

/// The decrypted network token a processor needs to authorise a payment: a device (or merchant) PAN, its
/// expiry, and either a 3-D Secure online cryptogram with an optional ECI, or EMV data.
///
/// Secret material: ``description`` and ``debugDescription`` print only the network and the last four digits,
/// and nothing here is `Codable`, so it cannot end up in a log line or the database by accident.
public struct NetworkToken: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// How the device authenticated the payment.
    public enum Authentication: Sendable {
        /// `paymentDataType` 3DSecure: the online payment cryptogram (base64-decoded bytes) and ECI, when present.
        case threeDSecure(cryptogram: Data, eciIndicator: String?)
        /// `paymentDataType` EMV: EMV data bytes and, when present, the encrypted PIN data (hex).
        case emv(data: Data, encryptedPINData: String?)
    }

    /// `applicationPrimaryAccountNumber`: the device (DPAN) or merchant (MPAN) account number.
    public let primaryAccountNumber: String
    /// `applicationExpirationDate`, `YYMMDD`.
    public let expirationDate: String
    public let authentication: Authentication
    /// The card network from the token's payment method (`Visa`, `MasterCard`, ...), if known.
    public let network: String?
    /// Set when the PAN is a merchant token (MPAN): Apple's identifier and metadata. `nil` for a device token.
    public let merchantToken: MerchantTokenInfo?

    /// Whether the payment was made with a merchant token rather than a device token.
    public var isMerchantToken: Bool { merchantToken != nil }

    public init(
        primaryAccountNumber: String, expirationDate: String, authentication: Authentication, network: String?,
        merchantToken: MerchantTokenInfo? = nil
    ) {
        self.merchantToken = merchantToken
        self.primaryAccountNumber = primaryAccountNumber
        self.expirationDate = expirationDate
        self.authentication = authentication
        self.network = network
    }

    /// The last four digits of the PAN: the only part of it that may be stored or shown.
    public var lastFour: String { String(primaryAccountNumber.suffix(4)) }

    public var description: String { "NetworkToken(\(network ?? "unknown network") ••••\(lastFour))" }
    public var debugDescription: String { description }
    /// `dump` and debuggers see the network and last four digits only.
    public var customMirror: Mirror { Mirror(self, children: ["network": network as Any, "lastFour": lastFour]) }
}

/// What a payload says about its merchant token: `merchantTokenIdentifier` and, from `merchantTokenMetadata`,
/// the card as Apple describes it (``CardMetadata``) and its art. No secret: safe to store and log.
public struct MerchantTokenInfo: Sendable, Equatable {
    public var identifier: String
    /// The card as Apple describes it: its `fpanSuffix` is the last four digits of the card (the funding PAN), not
    /// of the merchant token; its `expirationDate` is as given (Apple documents no format; the sandbox writes `MM/YY`).
    public var card: CardMetadata
    /// The first `cardArt` URL.
    public var cardArtURL: String?

    /// Reads Apple's `merchantTokenMetadata` (`cardMetadata` as ``CardMetadata`` reads it, `cardArt [{url}]`);
    /// without it, only the identifier is known.
    public init(identifier: String, metadata: JSONValue? = nil) {
        self.identifier = identifier
        card = CardMetadata(json: metadata?["cardMetadata"])
        cardArtURL = CardMetadata.checked(metadata?["cardArt"]?[0]?["url"]?.stringValue, maximum: 128)
    }
}

/// Apple's `CardMetadata` (in a token's `merchantTokenMetadata` and in a merchant-token event): every field optional.
/// A value beyond Apple's limits is dropped rather than shown: `fpanSuffix` up to four digits, `cardCountry` two
/// letters, `expirationDate` 8 characters, `shortDescription` 64, `longDescription` 128.
public struct CardMetadata: Sendable, Equatable, Codable {
    /// The last four digits of the card (the funding PAN) as the customer knows it.
    public var fpanSuffix: String?
    public var expirationDate: String?
    public var cardCountry: String?
    public var shortDescription: String?
    public var longDescription: String?

    public init(
        fpanSuffix: String? = nil, expirationDate: String? = nil, cardCountry: String? = nil,
        shortDescription: String? = nil, longDescription: String? = nil
    ) {
        self.fpanSuffix = fpanSuffix.flatMap { $0.utf8.allSatisfy { (0x30...0x39).contains($0) } ? $0 : nil }
            .flatMap { Self.checked($0, maximum: 4) }
        self.expirationDate = Self.checked(expirationDate, maximum: 8)
        self.cardCountry = cardCountry.flatMap {
            $0.utf8.count == 2 && $0.utf8.allSatisfy { (0x41...0x5A).contains($0 & 0xDF) } ? $0.uppercased() : nil
        }
        self.shortDescription = Self.checked(shortDescription, maximum: 64)
        self.longDescription = Self.checked(longDescription, maximum: 128)
    }

    /// Reads the JSON object (a field of another type is ignored, as a missing one).
    public init(json: JSONValue?) {
        self.init(
            fpanSuffix: json?["fpanSuffix"]?.stringValue, expirationDate: json?["expirationDate"]?.stringValue,
            cardCountry: json?["cardCountry"]?.stringValue, shortDescription: json?["shortDescription"]?.stringValue,
            longDescription: json?["longDescription"]?.stringValue)
    }

    public init(from decoder: any Decoder) throws {
        enum Keys: String, CodingKey { case fpanSuffix, expirationDate, cardCountry, shortDescription, longDescription }
        let c = try decoder.container(keyedBy: Keys.self)
        func text(_ key: Keys) -> String? { (try? c.decodeIfPresent(String.self, forKey: key)) ?? nil }
        self.init(
            fpanSuffix: text(.fpanSuffix), expirationDate: text(.expirationDate), cardCountry: text(.cardCountry),
            shortDescription: text(.shortDescription), longDescription: text(.longDescription))
    }

    /// `text` when it is 1 to `maximum` characters long.
    static func checked(_ text: String?, maximum: Int) -> String? {
        guard let text, (1...maximum).contains(text.count) else { return nil }
        return text
    }
}

/// One charge sent to a processor.
public struct ChargeRequest: Sendable, CustomStringConvertible, CustomReflectable {
    public let token: NetworkToken
    /// The amount to authorise and capture.
    public let amount: Money
    /// Same key, same charge: processors must not charge twice for one key. The merchant server uses the
    /// token's `transactionId`.
    public let idempotencyKey: String
    /// SHA-256 (lowercase hex) of the DER of the root certificate the token's signature chained to. A sandbox
    /// processor refuses tokens that did not chain to its sandbox's root; `nil` when unknown.
    public let rootFingerprint: String?
    /// Keep this payment's method for merchant-initiated charges later (subscriptions): an approved charge then
    /// carries ``ProcessorCharge/paymentMethodReference`` (look the charge up by its key to read it).
    public let storePaymentMethod: Bool
    /// The token as the device sealed it, for a processor that decrypts it itself (pass-through); `nil` when the
    /// caller has only the decrypted token. Set only after the token passed every check. Given as the token's JSON,
    /// it is read here, when a pass-through processor asks, and never for the others.
    public var sealedToken: SealedApplePayToken? {
        switch sealed {
        case .token(let token): token
        case .json(let json): SealedApplePayToken(tokenJSON: json)
        case nil: nil
        }
    }
    private let sealed: Sealed?

    private enum Sealed: Sendable {
        case token(SealedApplePayToken)
        case json(Data)
    }

    public init(
        token: NetworkToken, amount: Money, idempotencyKey: String, rootFingerprint: String? = nil,
        storePaymentMethod: Bool = false, sealedToken: SealedApplePayToken? = nil
    ) {
        self.init(
            token: token, amount: amount, idempotencyKey: idempotencyKey, rootFingerprint: rootFingerprint,
            storePaymentMethod: storePaymentMethod, sealed: sealedToken.map(Sealed.token))
    }

    /// A request whose sealed token is `sealedTokenJSON`, the whole token object as the device sent it (verified and
    /// decrypted already; `nil`: none): read into ``sealedToken`` only by a processor that asks for it.
    public init(
        token: NetworkToken, amount: Money, idempotencyKey: String, rootFingerprint: String? = nil,
        storePaymentMethod: Bool = false, sealedTokenJSON: Data?
    ) {
        self.init(
            token: token, amount: amount, idempotencyKey: idempotencyKey, rootFingerprint: rootFingerprint,
            storePaymentMethod: storePaymentMethod, sealed: sealedTokenJSON.map(Sealed.json))
    }

    private init(
        token: NetworkToken, amount: Money, idempotencyKey: String, rootFingerprint: String?,
        storePaymentMethod: Bool, sealed: Sealed?
    ) {
        self.sealed = sealed
        self.storePaymentMethod = storePaymentMethod
        self.token = token
        self.amount = amount
        self.idempotencyKey = idempotencyKey
        self.rootFingerprint = rootFingerprint
    }

    public var description: String { "ChargeRequest(\(amount), \(token), key \(idempotencyKey))" }
    public var customMirror: Mirror {
        Mirror(self, children: ["token": token, "amount": amount, "idempotencyKey": idempotencyKey])
    }
}

/// What a processor answered to a charge it decided. An answer that was not seen (time limit, lost connection,
/// 5xx) is not an outcome: it is a thrown ``ProcessorError`` whose ``ProcessorError/outcomeIsUnknown`` is true.
public enum ChargeOutcome: Sendable, Equatable {
    /// Authorised and captured; `reference` is the processor's id for the charge.
    case approved(reference: String)
    /// The issuer or processor refused the card; nothing was charged.
    case declined(DeclineReason)
    /// The provider took the charge and decides later (`reference` is its id for it): not a decline. Its webhook
    /// or a look-up settles it.
    case processing(reference: String)
}

/// Why a card was declined (stable codes).
public struct DeclineReason: Hashable, Sendable, CustomStringConvertible {
    public let code: String
    public init(code: String) { self.code = code }
    public var description: String { code }

    public static let insufficientFunds = DeclineReason(code: "insufficientFunds")
    public static let lostCard = DeclineReason(code: "lostCard")
    public static let stolenCard = DeclineReason(code: "stolenCard")
    public static let expiredCard = DeclineReason(code: "expiredCard")
    public static let doNotHonor = DeclineReason(code: "doNotHonor")
    /// A sandbox processor was sent a token that did not chain to its sandbox's root.
    public static let notSandboxToken = DeclineReason(code: "notSandboxToken")
}

/// The state of a charge as the processor's ledger holds it.
public enum ProcessorChargeStatus: String, Sendable, Codable, CaseIterable {
    case approved, declined, voided, refunded, partiallyRefunded
    /// Taken, to be decided later.
    case processing
}

/// A charge as the processor holds it (the answer to a look-up, a void or a refund).
public struct ProcessorCharge: Sendable, Equatable {
    /// The processor's id for the charge (the ``ChargeOutcome/approved(reference:)`` reference).
    public var reference: String
    public var idempotencyKey: String
    public var amount: Money
    public var status: ProcessorChargeStatus
    /// Why it was declined, for ``ProcessorChargeStatus/declined``.
    public var declineReason: DeclineReason?
    /// How much has been refunded so far (zero in ``amount``'s currency when nothing).
    public var refunded: Money
    /// The kept payment method: set on an approved charge asked to ``ChargeRequest/storePaymentMethod``, and on
    /// charges of a kept method. The processor's reference, never a PAN.
    public var paymentMethodReference: String?
    /// The processor's customer the kept method is attached to, for a processor that reuses a method only through
    /// its customer (Stripe's Customer, `cus_…`): charges of the kept method name it. `nil` for the others.
    public var customerReference: String?

    public init(
        reference: String, idempotencyKey: String, amount: Money, status: ProcessorChargeStatus,
        declineReason: DeclineReason? = nil, refunded: Money? = nil, paymentMethodReference: String? = nil,
        customerReference: String? = nil
    ) {
        self.paymentMethodReference = paymentMethodReference
        self.customerReference = customerReference
        self.reference = reference
        self.idempotencyKey = idempotencyKey
        self.amount = amount
        self.status = status
        self.declineReason = declineReason
        self.refunded = refunded ?? .zero(amount.currency)
    }

    /// The charge's outcome as ``PaymentProcessor/charge(_:)`` would have answered it.
    public var outcome: ChargeOutcome {
        switch status {
        case .declined: .declined(declineReason ?? .doNotHonor)
        case .processing: .processing(reference: reference)
        case .approved, .voided, .refunded, .partiallyRefunded: .approved(reference: reference)
        }
    }
}

/// One refund of a charge.
public struct ProcessorRefund: Sendable, Equatable {
    /// The processor's id for the refund.
    public var reference: String
    public var idempotencyKey: String
    public var amount: Money
    /// The charge after the refund.
    public var charge: ProcessorCharge
    /// Whether the provider took the refund and decides later (Adyen `received`, Checkout.com `202`, Stripe
    /// `pending`): it is not given back yet, and its webhook says whether it was.
    public var isPending: Bool

    public init(
        reference: String, idempotencyKey: String, amount: Money, charge: ProcessorCharge, isPending: Bool = false
    ) {
        self.reference = reference
        self.idempotencyKey = idempotencyKey
        self.amount = amount
        self.charge = charge
        self.isPending = isPending
    }
}

/// A processor call that failed. Codes whose ``outcomeIsUnknown`` is true mean the request may have reached the
/// processor and been acted on: the caller must look the charge up before telling anyone "nothing happened".
public struct ProcessorError: CodedError {
    public let code: Code
    /// For logs: never card data.
    public let message: String
    /// The processor's id for the payment when it was known before the answer was lost (a Stripe PaymentIntent
    /// created, its confirmation unanswered): recorded with the unknown payment, so a webhook and the reconciler
    /// find it by it.
    public private(set) var processorReference: String?
    /// True when the connector refused the charge before any request went to the processor (a token it cannot send
    /// as the provider requires): nothing was sent, so nothing was charged. The payment is then declined, never
    /// `unknown`, and its checkout unlocks.
    public private(set) var nothingWasSent = false

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// This error, raised before anything was sent to the processor (``nothingWasSent``).
    public func beforeSending() -> ProcessorError {
        var error = self
        error.nothingWasSent = true
        return error
    }

    /// This error carrying the processor's id for the payment, when the outcome is unknown (a definite error is
    /// left as it is).
    public func referencing(_ reference: String) -> ProcessorError {
        guard outcomeIsUnknown else { return self }
        var error = self
        error.processorReference = reference
        return error
    }

    /// True when the processor may have acted on the request (timeout, lost connection, 5xx, unreadable answer).
    public var outcomeIsUnknown: Bool { Code.unknownOutcome.contains(code) }
}

extension ErrorCode<ProcessorError> {
    /// No answer within the time limit. Outcome unknown.
    public static var timeout: Self { Self("processorTimeout") }
    /// The connection failed or was dropped before a complete answer. Outcome unknown.
    public static var unreachable: Self { Self("processorUnreachable") }
    /// The processor answered 5xx. Outcome unknown.
    public static var serverError: Self { Self("processorError") }
    /// The answer could not be read. Outcome unknown.
    public static var invalidAnswer: Self { Self("processorInvalidAnswer") }
    /// No charge with that reference or idempotency key.
    public static var chargeNotFound: Self { Self("chargeNotFound") }
    /// The refund is larger than what is left to refund.
    public static var refundExceedsCharge: Self { Self("refundExceedsCharge") }
    /// The charge cannot be voided (declined, already refunded or voided).
    public static var notVoidable: Self { Self("notVoidable") }
    /// The idempotency key was used before with a different request.
    public static var idempotencyConflict: Self { Self("idempotencyConflict") }
    /// No kept payment method with that reference (or it was deleted).
    public static var paymentMethodNotFound: Self { Self("paymentMethodNotFound") }
    /// The processor refused the request as malformed (4xx).
    public static var invalidRequest: Self { Self("processorInvalidRequest") }
    /// The processor refused our credentials (401/403): a configuration error, not a payment's.
    public static var notAuthorized: Self { Self("processorNotAuthorized") }
    /// The processor has no look-up for this payment (its webhook settles it). Outcome unknown.
    public static var lookUpUnavailable: Self { Self("processorLookUpUnavailable") }
    /// The provider requires the token's ECI (Checkout.com's `network_token`) and the decrypted token has none
    /// (typical of Mastercard): refused before sending, nothing charged. Pass-through mode sends such tokens.
    public static var eciRequired: Self { Self("processorECIRequired") }

    /// Codes that leave the outcome unknown.
    public static var unknownOutcome: Set<Self> {
        [
            .timeout, .unreachable, .serverError, .invalidAnswer, .lookUpUnavailable,
        ]
    }
}

/// A payment processor (acquirer, gateway): authorises and captures charges, looks them up by idempotency key,
/// voids and refunds them. ``HTTPPaymentProcessor`` speaks docs/PROCESSOR-PROTOCOL.md; ``SandboxProcessor``
/// is the in-memory sandbox.
///
/// Implementations must honour task cancellation promptly. Throw ``ProcessorError`` only: a code in
/// ``ProcessorError/Code/unknownOutcome`` whenever the request may have been acted on.
public protocol PaymentProcessor: Sendable {
    /// A short name for logs and metrics (`sandbox`, `http`).
    var name: String { get }

    /// Authorises and captures the charge; the same idempotency key answers the first outcome again.
    func charge(_ request: ChargeRequest) async throws(ProcessorError) -> ChargeOutcome

    /// The charge made with this idempotency key, or `nil` when the processor has none (it never saw it, or
    /// refused it before committing).
    func charge(idempotencyKey: String) async throws(ProcessorError) -> ProcessorCharge?

    /// Voids an approved charge that has no refunds; voiding a voided charge answers it again.
    func void(reference: String) async throws(ProcessorError) -> ProcessorCharge

    /// Refunds part or all of an approved charge, once per `idempotencyKey`.
    func refund(reference: String, amount: Money, idempotencyKey: String) async throws(ProcessorError)
        -> ProcessorRefund

    /// Keeps a payment method without charging it (a deferred payment): answers the kept method's reference.
    /// The same `idempotencyKey` answers the same reference.
    func storePaymentMethod(_ token: NetworkToken, idempotencyKey: String, rootFingerprint: String?)
        async throws(ProcessorError) -> String

    /// Charges a kept payment method, merchant-initiated (no cryptogram), once per `idempotencyKey` (the merchant
    /// uses one key per subscription, billing cycle and attempt). Look-up by key as for ``charge(_:)``.
    func charge(storedMethod request: StoredMethodChargeRequest) async throws(ProcessorError) -> ChargeOutcome

    /// How this processor's unknown outcomes are settled, and how long it keeps an idempotency key.
    var unknownOutcomes: UnknownOutcomeResolution { get }

    /// The charge a payment whose answer was lost became, or `nil` when nothing was charged: what the reconciler
    /// asks. A provider without a look-up by key sends the first request again with the same key, or throws
    /// `lookUpUnavailable` when only its webhook can tell.
    func charge(lookingUp payment: ChargeLookup) async throws(ProcessorError) -> ProcessorCharge?

    /// A cheap authenticated call at start-up, where the processor has one: throws `notAuthorized` when the
    /// credentials are refused (a configuration error), other codes when the processor cannot be reached.
    func checkCredentials() async throws(ProcessorError)

    /// Where a refund the processor took stands now (`reference`: its id for the refund; `charge`: the charge's),
    /// for a refund whose webhook did not come: the reconciler asks. `lookUpUnavailable` when only the webhook tells.
    func refundStatus(reference: String, charge: String) async throws(ProcessorError) -> RefundRecord.Status
}

/// A merchant-initiated charge of a kept payment method.
public struct StoredMethodChargeRequest: Sendable, Equatable {
    /// ``ProcessorCharge/paymentMethodReference`` of the charge that kept it.
    public var paymentMethodReference: String
    public var amount: Money
    public var idempotencyKey: String
    /// ``ProcessorCharge/customerReference`` of the charge that kept it (`nil`: the processor keeps none).
    public var customerReference: String? = nil
}

extension PaymentProcessor {
    /// Looked up by idempotency key, for as long as the processor keeps its ledger.
    public var unknownOutcomes: UnknownOutcomeResolution { .lookUp(keyLifetime: nil) }

    /// ``charge(idempotencyKey:)``.
    public func charge(lookingUp payment: ChargeLookup) async throws(ProcessorError) -> ProcessorCharge? {
        try await charge(idempotencyKey: payment.idempotencyKey)
    }

    /// No check: the first payment finds out.
    public func checkCredentials() async throws(ProcessorError) {}

    /// Only the webhook tells.
    public func refundStatus(reference: String, charge: String) async throws(ProcessorError) -> RefundRecord.Status {
        throw ProcessorError(.lookUpUnavailable, "\(name) has no refund look-up: its webhook tells")
    }

    /// Processors that cannot keep payment methods refuse to.
    public func storePaymentMethod(_ token: NetworkToken, idempotencyKey: String, rootFingerprint: String?)
        async throws(ProcessorError) -> String
    {
        throw ProcessorError(.invalidRequest, "\(name) does not keep payment methods")
    }

    /// Processors that cannot keep payment methods refuse to.
    public func charge(storedMethod request: StoredMethodChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        throw ProcessorError(.invalidRequest, "\(name) does not keep payment methods")
    }
}

/// What one bounded charge call ended with: an outcome the processor decided, or an unknown one.
public enum ChargeAttempt: Sendable, Equatable {
    /// The processor answered: approved, declined, or to be decided later.
    case decided(ChargeOutcome)
    /// No answer was seen (time limit, lost connection, 5xx): the charge may or may not exist. Look it up by
    /// its idempotency key before saying anything about it.
    case unknown(ProcessorError)
    /// The connector refused the charge before sending anything (``ProcessorError/nothingWasSent``): nothing was
    /// charged.
    case refused(ProcessorError)
}

/// Bounded processor calls.
public enum PaymentProcessing {
    /// Calls the processor, racing it against `timeout` (``withTimeLimit(_:_:)``): at the limit the attempt is
    /// `.unknown(processorTimeout)`; a thrown error is `.unknown` too (the request may have reached the
    /// processor), unless the connector says it sent nothing (``ProcessorError/nothingWasSent``): `.refused`.
    /// Never throws.
    /// - Parameters:
    ///   - request: the charge.
    ///   - processor: where to send it. It should honour cancellation; one that does not is left to finish on its
    ///     own (its late answer is ignored here: the reconciler finds the charge by its idempotency key).
    ///   - timeout: the upper bound for the call.
    public static func charge(
        _ request: ChargeRequest, with processor: any PaymentProcessor, timeout: Duration
    ) async -> ChargeAttempt {
        let result = await withTimeLimit(timeout) { () async throws(ProcessorError) -> ChargeOutcome in
            try await processor.charge(request)
        }
        switch result {
        case .success(let outcome): return .decided(outcome)
        case .failure(let error) where error.nothingWasSent: return .refused(error)
        case .failure(let error): return .unknown(error)
        }
    }

    /// Runs a processor call within `limit`. The call runs in a task of its own, started on the calling thread (a
    /// call that sends its request and waits costs no hand-off to begin) and preferring the calling thread's task
    /// executor (an HTTP server's responders: it goes on there once answered), that this function abandons when the
    /// limit or the caller's cancellation comes first: the call is cancelled and its late answer ignored, so a call
    /// that ignores cancellation cannot hold the limit hostage. At the limit the answer is
    /// `ProcessorError.timeout` (outcome unknown); a cancelled caller gets `timeout` ("the call was cancelled").
    public static func withTimeLimit<T: Sendable>(
        _ limit: Duration, _ call: @escaping @Sendable () async throws(ProcessorError) -> T
    ) async -> Result<T, ProcessorError> {
        let race = TimeLimitRace<T>()
        let task = Task.immediate(executorPreference: CurrentThread.currentExecutor) {
            do throws(ProcessorError) {
                race.finish(with: .success(try await call()))
            } catch {
                race.finish(with: .failure(error))
            }
        }
        let deadline = DeadlineTimer.shared.schedule(after: limit) {
            race.finish(with: .failure(ProcessorError(.timeout, "no answer within \(limit)")))
            task.cancel()
        }
        defer { DeadlineTimer.shared.cancel(deadline) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, ProcessorError>, Never>) in
                race.wait(continuation)
            }
        } onCancel: {
            race.finish(with: .failure(ProcessorError(.timeout, "the call was cancelled")))
            task.cancel()
        }
    }
}

/// The answer of ``PaymentProcessing/withTimeLimit(_:_:)``: the first of the call, the timer and cancellation wins;
/// the waiting caller's continuation is resumed exactly once.
private final class TimeLimitRace<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result<T, ProcessorError>, Never>?
        var answer: Result<T, ProcessorError>?
    }
    private let state = Mutex(State())

    /// Keeps the caller's continuation, or resumes it at once when the race is already decided.
    func wait(_ continuation: CheckedContinuation<Result<T, ProcessorError>, Never>) {
        let answer = state.withLock { state -> Result<T, ProcessorError>? in
            if state.answer == nil { state.continuation = continuation }
            return state.answer
        }
        if let answer { continuation.resume(returning: answer) }
    }

    /// Decides the race with `answer`, unless it is decided already.
    func finish(with answer: Result<T, ProcessorError>) {
        let continuation = state.withLock { state -> CheckedContinuation<Result<T, ProcessorError>, Never>? in
            guard state.answer == nil else { return nil }
            state.answer = answer
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: answer)
    }
}
