import Foundation
import Foundations
import MerchantCore

/// The states a payment moves to, from a charge attempt or from the processor's ledger.
struct PaymentTransition {
    var orderStatus: OrderStatus
    var paymentStatus: PaymentStatus
    var reference: String?
    var failureCode: String?
    var failureMessage: String?
    var eventKind: String

    /// After a charge call: approved, declined, or unknown when no answer was seen.
    init(_ attempt: ChargeAttempt) {
        switch attempt {
        case .decided(.approved(let reference)):
            self.init(orderStatus: .paid, paymentStatus: .approved, reference: reference, eventKind: "paymentApproved")
        case .decided(.declined(let reason)):
            self.init(
                orderStatus: .declined, paymentStatus: .declined, failureCode: reason.code,
                eventKind: "paymentDeclined")
        case .unknown(let error):
            self.init(
                orderStatus: .unknown, paymentStatus: .unknown, reference: error.processorReference,
                failureCode: error.code.rawValue, failureMessage: error.message, eventKind: "paymentOutcomeUnknown")
        }
    }

    /// After a look-up: what the processor's ledger holds (`nil`: no charge, nothing was captured).
    init(settling charge: ProcessorCharge?) {
        guard let charge else {
            self.init(
                orderStatus: .declined, paymentStatus: .declined, failureCode: "processorHasNoCharge",
                failureMessage: "the processor has no charge for this payment: nothing was captured",
                eventKind: "paymentReconciled")
            return
        }
        switch charge.status {
        case .declined:
            self.init(
                orderStatus: .declined, paymentStatus: .declined, reference: charge.reference,
                failureCode: (charge.declineReason ?? .doNotHonor).code, eventKind: "paymentReconciled")
        case .voided:
            self.init(
                orderStatus: .voided, paymentStatus: .voided, reference: charge.reference,
                eventKind: "paymentReconciled")
        case .approved, .refunded, .partiallyRefunded:
            self.init(
                orderStatus: .paid, paymentStatus: .approved, reference: charge.reference,
                eventKind: "paymentReconciled")
        }
    }

    private init(
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
