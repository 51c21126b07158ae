import Foundation
import Foundations

/// What one party saw of a payment at its provider: our charge call's answer (or its absence), a look-up of the
/// provider's current state, or a provider's webhook. Every observation of one payment is merged into its one
/// state by ``PaymentStateMachine``, whatever order they arrive in.
public struct PaymentObservation: Sendable, Equatable {
    /// Who saw it.
    public enum Source: String, Sendable, CaseIterable {
        /// The answer to our charge call.
        case answer
        /// A look-up of the provider's current state (the reconciler, an operator's reconcile).
        case lookUp
        /// The provider's signed webhook.
        case webhook
    }

    /// What was seen.
    public enum Finding: Sendable, Equatable {
        /// No answer was seen (time limit, lost connection, 5xx): the charge may or may not exist.
        case unknown(code: String, message: String)
        /// The provider took the payment and will decide later (Adyen `Received`/`Pending`, Checkout.com `202` or
        /// `Pending`, Stripe `processing`).
        case processing
        /// Authorised and captured.
        case approved
        /// Refused: nothing was captured.
        case declined(DeclineReason)
        /// A look-up found no charge at the provider: nothing was captured.
        case absent
        /// Captured, then voided.
        case voided
        /// Our connector refused the charge before sending it (``ProcessorError/nothingWasSent``): nothing was sent,
        /// so nothing was captured.
        case refused(code: String, message: String)

        /// How much the finding tells: in flight (0) < processing or unknown (1) < decided (2).
        public var certainty: Int {
            switch self {
            case .unknown, .processing: 1
            case .approved, .declined, .absent, .voided, .refused: 2
            }
        }
    }

    public var source: Source
    public var finding: Finding
    /// The provider's id for the payment, when the observation carries it.
    public var reference: String?

    public init(_ source: Source, _ finding: Finding, reference: String? = nil) {
        self.source = source
        self.finding = finding
        self.reference = reference
    }

    /// Our charge call's end: an answer, or its absence.
    public init(attempt: ChargeAttempt) {
        switch attempt {
        case .decided(.approved(let reference)): self.init(.answer, .approved, reference: reference)
        case .decided(.declined(let reason)): self.init(.answer, .declined(reason))
        case .decided(.processing(let reference)): self.init(.answer, .processing, reference: reference)
        case .unknown(let error):
            self.init(
                .answer, .unknown(code: error.code.rawValue, message: error.message),
                reference: error.processorReference)
        case .refused(let error):
            self.init(.answer, .refused(code: error.code.rawValue, message: error.message))
        }
    }

    /// What a look-up (or a webhook, `source`) found in the provider's ledger; `nil`: no charge there.
    public init(_ source: Source, charge: ProcessorCharge?) {
        guard let charge else {
            self.init(source, .absent)
            return
        }
        let finding: Finding =
            switch charge.status {
            case .approved, .refunded, .partiallyRefunded: .approved
            case .declined: .declined(charge.declineReason ?? .doNotHonor)
            case .voided: .voided
            case .processing: .processing
            }
        self.init(source, finding, reference: charge.reference)
    }
}

/// The move of an order and its payment that an observation makes.
public struct PaymentStep: Sendable, Equatable {
    public var orderStatus: OrderStatus
    public var paymentStatus: PaymentStatus
    /// The provider's id to record (kept as it is when `nil`).
    public var reference: String?
    public var failureCode: String?
    public var failureMessage: String?
    /// The event log's kind for the move.
    public var eventKind: String

    public init(
        orderStatus: OrderStatus, paymentStatus: PaymentStatus, reference: String? = nil, failureCode: String? = nil,
        failureMessage: String? = nil, eventKind: String
    ) {
        self.orderStatus = orderStatus
        self.paymentStatus = paymentStatus
        self.reference = reference
        self.failureCode = failureCode
        self.failureMessage = failureMessage
        self.eventKind = eventKind
    }
}

/// Two decided observations of one payment that disagree: we recorded one outcome, the provider says another.
/// Recorded as a `paymentDiscrepancy` event and listed in `GET /admin/v1/attention` until a person resolves it.
public struct PaymentDiscrepancy: Sendable, Equatable {
    /// What the order said before (`declined`, `paid`, ...).
    public var recorded: OrderStatus
    /// What the provider says (`approved`, `declined`, `absent`, ...): ``PaymentObservation/Finding``'s name.
    public var provider: String
    public var source: PaymentObservation.Source
    /// Whether the order was moved to the provider's state (`false`: an approval we recorded is kept, and a person
    /// must look at the provider's dashboard).
    public var corrected: Bool

    public init(recorded: OrderStatus, provider: String, source: PaymentObservation.Source, corrected: Bool) {
        self.recorded = recorded
        self.provider = provider
        self.source = source
        self.corrected = corrected
    }
}

/// What merging an observation does.
public enum PaymentMerge: Sendable, Equatable {
    /// It tells nothing the order does not say already.
    case unchanged
    /// The order moves.
    case moves(PaymentStep)
    /// It contradicts a decided order: the discrepancy is recorded; `correction` moves the order to the provider's
    /// state, or is `nil` when the order keeps what it has (an approval is never undone by a later "declined").
    case disagrees(PaymentDiscrepancy, correction: PaymentStep?)
}

/// The one rule every observation of a payment is merged by, whatever its source and order of arrival:
/// - a more certain observation replaces a less certain one (in flight < processing or unknown < decided); an
///   unknown answer never replaces a "decided later", and a decided outcome is never replaced by a less certain one;
/// - a decided outcome from the provider is the truth about money: a payment recorded `declined` that the provider
///   says it captured becomes `paid`, with the discrepancy recorded (and the checkout locked again);
/// - a captured payment the provider later calls declined or absent keeps its approval (a charge the provider
///   approved is always recorded), and the discrepancy goes to a person;
/// - a void seen at the provider voids a paid order that has no refunds.
///
/// Pure: the stores apply its answer in the transaction that read the order.
public enum PaymentStateMachine {
    /// Merges `observation` into an order in `status` (`refunded`: minor units refunded so far).
    public static func merge(_ observation: PaymentObservation, into status: OrderStatus, refunded: Int64 = 0)
        -> PaymentMerge
    {
        let finding = observation.finding
        switch status {
        case .pending:
            return .moves(step(observation, from: status))
        case .unknown, .processing:
            if finding.certainty == 2 { return .moves(step(observation, from: status)) }
            // processing (the provider has it) tells more than unknown; unknown never undoes processing.
            if status == .unknown, finding == .processing { return .moves(step(observation, from: status)) }
            return .unchanged
        case .declined:
            guard finding == .approved else { return .unchanged }
            var correction = step(observation, from: status)
            correction.eventKind = "paymentCorrected"
            return .disagrees(
                PaymentDiscrepancy(
                    recorded: status, provider: name(finding), source: observation.source, corrected: true),
                correction: correction)
        case .paid, .partiallyRefunded, .refunded:
            switch finding {
            case .declined, .absent:
                return .disagrees(
                    PaymentDiscrepancy(
                        recorded: status, provider: name(finding), source: observation.source, corrected: false),
                    correction: nil)
            case .voided where status == .paid && refunded == 0:
                return .moves(step(observation, from: status))
            case .voided:
                return .disagrees(
                    PaymentDiscrepancy(
                        recorded: status, provider: name(finding), source: observation.source, corrected: false),
                    correction: nil)
            case .approved, .processing, .unknown, .refused:
                return .unchanged
            }
        case .voided:
            return .unchanged
        }
    }

    /// The finding's stable name (``PaymentDiscrepancy/provider``).
    public static func name(_ finding: PaymentObservation.Finding) -> String {
        switch finding {
        case .unknown: "unknown"
        case .processing: "processing"
        case .approved: "approved"
        case .declined: "declined"
        case .absent: "absent"
        case .voided: "voided"
        case .refused: "refused"
        }
    }

    /// The move to what `observation` found. Our answer's moves keep their event names (`paymentApproved`,
    /// `paymentDeclined`, `paymentOutcomeUnknown`, `paymentProcessing`, `paymentRefusedBeforeSending`); a look-up's
    /// or a webhook's settlement of a payment is `paymentReconciled`.
    static func step(_ observation: PaymentObservation, from status: OrderStatus) -> PaymentStep {
        let answer = observation.source == .answer
        let reference = observation.reference
        switch observation.finding {
        case .approved:
            return PaymentStep(
                orderStatus: .paid, paymentStatus: .approved, reference: reference,
                eventKind: answer ? "paymentApproved" : "paymentReconciled")
        case .declined(let reason):
            return PaymentStep(
                orderStatus: .declined, paymentStatus: .declined, reference: reference, failureCode: reason.code,
                eventKind: answer ? "paymentDeclined" : "paymentReconciled")
        case .absent:
            return PaymentStep(
                orderStatus: .declined, paymentStatus: .declined, failureCode: "processorHasNoCharge",
                failureMessage: "the processor has no charge for this payment: nothing was captured",
                eventKind: "paymentReconciled")
        case .voided:
            return PaymentStep(
                orderStatus: .voided, paymentStatus: .voided, reference: reference,
                eventKind: status == .paid ? "paymentVoided" : "paymentReconciled")
        case .processing:
            return PaymentStep(
                orderStatus: .processing, paymentStatus: .processing, reference: reference,
                eventKind: "paymentProcessing")
        case .unknown(let code, let message):
            return PaymentStep(
                orderStatus: .unknown, paymentStatus: .unknown, reference: reference, failureCode: code,
                failureMessage: message, eventKind: "paymentOutcomeUnknown")
        case .refused(let code, let message):
            return PaymentStep(
                orderStatus: .declined, paymentStatus: .declined, failureCode: code, failureMessage: message,
                eventKind: "paymentRefusedBeforeSending")
        }
    }
}
