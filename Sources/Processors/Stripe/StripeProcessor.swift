import ApplePay
import Foundation
import HTTPClient
import MerchantCore
import Synchronization

/// Charges Apple Pay through Stripe's PaymentIntents API (form-encoded, `Authorization: Bearer sk_…`).
///
/// A charge is three to five requests, each with an `Idempotency-Key` derived from the payment's key:
/// 0. for a charge that keeps its method (``ChargeRequest/storePaymentMethod``, a plan's first payment) only,
///    `POST /v1/customers` (`metadata[transaction_id]`, key `customer-K`): Stripe reuses a PaymentMethod only once
///    it is attached to a Customer (https://docs.stripe.com/payments/save-during-payment,
///    https://docs.stripe.com/api/customers/create);
/// 1. `POST /v1/payment_intents` (amount, currency, `payment_method_types[]=card`, `metadata[transaction_id]`; and
///    for a kept method `customer` and `setup_future_usage=off_session`, so that the confirmation attaches the
///    method to the Customer), key `K`: made only from what the order records, so the reconciler can send it again
///    later;
/// 2. `POST /v1/tokens` (key `token-K`): pass-through with `pk_token`; decrypted with the device PAN as a network
///    token (`card[number]`, expiry, `card[tokenization_method]=apple_pay`, `card[cryptogram]`, `card[eci]`); then
///    `POST /v1/payment_methods` with `card[token]` (key `method-K`);
/// 3. `POST /v1/payment_intents/{id}/confirm` with the method (key `confirm-K`).
///
/// `processing` after the confirmation is not a decline: the payment is `.processing` until its webhook
/// (`payment_intent.succeeded` / `.payment_failed`) or a look-up decides it.
///
/// An answer lost at any step is settled by reading the PaymentIntent's current state with `GET
/// /v1/payment_intents/{id}`. The id is the one recorded with the unknown payment (``ProcessorError/referencing(_:)``)
/// when step 1 was answered; otherwise step 1 is sent again with key `K` only to learn the id: Stripe answers a
/// repeated key with the first answer it saved (https://docs.stripe.com/idempotency), the PaymentIntent as it was
/// created, so its status there is never read. (Search, `GET /v1/payment_intents/search`, is not used: Stripe says
/// not to use it for read-after-write flows, https://docs.stripe.com/search.) From the current
/// state: `succeeded` is approved, `processing` still processing, a `last_payment_error` declined, `canceled`
/// nothing charged; never confirmed is cancelled (so nothing can charge it later) and counts as nothing charged
/// only once Stripe cancelled it; a cancel refused because it was confirmed meanwhile reads it again.
///
/// A renewal (``charge(storedMethod:)``) is one `POST /v1/payment_intents` with `customer`, `payment_method`,
/// `off_session=true` and `confirm=true`: the saved Customer charged without the customer present. The Customer's
/// id comes with the first charge (``ProcessorCharge/customerReference``) and is kept with the subscription.
///
/// Every request pins `Stripe-Version` to the version of the spec the connector is tested against
/// (Tests/Fixtures/psp/stripe, `info.version`): Stripe recommends naming the version on each request rather than
/// relying on the account's default (https://docs.stripe.com/upgrades).
public struct StripeProcessor: PaymentProcessor {
    public let name = "stripe"
    public let connection: ProviderConnection
    public let applePay: ApplePayHandling
    /// Stripe keeps an idempotency key at least 24 hours.
    public static let keyLifetime: Duration = .seconds(24 * 3600)
    /// Stripe's longest idempotency key.
    static let keyLimit = 255
    /// The API version every request pins in `Stripe-Version` (https://docs.stripe.com/upgrades): the version of
    /// Stripe's published spec the fake validates against (spec3 `info.version`).
    public static let apiVersion = "2023-08-16"
    private let recent = RecentCharges()

    public init(
        baseURL: URL, secretKey: String, applePay: ApplePayHandling, timeout: Duration, proxy: String? = nil,
        trustedRootsPEM: Data? = nil
    ) {
        self.applePay = applePay
        self.connection = ProviderConnection(
            provider: "stripe", baseURL: baseURL, credentials: [("Authorization", "Bearer " + secretKey)],
            headers: [("Stripe-Version", Self.apiVersion)], idempotencyHeader: "Idempotency-Key", timeout: timeout,
            trustedRootsPEM: trustedRootsPEM, proxy: proxy)
    }

    public var unknownOutcomes: UnknownOutcomeResolution { .lookUp(keyLifetime: Self.keyLifetime) }

    public func charge(_ request: ChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        let key = request.idempotencyKey
        let customer = request.storePaymentMethod ? try await createCustomer(key: key) : nil
        let intent = try await createIntent(key: key, amount: request.amount, customer: customer)
        if let decided = Self.decided(intent) {
            return remember(intent, key: key, amount: request.amount, decided)
        }
        // From here the PaymentIntent's id is known: an answer lost later is recorded with it.
        let id = try Self.identifier(intent)
        do {
            return try await confirm(intent: id, request)
        } catch {
            throw error.referencing(id)
        }
    }

    /// Steps 2 and 3: the payment method, then the confirmation.
    private func confirm(intent id: String, _ request: ChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        let key = request.idempotencyKey
        let method = try await paymentMethod(for: request)
        var confirm = FormBody()
        confirm.add("payment_method", method)
        let answer = try await connection.send(
            "POST", "/v1/payment_intents/\(ProviderKeys.pathSegment(id))/confirm", body: .form(confirm),
            idempotencyKey: derived(key, "confirm"), what: "confirmation")
        let intent = try Self.intent(from: answer, what: "confirmation")
        guard let decided = Self.decided(intent) else {
            throw ProcessorError(
                .invalidAnswer, "stripe left the PaymentIntent \(intent.string("status") ?? "?") after confirmation")
        }
        return remember(intent, key: key, amount: request.amount, decided)
    }

    public func charge(lookingUp payment: ChargeLookup) async throws(ProcessorError) -> ProcessorCharge? {
        let key = payment.idempotencyKey
        let id: String
        if let known = payment.processorReference, known.hasPrefix("pi_") {
            id = known
        } else {
            // Step 1 again, for the id only: the answer is the one Stripe saved first (the PaymentIntent as created,
            // https://docs.stripe.com/idempotency), so its status says nothing about now. A plan's payment named its
            // Customer: the same one, answered again under its key, so that the request is the same.
            let customer = payment.keepsPaymentMethod ? try await createCustomer(key: key) : nil
            id = try Self.identifier(try await createIntent(key: key, amount: payment.amount, customer: customer))
        }
        var intent = try await retrieve(id)
        var cancelSent = false
        while true {
            if let decided = Self.decided(intent) {
                _ = remember(intent, key: key, amount: payment.amount, decided)
                return recent.charge(key)
            }
            let status = intent.string("status") ?? "?"
            if status == "canceled" { return nil }
            guard !cancelSent, status == "requires_payment_method" || status == "requires_confirmation" else {
                throw ProcessorError(.invalidAnswer, "stripe's PaymentIntent is \(status): looked up again later")
            }
            // Never confirmed, read from its current state: cancelled, so that nothing can charge it later.
            cancelSent = true
            var body = FormBody()
            body.add("cancellation_reason", "abandoned")
            let answer = try await connection.send(
                "POST", "/v1/payment_intents/\(ProviderKeys.pathSegment(id))/cancel", body: .form(body),
                idempotencyKey: derived(key, "cancel"), what: "cancellation of an unconfirmed payment")
            if answer.status == 400, answer.errorCode == "payment_intent_unexpected_state" {
                // Stripe cancels only what is not confirmed (https://docs.stripe.com/api/payment_intents/cancel):
                // confirmed meanwhile, so its state is read again.
                intent = try await retrieve(id)
            } else {
                intent = try Self.intent(from: answer, what: "cancellation")
                if intent.string("status") == "canceled" { return nil }
            }
        }
    }

    /// `GET /v1/payment_intents/{id}`: the PaymentIntent as it is now.
    private func retrieve(_ id: String) async throws(ProcessorError) -> JSONObject {
        let answer = try await connection.send(
            "GET", "/v1/payment_intents/\(ProviderKeys.pathSegment(id))", what: "payment look-up")
        return try Self.intent(from: answer, what: "payment look-up")
    }

    public func charge(idempotencyKey: String) async throws(ProcessorError) -> ProcessorCharge? {
        if let charge = recent.charge(idempotencyKey) { return charge }
        throw ProcessorError(.lookUpUnavailable, "stripe looks a payment up by its amount too (charge(lookingUp:))")
    }

    public func void(reference: String) async throws(ProcessorError) -> ProcessorCharge {
        var body = FormBody()
        body.add("cancellation_reason", "requested_by_customer")
        let answer = try await connection.send(
            "POST", "/v1/payment_intents/\(ProviderKeys.pathSegment(reference))/cancel", body: .form(body),
            idempotencyKey: ProviderKeys.key(reference, purpose: "void", limit: Self.keyLimit), what: "void")
        if answer.status == 400 {
            throw ProcessorError(
                .notVoidable, "stripe cancels only uncaptured payments (\(answer.errorCode ?? "400")): refund it")
        }
        let intent = try Self.intent(from: answer, what: "void")
        guard intent.string("status") == "canceled" else {
            throw ProcessorError(.notVoidable, "stripe did not cancel the payment")
        }
        return try Self.charge(intent, key: "", status: .voided)
    }

    public func refund(reference: String, amount: Money, idempotencyKey: String) async throws(ProcessorError)
        -> ProcessorRefund
    {
        var body = FormBody()
        body.add("payment_intent", reference)
        body.add("amount", String(amount.minorUnits))
        body.add("metadata[refund_key]", idempotencyKey)
        let answer = try await connection.send(
            "POST", "/v1/refunds", body: .form(body),
            idempotencyKey: ProviderKeys.key(idempotencyKey, purpose: "refund", limit: Self.keyLimit), what: "refund")
        guard (200..<300).contains(answer.status), let refund = answer.object, let id = refund.string("id") else {
            throw Self.refusal(answer, what: "refund")
        }
        guard refund.string("status") != "failed", refund.string("status") != "canceled" else {
            throw ProcessorError(
                .invalidRequest, "stripe failed the refund (\(refund.string("failure_reason") ?? "?"))")
        }
        // `pending` (and `requires_action`): taken, decided later by `refund.updated` / `refund.failed` (a card
        // refund is pending, succeeded or failed:
        // https://stripe.dev/stripe-terminal-java/external/com.stripe.stripeterminal.external.models/-refund/status.html).
        let pending = refund.string("status") == "pending" || refund.string("status") == "requires_action"
        return .accepted(
            id, ofCharge: reference, amount: amount, idempotencyKey: idempotencyKey, isPending: pending)
    }

    /// The saved Customer charged off-session (https://docs.stripe.com/payments/save-during-payment: `customer`,
    /// `payment_method`, `off_session=true`, `confirm=true`). A subscription kept before Customers were made has
    /// none, and Stripe refuses to reuse its method.
    public func charge(storedMethod request: StoredMethodChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        var body = FormBody()
        body.add("amount", String(request.amount.minorUnits))
        body.add("currency", request.amount.currency.code.lowercased())
        if let customer = request.customerReference { body.add("customer", customer) }
        body.add("payment_method", request.paymentMethodReference)
        body.add("payment_method_types[0]", "card")
        body.add("confirm", "true")
        body.add("off_session", "true")
        body.add("metadata[transaction_id]", request.idempotencyKey)
        let answer = try await connection.send(
            "POST", "/v1/payment_intents", body: .form(body),
            idempotencyKey: ProviderKeys.key(request.idempotencyKey, limit: Self.keyLimit),
            what: "merchant-initiated charge")
        let intent = try Self.intent(from: answer, what: "merchant-initiated charge")
        guard let decided = Self.decided(intent) else {
            throw ProcessorError(.invalidAnswer, "stripe left the merchant-initiated PaymentIntent unconfirmed")
        }
        return remember(intent, key: request.idempotencyKey, amount: request.amount, decided)
    }

    /// `GET /v1/payment_intents?limit=1`: the cheapest authenticated call.
    public func checkCredentials() async throws(ProcessorError) {
        let answer = try await connection.send("GET", "/v1/payment_intents?limit=1", what: "credentials check")
        guard (200..<300).contains(answer.status) else { throw Self.refusal(answer, what: "credentials check") }
    }

    // MARK: - Steps

    /// Step 0 of a charge that keeps its method: the Customer it is attached to, made only from the key (the same
    /// request whenever it is sent, so Stripe answers it again with the same Customer).
    private func createCustomer(key: String) async throws(ProcessorError) -> String {
        var body = FormBody()
        body.add("metadata[transaction_id]", key)
        let answer = try await connection.send(
            "POST", "/v1/customers", body: .form(body), idempotencyKey: derived(key, "customer"),
            what: "customer for the kept payment method")
        guard (200..<300).contains(answer.status), let object = answer.object else {
            throw Self.refusal(answer, what: "customer for the kept payment method")
        }
        guard object.string("object") == "customer", let id = object.string("id"), !id.isEmpty else {
            throw ProcessorError(.invalidAnswer, "stripe's customer answer is not a Customer")
        }
        return id
    }

    /// Step 1, made only from the key, the amount and the Customer of a kept method: the same request whenever it
    /// is sent.
    private func createIntent(key: String, amount: Money, customer: String?) async throws(ProcessorError)
        -> JSONObject
    {
        var body = FormBody()
        body.add("amount", String(amount.minorUnits))
        body.add("currency", amount.currency.code.lowercased())
        if let customer {
            body.add("customer", customer)
            body.add("setup_future_usage", "off_session")
        }
        body.add("payment_method_types[0]", "card")
        body.add("metadata[transaction_id]", key)
        let answer = try await connection.send(
            "POST", "/v1/payment_intents", body: .form(body),
            idempotencyKey: ProviderKeys.key(key, limit: Self.keyLimit),
            what: "payment creation")
        return try Self.intent(from: answer, what: "payment creation")
    }

    /// Step 2: the PaymentMethod the confirmation charges.
    private func paymentMethod(for request: ChargeRequest) async throws(ProcessorError) -> String {
        let key = request.idempotencyKey
        var method = FormBody()
        method.add("type", "card")
        switch applePay {
        case .passThrough:
            let sealed = try request.sealed(for: name)
            var token = FormBody()
            token.add("pk_token", sealed.paymentDataJSON)
            token.add("pk_token_instrument_name", sealed.displayName)
            token.add("pk_token_payment_network", sealed.network)
            token.add("pk_token_transaction_id", sealed.transactionIdentifier)
            let answer = try await connection.send(
                "POST", "/v1/tokens", body: .form(token), idempotencyKey: derived(key, "token"),
                what: "Apple Pay token")
            guard (200..<300).contains(answer.status), let id = answer.object?.string("id") else {
                throw Self.refusal(answer, what: "Apple Pay token")
            }
            method.add("card[token]", id)
        case .decrypted:
            // The device PAN is a network token, never a plain card number: a card token with
            // `tokenization_method=apple_pay` and the cryptogram and ECI we decrypted, as ActiveMerchant's Stripe
            // Payment Intents gateway sends a merchant-decrypted Apple Pay token (`tokenize_apple_google`,
            // https://github.com/activemerchant/active_merchant/blob/master/lib/active_merchant/billing/gateways/stripe_payment_intents.rb).
            guard let secure = request.token.threeDSecure else {
                throw ProcessorError(.invalidRequest, "stripe takes 3-D Secure Apple Pay tokens only (not EMV)")
            }
            let expiry = request.token.expiry
            var token = FormBody()
            token.add("card[number]", request.token.primaryAccountNumber)
            token.add("card[exp_month]", String(Int(expiry.month) ?? 0))
            token.add("card[exp_year]", expiry.year)
            token.add("card[tokenization_method]", "apple_pay")
            token.add("card[cryptogram]", secure.cryptogram)
            token.add("card[eci]", secure.eci)
            let answer = try await connection.send(
                "POST", "/v1/tokens", body: .form(token), idempotencyKey: derived(key, "token"),
                what: "Apple Pay network token")
            guard (200..<300).contains(answer.status), let id = answer.object?.string("id") else {
                throw Self.refusal(answer, what: "Apple Pay network token")
            }
            method.add("card[token]", id)
        }
        method.add("metadata[transaction_id]", key)
        let answer = try await connection.send(
            "POST", "/v1/payment_methods", body: .form(method), idempotencyKey: derived(key, "method"),
            what: "payment method")
        guard (200..<300).contains(answer.status), let id = answer.object?.string("id") else {
            throw Self.refusal(answer, what: "payment method")
        }
        return id
    }

    private func derived(_ key: String, _ purpose: String) -> String {
        ProviderKeys.key(key, purpose: purpose, limit: Self.keyLimit)
    }

    private func remember(_ intent: JSONObject, key: String, amount: Money, _ outcome: ChargeOutcome) -> ChargeOutcome {
        let status: ProcessorChargeStatus
        var reason: DeclineReason?
        switch outcome {
        case .approved: status = .approved
        case .declined(let why):
            status = .declined
            reason = why
        case .processing: status = .processing
        }
        recent.keep(
            ProcessorCharge(
                reference: intent.string("id") ?? "", idempotencyKey: key, amount: amount, status: status,
                declineReason: reason,
                paymentMethodReference: status == .approved ? intent.string("payment_method") : nil,
                customerReference: status == .approved ? intent.string("customer") : nil))
        return outcome
    }

    // MARK: - Answers

    /// The outcome a PaymentIntent has decided, or `nil` while it has none.
    static func decided(_ intent: JSONObject) -> ChargeOutcome? {
        switch intent.string("status") {
        case "succeeded", "requires_capture":
            return .approved(reference: intent.string("id") ?? "")
        case "requires_action":
            // Stripe wants the customer (3-D Secure): not possible for a server payment.
            return .declined(DeclineReason(code: "authenticationRequired"))
        case "processing":
            // Taken, decided later (https://docs.stripe.com/docs/payments/paymentintents/lifecycle): not a decline.
            return .processing(reference: intent.string("id") ?? "")
        case "requires_payment_method":
            guard let error = intent.object("last_payment_error") else { return nil }
            return .declined(.provider(error.string("decline_code") ?? error.string("code")))
        default:
            return nil
        }
    }

    /// The PaymentIntent of a 2xx answer, or of a 402 card error (a decline); anything else is a refusal.
    static func intent(from answer: ProviderAnswer, what: String) throws(ProcessorError) -> JSONObject {
        if (200..<300).contains(answer.status), let object = answer.object, object.string("object") == "payment_intent"
        {
            return object
        }
        if answer.status == 402, let error = answer.object?.object("error") {
            if let intent = error.object("payment_intent"), intent.object("last_payment_error") != nil {
                return intent
            }
            // A card error without its PaymentIntent: declined all the same.
            var members = error.object("payment_intent")?.members ?? [:]
            members["status"] = "requires_payment_method"
            members["last_payment_error"] = error.members
            return JSONObject(members)
        }
        if (200..<300).contains(answer.status) {
            throw ProcessorError(.invalidAnswer, "stripe's \(what) answer is not a PaymentIntent")
        }
        throw refusal(answer, what: what)
    }

    static func identifier(_ intent: JSONObject) throws(ProcessorError) -> String {
        guard let id = intent.string("id"), !id.isEmpty else {
            throw ProcessorError(.invalidAnswer, "stripe's PaymentIntent has no id")
        }
        return id
    }

    static func charge(_ intent: JSONObject, key: String, status: ProcessorChargeStatus) throws(ProcessorError)
        -> ProcessorCharge
    {
        guard let code = intent.string("currency"), let currency = Currency(code: code.uppercased()),
            let amount = intent.integer("amount")
        else { throw ProcessorError(.invalidAnswer, "stripe's PaymentIntent has no amount or currency") }
        return ProcessorCharge(
            reference: try identifier(intent), idempotencyKey: key,
            amount: Money(minorUnits: amount, currency: currency),
            status: status)
    }

    /// A 4xx that is not a decline: a clear error with Stripe's code (never card data: Stripe's messages are not
    /// copied).
    static func refusal(_ answer: ProviderAnswer, what: String) -> ProcessorError {
        let error = answer.object?.object("error")
        let code = error?.string("code") ?? error?.string("type") ?? "status \(answer.status)"
        switch (answer.status, code) {
        case (404, _), (_, "resource_missing"):
            return ProcessorError(.chargeNotFound, "stripe has no such payment for the \(what) (\(code))")
        case (_, "idempotency_key_in_use"):
            return ProcessorError(.serverError, "stripe is still answering an earlier \(what) with this key")
        case (_, "charge_already_refunded"), (_, "amount_too_large"):
            return ProcessorError(.refundExceedsCharge, "stripe refused the \(what) (\(code))")
        default:
            if error?.string("type") == "idempotency_error" {
                return ProcessorError(
                    .idempotencyConflict, "stripe refused the \(what): key reused with other parameters")
            }
            return ProcessorError(.invalidRequest, "stripe refused the \(what) (\(answer.status) \(code))")
        }
    }
}

/// The last charges a connector decided, by idempotency key, so a look-up right after a charge (a plan reading its
/// kept method) needs no request. Bounded; nothing secret.
final class RecentCharges: Sendable {
    private let charges = Mutex<[String: ProcessorCharge]>([:])
    static let capacity = 1024

    func keep(_ charge: ProcessorCharge) {
        charges.withLock { charges in
            if charges.count >= Self.capacity { charges.removeAll(keepingCapacity: true) }
            charges[charge.idempotencyKey] = charge
        }
    }

    func charge(_ key: String) -> ProcessorCharge? { charges.withLock { $0[key] } }
}

extension StripeProcessor: ProviderStatements {
    /// PaymentIntents created in `[since, until)` and the refunds created since `since`, each listed by creation time
    /// a page of 100 at a time (`created[gte]`, `created[lt]`, `starting_after`:
    /// https://docs.stripe.com/api/payment_intents/list, https://docs.stripe.com/api/refunds/list): every payment of
    /// the period, with what was refunded of it.
    public func statement(since: Date, until: Date, orders: [Order]) async throws(ProcessorError) -> ProviderStatement {
        let from = Int64(since.timeIntervalSince1970.rounded(.down))
        let to = Int64(until.timeIntervalSince1970.rounded(.up))
        let intents = try await list(
            "/v1/payment_intents", ["created[gte]": String(from), "created[lt]": String(to)], what: "payment list")
        let refunds = try await list("/v1/refunds", ["created[gte]": String(from)], what: "refund list")
        var refunded: [String: Int64] = [:]
        for refund in refunds where refund.string("status") == "succeeded" {
            guard let intent = refund.string("payment_intent"), let amount = refund.integer("amount") else { continue }
            refunded[intent, default: 0] += amount
        }
        var entries: [ProviderStatementEntry] = []
        for intent in intents {
            guard let id = intent.string("id"), let amount = intent.integer("amount"),
                let currency = intent.string("currency")
            else {
                throw ProcessorError(.invalidAnswer, "stripe listed a PaymentIntent without id, amount or currency")
            }
            let captured = intent.string("status") == "succeeded"
            entries.append(
                ProviderStatementEntry(
                    reference: id, merchantReference: intent.object("metadata")?.string("transaction_id"),
                    amount: captured ? intent.integer("amount_received") ?? amount : amount,
                    currencyCode: currency.uppercased(), captured: captured, refunded: refunded[id] ?? 0,
                    createdAt: intent.integer("created").map { Date(timeIntervalSince1970: TimeInterval($0)) }))
        }
        return ProviderStatement(entries: entries, listsEveryPayment: true)
    }

    /// The refund among the PaymentIntent's (`GET /v1/refunds?payment_intent=`, https://docs.stripe.com/api/refunds/list):
    /// `succeeded`; `pending` or `requires_action` still pending; `failed` or `canceled` failed
    /// (https://docs.stripe.com/api/refunds/object#refund_object-status).
    public func refundStatus(reference: String, charge: String) async throws(ProcessorError) -> RefundRecord.Status {
        let refunds = try await list("/v1/refunds", ["payment_intent": charge], what: "refund look-up")
        guard let refund = refunds.first(where: { $0.string("id") == reference }) else {
            throw ProcessorError(.chargeNotFound, "stripe lists no refund \(reference) of the payment")
        }
        switch refund.string("status") {
        case "succeeded": return .succeeded
        case "failed", "canceled": return .failed
        default: return .pending
        }
    }

    /// Every object of a Stripe list, page after page (at most 100 pages of 100).
    private func list(_ path: String, _ filters: [String: String], what: String) async throws(ProcessorError)
        -> [JSONObject]
    {
        var objects: [JSONObject] = []
        var after: String?
        for _ in 0..<100 {
            var query = URLComponents()
            query.queryItems =
                filters.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
                + [URLQueryItem(name: "limit", value: "100")]
                + (after.map { [URLQueryItem(name: "starting_after", value: $0)] } ?? [])
            let answer = try await connection.send("GET", path + "?" + (query.percentEncodedQuery ?? ""), what: what)
            guard answer.status == 200, let page = answer.object else { throw Self.refusal(answer, what: what) }
            let data = page.objects("data")
            objects += data
            guard page.bool("has_more") == true, let last = data.last?.string("id") else { return objects }
            after = last
        }
        throw ProcessorError(.invalidAnswer, "stripe's \(what) has more than 10,000 entries: check a shorter period")
    }
}
