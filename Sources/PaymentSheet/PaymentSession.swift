import ApplePay
import Foundation
import Foundations
import Synchronization

/// A headless payment sheet: shows a validated request, plays the user's actions, asks the merchant's delegate
/// one question at a time and enforces Apple's rules, mints a real token on authorization, and writes a
/// transcript.
///
/// The rules, as a device applies them:
/// - one event at a time: an action arriving while the merchant has not answered is refused
///   (`eventInProgress`); only `cancel` may interrupt;
/// - the merchant sees the shipping contact redacted (`ContactRedaction`) until authorization, then the full
///   contacts with only the requested fields;
/// - errors in a merchant's answer block authorization until a later successful answer to the same kind of event
///   resolves them; missing required contact fields block it too;
/// - an answer that makes the request break Apple's rules (`PaymentRequest.validate()`: a negative total, a
///   malformed amount, duplicate shipping method identifiers, ...) fails the session;
/// - an answer that does not come within `Configuration.timeout` (30 s, on the injected clock) ends it as
///   `timedOut`;
/// - `didFinish` is called once, last, on every path.
public actor PaymentSession {
    /// How the sheet behaves.
    public struct Configuration: Sendable {
        /// How long the sheet waits for each answer (Apple: 30 seconds).
        public var timeout: Duration
        /// `web` asks for merchant validation first; `inApp` does not.
        public var initiative: SessionInitiative
        /// Whether `begin()` announces the default card (`paymentmethodselected`) and, when the request asks for
        /// a shipping address, the default contact (`shippingcontactselected`), as a device does when the sheet
        /// appears. When false they are selected silently.
        public var announcesInitialSelections: Bool
        /// The URL given in `validatemerchant`.
        public var validationURL: String

        public init(
            timeout: Duration = .seconds(30), initiative: SessionInitiative = .web,
            announcesInitialSelections: Bool = true,
            validationURL: String = MerchantValidationEvent().validationURL
        ) {
            self.timeout = timeout
            self.initiative = initiative
            self.announcesInitialSelections = announcesInitialSelections
            self.validationURL = validationURL
        }
    }

    /// An error the merchant returned that still blocks authorization.
    public struct BlockingError: Sendable, Hashable {
        public var error: PaymentError
        /// The event whose answer carried it.
        public var source: String
        /// The event whose next successful answer resolves it.
        public var resolvedBy: String
    }

    private enum Phase: Sendable, Equatable {
        case notBegun
        case ready
        case waiting(String)
        case finished(SessionOutcome)
    }

    // Inputs.
    public let wallet: Wallet
    public let configuration: Configuration
    private let delegate: any PaymentSheetDelegate
    private let tokenIssuer: any PaymentTokenIssuer
    private let clock: any SessionClock
    private let sink: TranscriptSink?

    // State.
    /// The request as the sheet currently shows it (the merchant's updates applied).
    public private(set) var request: PaymentRequest
    public private(set) var selectedCard: WalletCard?
    /// The full shipping contact the user chose (the merchant sees it redacted until authorization).
    public private(set) var shippingContact: Contact?
    public private(set) var shippingMethodIdentifier: String?
    public private(set) var couponCode: String?
    public private(set) var blockingErrors: [BlockingError] = []
    /// Every line written so far.
    public private(set) var transcript: [TranscriptEntry] = []
    private var phase: Phase = .notBegun
    private var pending: AnswerRace?
    private var lastAuthorizationFailed = false
    /// The order id of the merchant's last answer to `paymentauthorized`.
    private var orderID: String?

    /// - Parameters:
    ///   - request: the payment request; it must pass `validate()` (warnings allowed).
    ///   - wallet: the device, cards and contacts; some card must be able to pay for the request.
    ///   - delegate: the merchant.
    ///   - tokenIssuer: makes the token on authorization (`SandboxTokenIssuer`).
    ///   - clock: time for timeouts and signing; `VirtualClock` in tests.
    ///   - transcript: receives each transcript line as it is written.
    /// - Throws: `PaymentSheetError` `invalidRequest` naming the first broken rule, or
    ///   `cannotMakePayments` when the device cannot pay or no card can pay for the request.
    public init(
        request: PaymentRequest, wallet: Wallet, delegate: any PaymentSheetDelegate,
        tokenIssuer: any PaymentTokenIssuer, clock: any SessionClock = SystemSessionClock(),
        configuration: Configuration = Configuration(), transcript: TranscriptSink? = nil
    ) throws(PaymentSheetError) {
        let problems = request.validate().errors
        if let first = problems.first {
            throw PaymentSheetError(
                .invalidRequest,
                "the payment request breaks \(problems.count) rule(s); first: \(first.code) at "
                    + "\(first.path.isEmpty ? "(request)" : first.path): \(first.message)",
                field: first.path)
        }
        guard wallet.canMakePayments() else {
            throw PaymentSheetError(.cannotMakePayments, "the device cannot make payments (canMakePayments() is false)")
        }
        guard !wallet.eligibleCards(for: request).isEmpty else {
            throw PaymentSheetError(
                .cannotMakePayments,
                "no card in the wallet can pay for this request (networks, card types and issuing countries checked)")
        }
        self.request = request
        self.wallet = wallet
        self.delegate = delegate
        self.tokenIssuer = tokenIssuer
        self.clock = clock
        self.configuration = configuration
        self.sink = transcript
    }

    /// How the session ended, or nil while it runs.
    public var outcome: SessionOutcome? {
        if case .finished(let outcome) = phase { return outcome }
        return nil
    }

    /// Whether the sheet is waiting for the merchant's answer.
    public var isWaitingForMerchant: Bool {
        if case .waiting = phase { return true }
        return false
    }

    // MARK: - Running a script

    /// Begins the session, performs each action in turn (a refused action is noted in the transcript and the
    /// script goes on), and, when the script ends with the sheet still open, dismisses it as the user would.
    /// - Returns: the outcome.
    @discardableResult
    public func run(_ script: [UserAction]) async -> SessionOutcome {
        do {
            try await begin()
        } catch {}
        for action in script {
            if outcome != nil { break }
            do {
                try await perform(action)
            } catch {}
        }
        if outcome == nil {
            record("cancel", ["reason": .string("scriptEnded")])
            if lastAuthorizationFailed {
                await finish(
                    SessionOutcome(
                        .failure, reason: "authorizationFailed",
                        message: "the merchant refused the payment and the user closed the sheet"))
            } else {
                await finish(
                    SessionOutcome(
                        .cancelled, reason: "scriptEnded",
                        message: "the script ended with the sheet open; the user closed it"))
            }
        }
        return outcome ?? SessionOutcome(.failure, reason: "unknown")
    }

    // MARK: - Beginning

    /// Shows the sheet: merchant validation (web), then the default card and contact.
    /// - Throws: `finished` when it already ended, `eventInProgress` when already begun and
    ///   waiting. A failure during validation ends the session rather than throwing.
    public func begin() async throws(PaymentSheetError) {
        guard case .notBegun = phase else {
            try checkReady()
            return
        }
        phase = .ready
        couponCode = request.couponCode  // an initial coupon code fires no event
        shippingMethodIdentifier = request.shippingMethods?.first?.identifier
        if configuration.initiative == .web {
            let event = MerchantValidationEvent(validationURL: configuration.validationURL)
            let delegate = self.delegate
            let answer = await ask("validatemerchant") { try await delegate.validateMerchant(event) }
            var fields: [String: JSONValue] = ["validationURL": .string(event.validationURL)]
            switch answer {
            case .answered(let session):
                let members = session.value.objectValue.map { Array($0.keys).sorted() } ?? []
                fields["answer"] = .object([
                    "merchantSession": .object(["members": .array(members.map { .string($0) })])
                ])
                record("validatemerchant", fields)
            case .stopped:
                return
            }
        }
        let defaultCard = wallet.eligibleCards(for: request).first
        let defaultContact = requestsShippingAddress ? (request.shippingContact ?? wallet.contacts.first) : nil
        if configuration.announcesInitialSelections {
            if let card = defaultCard {
                try await selectCard(card)
            }
            if let contact = defaultContact, outcome == nil {
                try await selectShippingContact(contact)
            }
        } else {
            selectedCard = defaultCard
            shippingContact = defaultContact
        }
    }

    private var requestsShippingAddress: Bool {
        request.requiredShippingContactFields?.contains(.postalAddress) == true
    }

    // MARK: - Actions

    /// Performs one user action.
    /// - Throws: `PaymentSheetError`: `eventInProgress` while the merchant has not answered the previous
    ///   event, `finished` after the end, `unknownCard` / `unknownShippingMethod` /
    ///   `notOffered` for a selection the sheet does not offer, `authorizationBlocked` when
    ///   authorization is not possible yet. Merchant failures end the session instead of throwing.
    public func perform(_ action: UserAction) async throws(PaymentSheetError) {
        if case .cancel = action {
            await cancel()
            return
        }
        if case .notBegun = phase { throw PaymentSheetError(.notBegun, "call begin() before performing actions") }
        try checkReady()
        do throws(PaymentSheetError) {
            switch action {
            case .selectShippingContact(let contact):
                try await selectShippingContact(contact)
            case .selectShippingMethod(let identifier):
                guard let method = request.shippingMethods?.first(where: { $0.identifier == identifier }) else {
                    let offered = (request.shippingMethods ?? []).map(\.identifier).joined(separator: ", ")
                    throw PaymentSheetError(
                        .unknownShippingMethod,
                        "the sheet offers no shipping method '\(identifier)' (offered: \(offered.isEmpty ? "none" : offered))"
                    )
                }
                try await selectShippingMethod(method)
            case .selectCard(let identifier):
                guard let card = wallet.cards.first(where: { $0.identifier == identifier }) else {
                    throw PaymentSheetError(.unknownCard, "the wallet holds no card '\(identifier)'")
                }
                guard wallet.eligibleCards(for: request).contains(card) else {
                    throw PaymentSheetError(
                        .unknownCard, "'\(card.displayName)' cannot pay for this request; the sheet greys it out")
                }
                try await selectCard(card)
            case .enterCouponCode(let code):
                guard request.supportsCouponCode == true else {
                    throw PaymentSheetError(
                        .notOffered, "the request does not set supportsCouponCode, so the sheet has no coupon field")
                }
                try await changeCouponCode(code)
            case .authorize:
                try await authorize()
            case .cancel:
                break
            }
        } catch {
            if error.code != .eventInProgress && error.code != .finished {
                record(
                    error.code == .authorizationBlocked ? "authorizationblocked" : "actionrefused",
                    error.code == .authorizationBlocked
                        ? blockedFields()
                        : [
                            "action": .string(action.name), "code": .string(error.code.rawValue),
                            "message": .string(error.message),
                        ])
            }
            throw error
        }
    }

    /// Dismisses the sheet; allowed at any time, even while the merchant is answering (the answer is dropped).
    public func cancel() async {
        if outcome != nil { return }
        if let pending {
            self.pending = nil
            pending.resolve(.abandoned)
        }
        record("cancel", ["reason": .string("userCancelled")])
        await finish(SessionOutcome(.cancelled, reason: "userCancelled", message: "the user dismissed the sheet"))
    }

    private func checkReady() throws(PaymentSheetError) {
        switch phase {
        case .ready: return
        case .notBegun: throw PaymentSheetError(.notBegun, "call begin() before performing actions")
        case .waiting(let event):
            throw PaymentSheetError(
                .eventInProgress, "the sheet is waiting for the merchant's answer to \(event); one event at a time")
        case .finished: throw PaymentSheetError(.finished, "the session has finished")
        }
    }

    private func selectCard(_ card: WalletCard) async throws(PaymentSheetError) {
        try checkReady()
        selectedCard = card
        var method = card.paymentMethod
        if request.requiredBillingContactFields?.contains(.postalAddress) == true, let billing = card.billingContact {
            method.billingContact = ContactRedaction.redacted(billing)
        }
        let delegate = self.delegate
        let sent = method
        let answer = await ask("paymentmethodselected") { try await delegate.didSelectPaymentMethod(sent) }
        guard case .answered(let update) = answer else { return }
        await apply(update, event: "paymentmethodselected", fields: ["paymentMethod": TranscriptFormat.value(method)])
    }

    private func selectShippingContact(_ contact: Contact) async throws(PaymentSheetError) {
        try checkReady()
        shippingContact = contact
        let redacted = ContactRedaction.redacted(contact)
        let delegate = self.delegate
        let answer = await ask("shippingcontactselected") { try await delegate.didSelectShippingContact(redacted) }
        guard case .answered(let update) = answer else { return }
        await apply(
            update, event: "shippingcontactselected", fields: ["shippingContact": TranscriptFormat.value(redacted)])
    }

    private func selectShippingMethod(_ method: ShippingMethod) async throws(PaymentSheetError) {
        try checkReady()
        shippingMethodIdentifier = method.identifier
        let delegate = self.delegate
        let answer = await ask("shippingmethodselected") { try await delegate.didSelectShippingMethod(method) }
        guard case .answered(let update) = answer else { return }
        await apply(update, event: "shippingmethodselected", fields: ["shippingMethod": TranscriptFormat.value(method)])
    }

    private func changeCouponCode(_ code: String) async throws(PaymentSheetError) {
        try checkReady()
        couponCode = code.isEmpty ? nil : code
        let delegate = self.delegate
        let answer = await ask("couponcodechanged") { try await delegate.didChangeCouponCode(code) }
        guard case .answered(let update) = answer else { return }
        await apply(update, event: "couponcodechanged", fields: ["couponCode": .string(code)])
    }

    /// Folds a merchant's update into the request: validates the result (failing the session when it breaks a
    /// rule), keeps the shipping method selection valid, and records which errors now block authorization.
    private func apply(_ update: some PaymentRequestUpdate & Encodable, event: String, fields: [String: JSONValue])
        async
    {
        var line = fields
        line["answer"] = TranscriptFormat.value(update)
        let updated = request.applying(update)
        let problems = updated.validate().errors
        if !problems.isEmpty {
            line["problems"] = TranscriptFormat.value(problems.map { ["path": $0.path, "code": $0.code.rawValue] })
            record(event, line)
            let first = problems[0]
            await finish(
                SessionOutcome(
                    .failure, reason: "invalidUpdate",
                    message: "the merchant's answer to \(event) breaks Apple's rules: \(first.code) at "
                        + "\(first.path.isEmpty ? "(request)" : first.path): \(first.message)"))
            return
        }
        request = updated
        if let methods = request.shippingMethods {
            if !methods.contains(where: { $0.identifier == shippingMethodIdentifier }) {
                shippingMethodIdentifier = methods.first?.identifier
            }
        } else {
            shippingMethodIdentifier = nil
        }
        // A later answer to the same kind of event replaces what it said before.
        blockingErrors.removeAll { $0.resolvedBy == event || $0.source == event || $0.resolvedBy == "any" }
        for error in update.errors ?? [] {
            blockingErrors.append(
                BlockingError(error: error, source: event, resolvedBy: Self.resolver(of: error, from: event)))
        }
        line["total"] = TranscriptFormat.total(request.total)
        record(event, line)
    }

    /// The event whose successful answer resolves an error: contact errors by a new shipping contact, billing
    /// errors by a new card, coupon errors by a new coupon; anything else by the event that raised it, or, for an
    /// authorization's `unknown` error (a decline), by any later answer.
    static func resolver(of error: PaymentError, from event: String) -> String {
        switch error.code {
        case .shippingContactInvalid, .addressUnserviceable: return "shippingcontactselected"
        case .billingContactInvalid: return "paymentmethodselected"
        case .couponCodeInvalid, .couponCodeExpired: return "couponcodechanged"
        default: return event == "paymentauthorized" ? "any" : event
        }
    }

    // MARK: - Authorization

    /// Why authorization is not possible now; empty when it is.
    public var authorizationBlockers: [String] {
        var reasons: [String] = []
        if !blockingErrors.isEmpty { reasons.append("merchantErrors") }
        if selectedCard == nil { reasons.append("noCard") }
        if !missingShippingFields.isEmpty { reasons.append("missingShippingContactFields") }
        if !missingBillingFields.isEmpty { reasons.append("missingBillingContactFields") }
        if request.total.isPending || request.total.decimalAmount == nil { reasons.append("totalNotFinal") }
        return reasons
    }

    private var missingShippingFields: [ContactField] {
        ContactRedaction.missingFields(in: shippingContact, required: request.requiredShippingContactFields)
    }

    private var missingBillingFields: [ContactField] {
        ContactRedaction.missingFields(in: selectedCard?.billingContact, required: request.requiredBillingContactFields)
    }

    private func blockedFields() -> [String: JSONValue] {
        var fields: [String: JSONValue] = ["reasons": .array(authorizationBlockers.map { .string($0) })]
        if !blockingErrors.isEmpty { fields["errors"] = TranscriptFormat.errors(blockingErrors.map(\.error)) }
        if !missingShippingFields.isEmpty {
            fields["missingShippingContactFields"] = .array(missingShippingFields.map { .string($0.rawValue) })
        }
        if !missingBillingFields.isEmpty {
            fields["missingBillingContactFields"] = .array(missingBillingFields.map { .string($0.rawValue) })
        }
        return fields
    }

    private func authorize() async throws(PaymentSheetError) {
        try checkReady()
        let blockers = authorizationBlockers
        guard blockers.isEmpty, let card = selectedCard, let amount = request.total.decimalAmount else {
            throw PaymentSheetError(
                .authorizationBlocked, "authorization is blocked: \(blockers.joined(separator: ", "))")
        }
        let issued: IssuedToken
        do {
            issued = try tokenIssuer.issueToken(
                TokenIssueRequest(
                    card: card, amount: amount, currencyCode: request.currencyCode,
                    applicationData: request.applicationData, now: clock.now,
                    merchantToken: TokenIssueRequest.merchantTokenRequest(for: request)))
        } catch {
            record("paymentauthorized", ["tokenError": .string(String(describing: error))])
            await finish(
                SessionOutcome(.failure, reason: "tokenFailed", message: "the token could not be made: \(error)"))
            return
        }
        let payment = Payment(
            token: issued.token,
            billingContact: ContactRedaction.limited(card.billingContact, to: request.requiredBillingContactFields),
            shippingContact: ContactRedaction.limited(shippingContact, to: request.requiredShippingContactFields))
        var summary: [String: JSONValue] = [
            "transactionIdentifier": .string(issued.transactionIdentifier), "version": .string(issued.version),
            "card": .string(card.displayName), "lastFour": .string(card.lastFour),
            "amount": .string(request.total.amount ?? ""), "currencyCode": .string(request.currencyCode),
        ]
        if let contact = payment.shippingContact { summary["shippingContact"] = TranscriptFormat.value(contact) }
        if let contact = payment.billingContact { summary["billingContact"] = TranscriptFormat.value(contact) }
        let delegate = self.delegate
        let answer = await ask("paymentauthorized", fields: ["payment": .object(summary)]) {
            try await delegate.authorizePayment(payment)
        }
        guard case .answered(let authorization) = answer else { return }
        let result = authorization.result
        orderID = authorization.orderID ?? orderID
        record(
            "paymentauthorized",
            ["payment": .object(summary), "answer": TranscriptFormat.result(result, orderID: authorization.orderID)])
        if result.status == .success {
            await finish(SessionOutcome(.success, reason: "authorized", message: "the merchant accepted the payment"))
            return
        }
        let errors = result.errors ?? []
        if errors.isEmpty {
            await finish(
                SessionOutcome(.failure, reason: "merchantRefused", message: "the merchant answered \(result.status)"))
            return
        }
        lastAuthorizationFailed = true
        blockingErrors.removeAll { $0.source == "paymentauthorized" }
        for error in errors {
            blockingErrors.append(
                BlockingError(
                    error: error, source: "paymentauthorized",
                    resolvedBy: Self.resolver(of: error, from: "paymentauthorized")))
        }
    }

    // MARK: - Asking the merchant

    private enum Answer<T: Sendable>: Sendable {
        case answered(T)
        /// The session ended (timeout, merchant failure, cancel) while waiting.
        case stopped
    }

    /// Asks the merchant one question and waits for the answer, the timeout, or a cancel, whichever comes first.
    /// On a timeout or a thrown error the session finishes and `.stopped` is returned.
    private func ask<T: Sendable>(
        _ event: String, fields: [String: JSONValue] = [:], _ operation: @escaping @Sendable () async throws -> T
    ) async -> Answer<T> {
        phase = .waiting(event)
        let race = AnswerRace()
        pending = race
        let clock = self.clock
        let timeout = configuration.timeout
        let deadline = clock.now.addingTimeInterval(Self.seconds(timeout))
        var result = await race.run(
            operation: { try await operation() as any Sendable },
            deadline: { try await clock.sleep(until: deadline) })
        // An answer that comes after the deadline is late, however the tasks were scheduled.
        if case .answered = result, clock.now > deadline { result = .timedOut }
        if pending === race { pending = nil }
        if case .finished = phase { return .stopped }
        phase = .ready
        switch result {
        case .answered(let value):
            if let value = value as? T { return .answered(value) }
            await finish(
                SessionOutcome(.failure, reason: "merchantError", message: "the merchant's answer had the wrong type"))
            return .stopped
        case .failed(let message):
            var line = fields
            line["merchantError"] = .string(message)
            record(event, line)
            await finish(
                SessionOutcome(
                    .failure, reason: "merchantError", message: "the merchant failed to answer \(event): \(message)"))
            return .stopped
        case .timedOut:
            var line = fields
            line["timedOut"] = .bool(true)
            record(event, line)
            await finish(
                SessionOutcome(
                    .timedOut, reason: "merchantTimeout",
                    message: "the merchant did not answer \(event) within \(timeout.components.seconds) seconds"))
            return .stopped
        case .abandoned:
            return .stopped
        }
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    // MARK: - Finishing and the transcript

    private func finish(_ outcome: SessionOutcome) async {
        if case .finished = phase { return }
        var outcome = outcome
        if outcome.orderID == nil { outcome.orderID = orderID }
        phase = .finished(outcome)
        var fields: [String: JSONValue] = [
            "outcome": .string(outcome.kind.rawValue), "reason": .string(outcome.reason),
        ]
        if let message = outcome.message { fields["message"] = .string(message) }
        if let orderID = outcome.orderID { fields["orderId"] = .string(orderID) }
        fields["total"] = TranscriptFormat.total(request.total)
        record("finished", fields)
        await delegate.didFinish(outcome)
    }

    private func record(_ event: String, _ fields: [String: JSONValue] = [:]) {
        let entry = TranscriptEntry(event: event, fields: fields)
        transcript.append(entry)
        sink?(entry)
    }
}

/// One question to the merchant racing its deadline: whichever finishes first decides, once; the loser is
/// cancelled. A merchant that ignores cancellation cannot hold the sheet: the answer is awaited through a
/// continuation, not by joining the task.
final class AnswerRace: Sendable {
    enum Result: Sendable {
        case answered(any Sendable)
        case failed(String)
        case timedOut
        case abandoned
    }

    private struct State {
        var continuation: CheckedContinuation<Result, Never>?
        var early: Result?
        var tasks: [Task<Void, Never>] = []
    }

    private let state = Mutex(State())

    func run(
        operation: @escaping @Sendable () async throws -> any Sendable,
        deadline: @escaping @Sendable () async throws -> Void
    ) async -> Result {
        let work = Task { [self] in
            // A race settled before the question went out (a cancel) never reaches the merchant.
            if isSettled { return }
            do {
                resolve(.answered(try await operation()))
            } catch {
                resolve(.failed(Self.describe(error)))
            }
        }
        let timer = Task { [self] in
            do {
                try await deadline()
                resolve(.timedOut)
            } catch {}
        }
        state.withLock { $0.tasks = [work, timer] }
        return await withCheckedContinuation { continuation in
            let early: Result? = state.withLock { state in
                if let early = state.early { return early }
                state.continuation = continuation
                return nil
            }
            if let early { continuation.resume(returning: early) }
        }
    }

    private var isSettled: Bool { state.withLock { $0.early != nil } }

    /// Settles the race; later calls do nothing.
    func resolve(_ result: Result) {
        let (continuation, tasks): (CheckedContinuation<Result, Never>?, [Task<Void, Never>]) = state.withLock {
            state in
            if state.early != nil { return (nil, []) }
            state.early = result
            let continuation = state.continuation
            state.continuation = nil
            let tasks = state.tasks
            state.tasks = []
            return (continuation, tasks)
        }
        for task in tasks { task.cancel() }
        continuation?.resume(returning: result)
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? PaymentSheetError { return error.description }
        return String(describing: error)
    }
}
