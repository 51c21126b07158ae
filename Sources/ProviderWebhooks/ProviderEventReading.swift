import ApplePay
import Foundation
import MerchantCore

/// Reads each provider's webhook bodies (already verified) into ``MerchantCore/ProviderEvent``s. Events of other
/// types are not read (an empty list): the endpoint acknowledges them and changes nothing.
public enum ProviderEventReader {
    /// The metadata keys a Stripe object may carry our reference under, in this order.
    public static let stripeReferenceKeys = ["merchant_reference", "reference", "order_id", "transaction_id"]

    /// The events of one body. - Returns: `nil` when the body is not the provider's JSON shape.
    public static func events(_ provider: WebhookProvider, body: Data) -> [ProviderEvent]? {
        switch provider {
        case .stripe: return WebhookJSON.parse(body).flatMap(stripe)
        case .checkout: return WebhookJSON.parse(body).flatMap(checkout)
        case .adyen: return AdyenSignature.items(ofNotification: body).map { $0.compactMap(adyen) }
        }
    }

    /// A Stripe event: `payment_intent.succeeded` / `.payment_failed`, `refund.*` and `charge.refund.updated`
    /// (by the refund's status; `refund.failed` is a failure whatever it says), `charge.refunded` (each refund the
    /// charge lists), `charge.dispute.created`. A refund's `metadata.refund_key` is our refund key.
    static func stripe(_ event: JSONValue) -> [ProviderEvent]? {
        guard let id = event["id"]?.stringValue, let type = event["type"]?.stringValue,
            let object = event["data"]?["object"], case .object = object
        else { return nil }
        func reference(of object: JSONValue) -> String? {
            stripeReferenceKeys.lazy.compactMap { object["metadata"]?[$0]?.stringValue }.first
        }
        func make(
            _ kind: ProviderEvent.Kind, of object: JSONValue, payment: String?, own: String?, amount: JSONValue?,
            reason: String?, eventID: String = id
        ) -> ProviderEvent {
            ProviderEvent(
                provider: "stripe", id: eventID, kind: kind, merchantReference: reference(of: object),
                paymentReference: payment, reference: own, refundKey: object["metadata"]?["refund_key"]?.stringValue,
                amount: minorUnits(amount), currencyCode: object["currency"]?.stringValue?.uppercased(),
                reason: safeReason(reason))
        }
        /// A refund object's event, by its status: `nil` while it is pending (the final event follows).
        func refund(_ refund: JSONValue, failed: Bool, eventID: String) -> ProviderEvent? {
            guard refund["object"]?.stringValue == "refund" else { return nil }
            let kind: ProviderEvent.Kind
            switch refund["status"]?.stringValue {
            case _ where failed: kind = .refundFailed
            case "succeeded": kind = .refundSucceeded
            case "failed", "canceled": kind = .refundFailed
            default: return nil  // pending, requires_action
            }
            // A refund of a charge made without a PaymentIntent names only the charge.
            return make(
                kind, of: refund,
                payment: refund["payment_intent"]?.stringValue ?? refund["charge"]?.stringValue,
                own: refund["id"]?.stringValue, amount: refund["amount"],
                reason: refund["failure_reason"]?.stringValue, eventID: eventID)
        }
        let objectID = object["id"]?.stringValue
        switch type {
        case "payment_intent.succeeded":
            return [
                make(
                    .paymentSucceeded, of: object, payment: objectID, own: nil,
                    amount: object["amount_received"] ?? object["amount"], reason: nil)
            ]
        case "payment_intent.payment_failed":
            let error = object["last_payment_error"]
            return [
                make(
                    .paymentFailed, of: object, payment: objectID, own: nil, amount: object["amount"],
                    reason: error?["decline_code"]?.stringValue ?? error?["code"]?.stringValue)
            ]
        case "refund.created", "refund.updated", "refund.failed", "charge.refund.updated":
            return refund(object, failed: type == "refund.failed", eventID: id).map { [$0] } ?? []
        case "charge.refunded":
            // The charge lists its refunds when the API version includes them; each is its own event (one id per
            // refund, so a later `refund.updated` of the same refund is still applied).
            guard case .array(let refunds) = object["refunds"]?["data"] else { return [] }
            return refunds.compactMap { item in
                refund(item, failed: false, eventID: id + ":" + (item["id"]?.stringValue ?? ""))
            }
        case "charge.dispute.created":
            return [
                make(
                    .disputeOpened, of: object, payment: object["payment_intent"]?.stringValue, own: objectID,
                    amount: object["amount"], reason: object["reason"]?.stringValue)
            ]
        default:
            return []
        }
    }

    /// One Adyen notification item: `AUTHORISATION`, `REFUND` (by `success`), `REFUND_FAILED`, a successful
    /// `CANCEL_OR_REFUND`, `CANCELLATION` or `TECHNICAL_CANCEL` (a void), `CHARGEBACK` and
    /// `NOTIFICATION_OF_CHARGEBACK`. Adyen's duplicates share `eventCode`, `pspReference` and `success`.
    static func adyen(_ item: JSONValue) -> ProviderEvent? {
        guard let code = item["eventCode"]?.stringValue, let psp = item["pspReference"]?.stringValue else {
            return nil
        }
        let success = item["success"]?.stringValue == "true" || item["success"] == .bool(true)
        let original = item["originalReference"]?.stringValue
        let kind: ProviderEvent.Kind
        var payment = psp
        var own: String?
        var merchantReference = item["merchantReference"]?.stringValue
        var refundKey: String?
        switch code {
        case "AUTHORISATION": kind = success ? .paymentSucceeded : .paymentFailed
        case "REFUND", "REFUND_FAILED":
            kind = success && code == "REFUND" ? .refundSucceeded : .refundFailed
            payment = original ?? psp
            own = psp
            // A refund's merchantReference is the refund request's `reference`: our refund key, not the payment's.
            refundKey = merchantReference
            merchantReference = nil
        case "CANCEL_OR_REFUND", "CANCELLATION", "TECHNICAL_CANCEL":
            // A reversal (our void) decided: Adyen answers the request `received` and tells the outcome here
            // (https://docs.adyen.com/online-payments/reversal/). Its merchantReference is the request's own.
            guard success else { return nil }
            kind = .paymentVoided
            payment = original ?? psp
            own = psp
            merchantReference = nil
        case "CHARGEBACK", "NOTIFICATION_OF_CHARGEBACK":
            kind = .disputeOpened
            payment = original ?? psp
            own = psp
        default: return nil
        }
        // The reason of a success is not a reason (an authorisation's is "authCode:last four:expiry"): only a failure's.
        return ProviderEvent(
            provider: "adyen", id: "\(code):\(psp):\(success)", kind: kind,
            merchantReference: merchantReference, paymentReference: payment, reference: own, refundKey: refundKey,
            amount: minorUnits(item["amount"]?["value"]), currencyCode: item["amount"]?["currency"]?.stringValue,
            reason: success && kind != .disputeOpened ? nil : safeReason(item["reason"]?.stringValue))
    }

    /// Checkout.com's payment and refund outcomes by event type: the kind, whether it is a refund's (whose action
    /// is the event's own reference) and whether it is a decline (whose response summary is the reason).
    private static let checkoutOutcomes: [String: (kind: ProviderEvent.Kind, isRefund: Bool, declined: Bool)] = [
        "payment_approved": (.paymentSucceeded, false, false), "payment_captured": (.paymentSucceeded, false, false),
        "payment_declined": (.paymentFailed, false, true), "payment_refunded": (.refundSucceeded, true, false),
        "payment_refund_declined": (.refundFailed, true, true),
    ]

    /// A Checkout.com event: `payment_approved` / `payment_captured`, `payment_declined`, `payment_refunded`,
    /// `payment_refund_declined`, `payment_chargeback` and `dispute_evidence_required`.
    static func checkout(_ event: JSONValue) -> [ProviderEvent]? {
        guard let id = event["id"]?.stringValue, let type = event["type"]?.stringValue,
            let data = event["data"], case .object = data
        else { return nil }
        let dataID = data["id"]?.stringValue
        let action = data["action_id"]?.stringValue
        func make(
            _ kind: ProviderEvent.Kind, payment: String?, own: String?, reference: String?, refundKey: String? = nil,
            reason: String?
        ) -> [ProviderEvent] {
            [
                ProviderEvent(
                    provider: "checkout", id: id, kind: kind, merchantReference: reference, paymentReference: payment,
                    reference: own, refundKey: refundKey, amount: minorUnits(data["amount"]),
                    currencyCode: data["currency"]?.stringValue?.uppercased(), reason: safeReason(reason))
            ]
        }
        let reference = data["reference"]?.stringValue
        if let outcome = checkoutOutcomes[type] {
            // A refund's `reference` is the refund request's (our refund key); the payment's transaction id is in
            // the metadata when Checkout.com sends it.
            return make(
                outcome.kind, payment: dataID, own: outcome.isRefund ? action : nil,
                reference: outcome.isRefund ? data["metadata"]?["transaction_id"]?.stringValue : reference,
                refundKey: outcome.isRefund ? reference : nil,
                reason: outcome.declined ? data["response_summary"]?.stringValue : nil)
        }
        // One chargeback comes as `payment_chargeback` (the payment's id, the chargeback action's id) and as
        // `dispute_evidence_required` (the dispute's `dsp_` id, the payment's id): neither names the other's id, so
        // Checkout.com's disputes are recorded by the payment they are against, once each.
        switch type {
        case "payment_chargeback":
            return make(
                .disputeOpened, payment: dataID, own: dataID, reference: reference,
                reason: data["reason_code"]?.stringValue)
        case "dispute_evidence_required":
            let payment = data["payment_id"]?.stringValue
            return make(
                .disputeOpened, payment: payment, own: payment ?? dataID,
                reference: data["payment_reference"]?.stringValue, reason: data["reason_code"]?.stringValue)
        default:
            return []
        }
    }

    /// An amount in minor units (a JSON integer, or its text as Adyen sometimes sends it); `nil` when it is not a
    /// whole number from 0 to `Int64.max`.
    static func minorUnits(_ value: JSONValue?) -> Int64? {
        guard let minor = wholeNumber(value), minor >= 0 else { return nil }
        return minor
    }

    private static func wholeNumber(_ value: JSONValue?) -> Int64? {
        switch value {
        case .number(let number):
            var rounded = number
            var source = number
            NSDecimalRound(&rounded, &source, 0, .plain)
            guard rounded == number, let minor = Int64(exactly: NSDecimalNumber(decimal: number).int64Value),
                Decimal(minor) == number
            else { return nil }
            return minor
        case .string(let text): return Int64(text)
        default: return nil
        }
    }

    /// A provider's reason kept only as a short code of letters, spaces, dots, hyphens and underscores (no digits:
    /// nothing that could be a card number, expiry or authorisation code), at most 64 characters.
    static func safeReason(_ text: String?) -> String? {
        guard let text, !text.isEmpty, text.count <= 64,
            text.unicodeScalars.allSatisfy({
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || " ._-".unicodeScalars.contains($0)
            })
        else { return nil }
        return text
    }
}
