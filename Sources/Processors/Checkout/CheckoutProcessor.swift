import ApplePay
import Foundation
import MerchantCore

/// Charges Apple Pay through Checkout.com's payments API (JSON, `Authorization: Bearer sk_…`), every charge,
/// refund and void with a `Cko-Idempotency-Key` derived from the payment's key.
///
/// - pass-through: `POST /tokens` (`type: applepay`, `token_data`: the token's `paymentData`; authenticated with the
///   public key, as Checkout.com asks), then `POST /payments` with `source: {type: token, token}`;
/// - decrypted: `POST /payments` with `source: {type: network_token, token_type: applepay, token, expiry_month,
///   expiry_year, cryptogram, eci}`. The spec's `PaymentRequestNetworkTokenSource` requires `eci`, and Checkout.com
///   says to send the cryptogram and the ECI of the Apple Pay token
///   (https://www.checkout.com/docs/payments/payment-methods/wallets/apple-pay/pay-with-a-pre-decrypted-apple-pay-token).
///   A token without an `eciIndicator` (typical of Mastercard) is refused before anything is sent
///   (``ProcessorError/Code/eciRequired``, ``ProcessorError/nothingWasSent``): no ECI is made up, and such cards
///   are paid in pass-through mode, where Checkout.com decrypts the token itself.
///
/// `reference` is the payment's key (cut to Checkout.com's 50 characters) and `metadata.transaction_id` the whole
/// key, so a webhook finds the payment. A `202` (`status: Pending`, "Payment asynchronous or further action
/// required" in Checkout.com's published spec, https://api-reference.checkout.com, `paths/payments.yaml` in
/// Tests/Fixtures/psp/checkout) is not a decline: the payment is `.processing` until its webhook (`payment_approved`,
/// `payment_declined`; `payment_pending` says only that it waits,
/// https://www.checkout.com/docs/previous/reporting-and-insights/webhooks/webhook-examples/payment_pending) or a
/// look-up decides it.
///
/// An answer lost is looked up (while Checkout.com keeps a key, 24 hours) with `GET /payments/{id}` when the id is
/// known, else `GET /payments?reference=REF` (the spec's "Get payment lists", matched on `metadata.transaction_id`
/// as well; `paths/payments.yaml`, `get`): `Pending` is still processing,
/// `Declined`, `Canceled` and `Expired` are declined, the others approved; no payment of the reference means nothing
/// was charged.
public struct CheckoutProcessor: PaymentProcessor {
    public let name = "checkout"
    public let connection: ProviderConnection
    /// `POST /tokens` takes the public key.
    let tokens: ProviderConnection?
    public let applePay: ApplePayHandling
    public let processingChannelID: String
    public static let keyLifetime: Duration = .seconds(24 * 3600)
    static let referenceLimit = 50
    static let keyLimit = 255
    private let recent = RecentCharges()

    public init(
        baseURL: URL, secretKey: String, publicKey: String?, processingChannelID: String, applePay: ApplePayHandling,
        timeout: Duration, proxy: String? = nil, trustedRootsPEM: Data? = nil
    ) {
        self.applePay = applePay
        self.processingChannelID = processingChannelID
        self.connection = ProviderConnection(
            provider: "checkout", baseURL: baseURL, credentials: [("Authorization", "Bearer " + secretKey)],
            idempotencyHeader: "Cko-Idempotency-Key", timeout: timeout, trustedRootsPEM: trustedRootsPEM,
            proxy: proxy)
        self.tokens = publicKey.map {
            ProviderConnection(
                provider: "checkout", baseURL: baseURL, credentials: [("Authorization", "Bearer " + $0)],
                idempotencyHeader: "Cko-Idempotency-Key", timeout: timeout, trustedRootsPEM: trustedRootsPEM,
                proxy: proxy)
        }
    }

    public var unknownOutcomes: UnknownOutcomeResolution { .lookUp(keyLifetime: Self.keyLifetime) }

    public func charge(_ request: ChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        let source: [String: Any]
        switch applePay {
        case .passThrough:
            source = ["type": "token", "token": try await token(for: try request.sealed(for: name))]
        case .decrypted:
            guard let secure = request.token.threeDSecure else {
                throw ProcessorError(.invalidRequest, "checkout takes 3-D Secure Apple Pay tokens only (not EMV)")
                    .beforeSending()
            }
            guard let eci = secure.eci, !eci.isEmpty else {
                throw ProcessorError(
                    .eciRequired,
                    "checkout.com needs the token's ECI for a decrypted network token, and this "
                        + "\(request.token.network ?? "card") Apple Pay token has none: nothing was sent. Pay such "
                        + "cards in pass-through mode (processor.applePay \"passThrough\"), where Checkout.com "
                        + "decrypts the token itself"
                ).beforeSending()
            }
            let expiry = request.token.expiry
            source = [
                "type": "network_token", "token_type": "applepay", "token": request.token.primaryAccountNumber,
                "expiry_month": Int(expiry.month) ?? 0, "expiry_year": Int(expiry.year) ?? 0,
                "cryptogram": secure.cryptogram, "eci": eci,
            ]
        }
        var body = paymentBody(key: request.idempotencyKey, amount: request.amount)
        body["source"] = source
        if request.storePaymentMethod { body["payment_type"] = "Recurring" }
        return try await pay(try ProviderConnection.json(body), key: request.idempotencyKey, amount: request.amount)
    }

    public func charge(lookingUp payment: ChargeLookup) async throws(ProcessorError) -> ProcessorCharge? {
        let key = payment.idempotencyKey
        let details: JSONObject
        if let id = payment.processorReference, id.hasPrefix("pay_") {
            let answer = try await connection.send(
                "GET", "/payments/\(ProviderKeys.pathSegment(id))", what: "payment look-up")
            guard answer.status == 200, let object = answer.object else {
                throw Self.refusal(answer, what: "payment look-up")
            }
            details = object
        } else {
            guard let found = try await self.payment(reference: key) else { return nil }  // none: nothing was charged
            details = found
        }
        guard let id = details.string("id") else {
            throw ProcessorError(.invalidAnswer, "checkout's payment look-up answer has no id")
        }
        let outcome: ChargeOutcome
        switch details.string("status") {
        case "Pending": outcome = .processing(reference: id)
        case "Declined", "Canceled", "Expired":
            outcome = .declined(.provider(details.string("response_code") ?? details.string("status")))
        case .some:
            outcome = details.bool("approved") == false ? .declined(.doNotHonor) : .approved(reference: id)
        case nil:
            throw ProcessorError(.invalidAnswer, "checkout's payment look-up answer has no status")
        }
        keep(outcome, id: id, key: key, amount: payment.amount, source: details.object("source"))
        guard var charge = recent.charge(key) else { return nil }
        // Voided since (in the dashboard, say): the charge as it is now, not merely approved.
        if details.string("status") == "Voided" { charge.status = .voided }
        return charge
    }

    /// `GET /payments?reference=` ("Get payment lists"): the one payment made with our key, or `nil` when there is
    /// none. The reference is cut to 50 characters: the whole key is matched in the metadata.
    private func payment(reference key: String) async throws(ProcessorError) -> JSONObject? {
        var query = URLComponents()
        query.queryItems = [URLQueryItem(name: "reference", value: String(key.prefix(Self.referenceLimit)))]
        let answer = try await connection.send(
            "GET", "/payments?" + (query.percentEncodedQuery ?? ""), what: "payment look-up")
        guard answer.status == 200, let page = answer.object else {
            throw Self.refusal(answer, what: "payment look-up")
        }
        let mine = page.objects("data").filter {
            $0.object("metadata")?.string("transaction_id").map { $0 == key } ?? true
        }
        guard mine.count <= 1 else {
            throw ProcessorError(.invalidAnswer, "checkout has \(mine.count) payments of one reference")
        }
        return mine.first
    }

    public func charge(idempotencyKey: String) async throws(ProcessorError) -> ProcessorCharge? {
        if let charge = recent.charge(idempotencyKey) { return charge }
        throw ProcessorError(.lookUpUnavailable, "checkout looks a payment up by its amount too (charge(lookingUp:))")
    }

    public func void(reference: String) async throws(ProcessorError) -> ProcessorCharge {
        let data = try ProviderConnection.json(["reference": String(reference.prefix(Self.referenceLimit))])
        // A 403 here is Checkout.com's "Void not allowed" (https://api-reference.checkout.com,
        // `paths/payments@{id}@voids.yaml`; bad credentials are its 401), not refused credentials.
        let answer = try await connection.send(
            "POST", "/payments/\(ProviderKeys.pathSegment(reference))/voids", body: .json(data),
            idempotencyKey: ProviderKeys.key(reference, purpose: "void", limit: Self.keyLimit), forbidden: .refusal,
            what: "void")
        guard answer.status == 202 || answer.status == 200 else {
            if answer.status == 403 || answer.status == 422 {
                throw ProcessorError(
                    .notVoidable, "checkout refused the void (\(answer.errorCode ?? "\(answer.status)"))")
            }
            throw Self.refusal(answer, what: "void")
        }
        return ProcessorCharge(
            reference: reference, idempotencyKey: "", amount: .zero(.usDollar), status: .voided)
    }

    public func refund(reference: String, amount: Money, idempotencyKey: String) async throws(ProcessorError)
        -> ProcessorRefund
    {
        let data = try ProviderConnection.json([
            "amount": amount.minorUnits, "reference": String(idempotencyKey.prefix(Self.referenceLimit)),
        ])
        // A 403 here is "Refund not allowed" (`paths/payments@{id}@refunds.yaml`): refused, not bad credentials.
        let answer = try await connection.send(
            "POST", "/payments/\(ProviderKeys.pathSegment(reference))/refunds", body: .json(data),
            idempotencyKey: ProviderKeys.key(idempotencyKey, purpose: "refund", limit: Self.keyLimit),
            forbidden: .refusal, what: "refund")
        guard answer.status == 202 || answer.status == 200, let action = answer.object?.string("action_id") else {
            throw Self.refusal(answer, what: "refund")
        }
        // `202 Refund accepted` (https://api-reference.checkout.com, `paths/payments@{id}@refunds.yaml`): taken;
        // the `payment_refunded` or `payment_refund_declined` webhook decides it.
        return .accepted(
            action, ofCharge: reference, amount: amount, idempotencyKey: idempotencyKey, isPending: answer.status == 202
        )
    }

    public func charge(storedMethod request: StoredMethodChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        var body = paymentBody(key: request.idempotencyKey, amount: request.amount)
        body["source"] = ["type": "id", "id": request.paymentMethodReference]
        body["payment_type"] = "Recurring"
        body["merchant_initiated"] = true
        return try await pay(try ProviderConnection.json(body), key: request.idempotencyKey, amount: request.amount)
    }

    /// `GET /payments/pay_…` of no payment: 404 with the key accepted, 401 without.
    public func checkCredentials() async throws(ProcessorError) {
        let answer = try await connection.send(
            "GET", "/payments/pay_aaaaaaaaaaaaaaaaaaaaaaaaaa", what: "credentials check")
        guard answer.status == 404 || (200..<300).contains(answer.status) else {
            throw Self.refusal(answer, what: "credentials check")
        }
    }

    // MARK: - Steps

    private func paymentBody(key: String, amount: Money) -> [String: Any] {
        [
            "amount": amount.minorUnits, "currency": amount.currency.code, "capture": true,
            "reference": String(key.prefix(Self.referenceLimit)), "processing_channel_id": processingChannelID,
            "metadata": ["transaction_id": key],
        ]
    }

    private func token(for sealed: SealedApplePayToken) async throws(ProcessorError) -> String {
        guard let tokens else {
            throw ProcessorError(.invalidRequest, "checkout in passThrough mode needs processor.publicKeyFile")
        }
        let data = try ProviderConnection.json([
            "type": "applepay",
            "token_data": [
                "version": sealed.version, "data": sealed.data, "signature": sealed.signature, "header": sealed.header,
            ],
        ])
        let answer = try await tokens.send("POST", "/tokens", body: .json(data), what: "Apple Pay token")
        guard answer.status == 201 || answer.status == 200, let token = answer.object?.string("token") else {
            throw Self.refusal(answer, what: "Apple Pay token")
        }
        return token
    }

    private func pay(_ data: Data, key: String, amount: Money) async throws(ProcessorError) -> ChargeOutcome {
        let answer = try await connection.send(
            "POST", "/payments", body: .json(data), idempotencyKey: ProviderKeys.key(key, limit: Self.keyLimit),
            what: "payment")
        guard answer.status == 201 || answer.status == 202 || answer.status == 200, let payment = answer.object else {
            throw Self.refusal(answer, what: "payment")
        }
        guard let id = payment.string("id") else {
            throw ProcessorError(.invalidAnswer, "checkout's payment answer has no id")
        }
        let outcome: ChargeOutcome
        if payment.bool("approved") == true {
            outcome = .approved(reference: id)
        } else if answer.status == 202 || payment.string("status") == "Pending" {
            // Asynchronous (spec: "Payment asynchronous or further action required"): decided later, by the
            // webhook or a look-up; never a decline.
            outcome = .processing(reference: id)
        } else {
            outcome = .declined(.provider(payment.string("response_code") ?? payment.string("status")))
        }
        keep(outcome, id: id, key: key, amount: amount, source: payment.object("source"))
        return outcome
    }

    private func keep(_ outcome: ChargeOutcome, id: String, key: String, amount: Money, source: JSONObject?) {
        var status = ProcessorChargeStatus.approved
        var reason: DeclineReason?
        switch outcome {
        case .approved: break
        case .declined(let why):
            status = .declined
            reason = why
        case .processing: status = .processing
        }
        recent.keep(
            ProcessorCharge(
                reference: id, idempotencyKey: key, amount: amount, status: status, declineReason: reason,
                paymentMethodReference: status == .approved ? source?.string("id") : nil))
    }

    /// A 4xx that is not a decline: Checkout.com's `error_type` and first `error_codes` (never card data).
    static func refusal(_ answer: ProviderAnswer, what: String) -> ProcessorError {
        let code = answer.errorCode ?? "status \(answer.status)"
        switch answer.status {
        case 403: return ProcessorError(.invalidRequest, "checkout does not allow the \(what) (403 \(code))")
        case 404: return ProcessorError(.chargeNotFound, "checkout has no such payment for the \(what)")
        case 409: return ProcessorError(.serverError, "checkout is still answering an earlier \(what) with this key")
        default:
            if code.contains("refund_amount_exceeds_balance") || code.contains("amount_exceeds_balance") {
                return ProcessorError(.refundExceedsCharge, "checkout refused the \(what) (\(code))")
            }
            return ProcessorError(.invalidRequest, "checkout refused the \(what) (\(answer.status) \(code))")
        }
    }
}

extension CheckoutProcessor: ProviderStatements {
    /// Each order's payment by its reference (`GET /payments?reference=`: Checkout.com lists payments by reference,
    /// not by date), and what its approved refunds gave back (`GET /payments/{id}/actions`). Only what was asked about is listed: a
    /// payment made without an order of ours is not found this way.
    public func statement(since: Date, until: Date, orders: [Order]) async throws(ProcessorError) -> ProviderStatement {
        var entries: [ProviderStatementEntry] = []
        for order in orders {
            guard let payment = try await payment(reference: order.payment.transactionID) else { continue }
            guard let id = payment.string("id"), let amount = payment.integer("amount"),
                let currency = payment.string("currency")
            else { throw ProcessorError(.invalidAnswer, "checkout listed a payment without id, amount or currency") }
            // Approved with `capture: true` is captured by Checkout.com shortly after (`Authorized`, then
            // `Captured`): both count, as the look-up counts them.
            let undecided = ["Pending", "Declined", "Canceled", "Expired", "Voided", "Card Verified"]
            let captured = payment.bool("approved") != false && !undecided.contains(payment.string("status") ?? "")
            entries.append(
                ProviderStatementEntry(
                    reference: id, merchantReference: order.payment.transactionID, amount: amount,
                    currencyCode: currency.uppercased(), captured: captured,
                    refunded: captured ? try await refunded(payment: id) : 0))
        }
        return ProviderStatement(entries: entries, listsEveryPayment: false)
    }

    /// The sum of the payment's approved `Refund` actions (a refund still being processed is not one yet).
    private func refunded(payment id: String) async throws(ProcessorError) -> Int64 {
        try await actions(payment: id).filter { $0.string("type") == "Refund" && $0.bool("approved") == true }
            .reduce(0) { $0 + ($1.integer("amount") ?? 0) }
    }

    /// `GET /payments/{id}/actions` ("Get payment actions"): the payment's authorization, captures, refunds, voids.
    private func actions(payment id: String) async throws(ProcessorError) -> [JSONObject] {
        let answer = try await connection.send(
            "GET", "/payments/\(ProviderKeys.pathSegment(id))/actions", what: "payment actions")
        guard answer.status == 200,
            let actions = (try? JSONSerialization.jsonObject(with: answer.body)) as? [[String: Any]]
        else { throw Self.refusal(answer, what: "payment actions") }
        return actions.map(JSONObject.init)
    }

    /// The refund's action among the payment's: approved, succeeded; refused, failed; not listed yet, still being
    /// processed (Checkout.com answered the refund `202 Accepted`).
    public func refundStatus(reference: String, charge: String) async throws(ProcessorError) -> RefundRecord.Status {
        guard let action = try await actions(payment: charge).first(where: { $0.string("id") == reference }) else {
            return .pending
        }
        return action.bool("approved") == true ? .succeeded : .failed
    }
}
