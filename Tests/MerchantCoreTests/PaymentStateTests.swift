import ApplePay
import Foundation
import Foundations
import MerchantCore
import Testing

/// ``PaymentStateMachine``: every transition of a payment's state, one case each (the pure rule; the stores' use of
/// it is tested in OrderStoreTests and ProviderEventStoreTests on SQLite and PostgreSQL).
@Suite("Payment state machine")
struct PaymentStateTests {
    /// One transition: from `status`, observing `finding` from `source`, the order ends `expected`
    /// (`nil`: unchanged), and a discrepancy is recorded when `discrepancy` is set (`corrected` or kept).
    struct Transition: Sendable, CustomTestStringConvertible {
        var status: OrderStatus
        var source: PaymentObservation.Source
        var finding: PaymentObservation.Finding
        var expected: OrderStatus?
        var discrepancy: Bool? = nil
        var refunded: Int64 = 0
        var eventKind: String? = nil

        var testDescription: String {
            let finding = PaymentStateMachine.name(self.finding)
            let end = expected.map(\.rawValue) ?? "unchanged"
            let note = discrepancy.map { $0 ? ", discrepancy corrected" : ", discrepancy kept" } ?? ""
            return "\(status.rawValue) + \(source.rawValue) \(finding) → \(end)\(note)"
        }
    }

    static let unknownAnswer = PaymentObservation.Finding.unknown(code: "processorTimeout", message: "no answer")
    static let refusedAnswer = PaymentObservation.Finding.refused(code: "processorECIRequired", message: "no ECI")

    static let transitions: [Transition] = [
        // In flight: the first thing seen moves it, whoever saw it.
        Transition(
            status: .pending, source: .answer, finding: .approved, expected: .paid, eventKind: "paymentApproved"),
        Transition(
            status: .pending, source: .answer, finding: .declined(.lostCard), expected: .declined,
            eventKind: "paymentDeclined"),
        Transition(
            status: .pending, source: .answer, finding: unknownAnswer, expected: .unknown,
            eventKind: "paymentOutcomeUnknown"),
        Transition(
            status: .pending, source: .answer, finding: .processing, expected: .processing,
            eventKind: "paymentProcessing"),
        // Refused by our connector before it sent anything: nothing charged, declined (the checkout unlocks).
        Transition(
            status: .pending, source: .answer, finding: refusedAnswer, expected: .declined,
            eventKind: "paymentRefusedBeforeSending"),
        Transition(
            status: .pending, source: .webhook, finding: .approved, expected: .paid, eventKind: "paymentReconciled"),
        Transition(
            status: .pending, source: .webhook, finding: .declined(.doNotHonor), expected: .declined,
            eventKind: "paymentReconciled"),
        // Unknown: anything the provider says is more certain; another unknown is not.
        Transition(
            status: .unknown, source: .lookUp, finding: .approved, expected: .paid, eventKind: "paymentReconciled"),
        Transition(
            status: .unknown, source: .lookUp, finding: .absent, expected: .declined, eventKind: "paymentReconciled"),
        Transition(status: .unknown, source: .lookUp, finding: .voided, expected: .voided),
        Transition(status: .unknown, source: .lookUp, finding: .processing, expected: .processing),
        Transition(status: .unknown, source: .answer, finding: unknownAnswer, expected: nil),
        // Processing (decided later): only a decision moves it; an unknown never undoes it.
        Transition(status: .processing, source: .answer, finding: unknownAnswer, expected: nil),
        Transition(status: .processing, source: .lookUp, finding: .processing, expected: nil),
        Transition(status: .processing, source: .webhook, finding: .approved, expected: .paid),
        Transition(status: .processing, source: .webhook, finding: .declined(.doNotHonor), expected: .declined),
        Transition(status: .processing, source: .lookUp, finding: .absent, expected: .declined),
        // Declined: the provider's capture is the truth about money, recorded as a discrepancy.
        Transition(
            status: .declined, source: .webhook, finding: .approved, expected: .paid, discrepancy: true,
            eventKind: "paymentCorrected"),
        Transition(status: .declined, source: .lookUp, finding: .approved, expected: .paid, discrepancy: true),
        Transition(status: .declined, source: .webhook, finding: .declined(.doNotHonor), expected: nil),
        Transition(status: .declined, source: .lookUp, finding: .absent, expected: nil),
        Transition(status: .declined, source: .answer, finding: unknownAnswer, expected: nil),
        Transition(status: .declined, source: .answer, finding: refusedAnswer, expected: nil),
        Transition(status: .declined, source: .lookUp, finding: .processing, expected: nil),
        // Captured: an approval is never undone by a later "declined" or "absent"; a person looks.
        Transition(status: .paid, source: .webhook, finding: .declined(.doNotHonor), expected: nil, discrepancy: false),
        Transition(status: .paid, source: .lookUp, finding: .absent, expected: nil, discrepancy: false),
        Transition(status: .paid, source: .answer, finding: .declined(.lostCard), expected: nil, discrepancy: false),
        Transition(status: .paid, source: .webhook, finding: .approved, expected: nil),
        Transition(status: .paid, source: .answer, finding: unknownAnswer, expected: nil),
        Transition(status: .paid, source: .answer, finding: refusedAnswer, expected: nil),
        Transition(status: .paid, source: .lookUp, finding: .processing, expected: nil),
        Transition(status: .paid, source: .lookUp, finding: .voided, expected: .voided, eventKind: "paymentVoided"),
        Transition(
            status: .partiallyRefunded, source: .lookUp, finding: .voided, expected: nil, discrepancy: false,
            refunded: 100),
        Transition(status: .partiallyRefunded, source: .webhook, finding: .approved, expected: nil, refunded: 100),
        Transition(
            status: .refunded, source: .webhook, finding: .declined(.doNotHonor), expected: nil, discrepancy: false),
        // Voided: an approval seen late is older news.
        Transition(status: .voided, source: .webhook, finding: .approved, expected: nil),
        Transition(status: .voided, source: .lookUp, finding: .absent, expected: nil),
    ]

    @Test("each transition", arguments: transitions)
    func transition(_ transition: Transition) {
        let observation = PaymentObservation(transition.source, transition.finding, reference: "ref")
        let merge = PaymentStateMachine.merge(observation, into: transition.status, refunded: transition.refunded)
        switch merge {
        case .unchanged:
            #expect(transition.expected == nil)
            #expect(transition.discrepancy == nil)
        case .moves(let step):
            #expect(step.orderStatus == transition.expected)
            #expect(transition.discrepancy == nil)
            // A look-up that found nothing, and a charge never sent, have no provider reference.
            let unreferenced: Bool =
                switch transition.finding {
                case .absent, .refused: true
                default: false
                }
            #expect(step.reference == (unreferenced ? nil : "ref"))
            if let kind = transition.eventKind { #expect(step.eventKind == kind) }
        case .disagrees(let discrepancy, let correction):
            #expect(discrepancy.corrected == transition.discrepancy)
            #expect(discrepancy.recorded == transition.status)
            #expect(discrepancy.provider == PaymentStateMachine.name(transition.finding))
            #expect(discrepancy.source == transition.source)
            #expect(correction?.orderStatus == transition.expected)
            if let kind = transition.eventKind { #expect(correction?.eventKind == kind) }
        }
    }

    @Test("every order status has a transition listed for every kind of finding it can meet")
    func coverage() {
        let covered = Set(Self.transitions.map(\.status))
        #expect(covered == Set(OrderStatus.allCases))
    }

    @Test("a more certain observation replaces a less certain one, never the reverse, whatever the order of arrival")
    func orderOfArrival() {
        let findings: [PaymentObservation.Finding] = [
            Self.unknownAnswer, .processing, .approved, .declined(.doNotHonor), .absent,
        ]
        // Any two observations of one payment, applied in either order, end in a state at least as certain as the
        // more certain of them; and an approval, once seen, is never left behind.
        for first in findings {
            for second in findings {
                for (a, b) in [(first, second), (second, first)] {
                    var status = OrderStatus.pending
                    for finding in [a, b] {
                        let merge = PaymentStateMachine.merge(PaymentObservation(.webhook, finding), into: status)
                        switch merge {
                        case .unchanged: break
                        case .moves(let step): status = step.orderStatus
                        case .disagrees(_, let correction): status = correction?.orderStatus ?? status
                        }
                    }
                    let certainty = max(a.certainty, b.certainty)
                    let reached: Int =
                        switch status {
                        case .pending: 0
                        case .unknown, .processing: 1
                        default: 2
                        }
                    #expect(reached >= certainty, "\(a) then \(b) ended \(status)")
                    if a == .approved || b == .approved { #expect(status == .paid, "\(a) then \(b) lost the approval") }
                }
            }
        }
    }

    @Test("observations read from a charge attempt and from a look-up")
    func observations() {
        #expect(
            PaymentObservation(attempt: .decided(.processing(reference: "pi_1")))
                == PaymentObservation(.answer, .processing, reference: "pi_1"))
        let lost = ProcessorError(.timeout, "no answer").referencing("pi_2")
        #expect(
            PaymentObservation(attempt: .unknown(lost))
                == PaymentObservation(
                    .answer, .unknown(code: "processorTimeout", message: "no answer"), reference: "pi_2"))
        #expect(PaymentObservation(.lookUp, charge: nil) == PaymentObservation(.lookUp, .absent))
        let refused = ProcessorError(.eciRequired, "no ECI").beforeSending()
        #expect(
            PaymentObservation(attempt: .refused(refused))
                == PaymentObservation(.answer, .refused(code: "processorECIRequired", message: "no ECI")))
        let refunded = ProcessorCharge(
            reference: "ch", idempotencyKey: "k", amount: Money(minorUnits: 100, currency: .usDollar),
            status: .partiallyRefunded)
        #expect(PaymentObservation(.lookUp, charge: refunded).finding == .approved)
    }
}
