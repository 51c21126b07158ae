import ApplePay
import Foundation
import MerchantCore

/// Charges Apple Pay through Adyen's Checkout API v71 (JSON, `X-API-Key`), every charge, refund and void with an
/// `Idempotency-Key` (at most 64 characters) derived from the payment's key.
///
/// - pass-through: `paymentMethod: {type: applepay, applePayToken: base64(paymentData JSON)}`;
/// - decrypted: `paymentMethod: {type: networkToken, brand, number, expiryMonth, expiryYear}` with `mpiData`
///   (`tokenAuthenticationVerificationValue`: the cryptogram, `eci`, `directoryResponse`/`authenticationResponse`
///   `Y`).
///
/// `reference` is the payment's key, so Adyen's webhooks (`merchantReference`) find it; the answer's `pspReference`
/// is the charge's reference. Adyen has no look-up: an answer lost is settled by its AUTHORISATION webhook, and past
/// the 31 days Adyen keeps a key, by a person. Refunds and voids (`/refunds`, `/reversals`) are `received` at once,
/// their result arriving by webhook too.
public struct AdyenProcessor: PaymentProcessor {
    public let name = "adyen"
    public let connection: ProviderConnection
    public let applePay: ApplePayHandling
    public let merchantAccount: String
    /// Adyen's spec requires a `returnUrl` on every payment; Apple Pay never redirects to it.
    public let returnURL: String
    public static let keyLifetime: Duration = .seconds(31 * 24 * 3600)
    /// How long a payment whose answer was lost waits for its webhook before it is listed for a person (at most
    /// ``keyLifetime``).
    public let webhookDeadline: Duration
    static let keyLimit = 64
    private let recent = RecentCharges()

    public init(
        baseURL: URL, apiKey: String, merchantAccount: String, applePay: ApplePayHandling, returnURL: String,
        timeout: Duration, proxy: String? = nil, trustedRootsPEM: Data? = nil, webhookDeadline: Duration? = nil
    ) {
        self.webhookDeadline = min(webhookDeadline ?? Self.keyLifetime, Self.keyLifetime)
        self.applePay = applePay
        self.merchantAccount = merchantAccount
        self.returnURL = returnURL
        self.connection = ProviderConnection(
            provider: "adyen", baseURL: baseURL, credentials: [("X-API-Key", apiKey)],
            idempotencyHeader: "Idempotency-Key", timeout: timeout, trustedRootsPEM: trustedRootsPEM, proxy: proxy)
    }

    public var unknownOutcomes: UnknownOutcomeResolution { .webhook(keyLifetime: webhookDeadline) }

    public func charge(_ request: ChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        var body = paymentBody(key: request.idempotencyKey, amount: request.amount)
        switch applePay {
        case .passThrough:
            let sealed = try request.sealed(for: name)
            body["paymentMethod"] = [
                "type": "applepay", "applePayToken": Data(sealed.paymentDataJSON.utf8).base64EncodedString(),
            ]
        case .decrypted:
            guard let secure = request.token.threeDSecure else {
                throw ProcessorError(.invalidRequest, "adyen takes 3-D Secure Apple Pay tokens only (not EMV)")
            }
            let expiry = request.token.expiry
            body["paymentMethod"] = [
                "type": "networkToken", "brand": Self.brand(request.token.network),
                "number": request.token.primaryAccountNumber, "expiryMonth": expiry.month,
                "expiryYear": expiry.year,
            ]
            var mpi: [String: Any] = [
                "directoryResponse": "Y", "authenticationResponse": "Y",
                "tokenAuthenticationVerificationValue": secure.cryptogram,
            ]
            mpi["eci"] = secure.eci
            body["mpiData"] = mpi
        }
        body["shopperInteraction"] = "Ecommerce"
        if request.storePaymentMethod {
            body["storePaymentMethod"] = true
            body["recurringProcessingModel"] = "Subscription"
            body["shopperReference"] = Self.shopperReference(request.idempotencyKey)
        }
        return try await pay(body, key: request.idempotencyKey, amount: request.amount)
    }

    public func charge(lookingUp payment: ChargeLookup) async throws(ProcessorError) -> ProcessorCharge? {
        if let charge = recent.charge(payment.idempotencyKey) { return charge }
        throw ProcessorError(.lookUpUnavailable, "adyen has no look-up: its AUTHORISATION webhook settles the payment")
    }

    public func charge(idempotencyKey: String) async throws(ProcessorError) -> ProcessorCharge? {
        try await charge(lookingUp: ChargeLookup(idempotencyKey: idempotencyKey, amount: .zero(.usDollar)))
    }

    /// `POST /payments/{pspReference}/reversals`: cancelled if not captured yet, refunded if it was.
    public func void(reference: String) async throws(ProcessorError) -> ProcessorCharge {
        let data = try ProviderConnection.json(["merchantAccount": merchantAccount, "reference": "void-" + reference])
        let answer = try await connection.send(
            "POST", "/payments/\(ProviderKeys.pathSegment(reference))/reversals", body: .json(data),
            idempotencyKey: ProviderKeys.key(reference, purpose: "void", limit: Self.keyLimit), what: "void")
        guard answer.status == 201 || answer.status == 200, answer.object?.string("status") == "received" else {
            throw Self.refusal(answer, what: "void")
        }
        // `received` is not voided yet: the CANCEL_OR_REFUND webhook says (https://docs.adyen.com/online-payments/reversal/).
        return ProcessorCharge(reference: reference, idempotencyKey: "", amount: .zero(.usDollar), status: .processing)
    }

    /// `POST /payments/{pspReference}/refunds`: `received`; the REFUND webhook says whether it succeeded.
    public func refund(reference: String, amount: Money, idempotencyKey: String) async throws(ProcessorError)
        -> ProcessorRefund
    {
        let data = try ProviderConnection.json([
            "merchantAccount": merchantAccount, "reference": String(idempotencyKey.prefix(80)),
            "amount": ["currency": amount.currency.code, "value": amount.minorUnits],
        ])
        let answer = try await connection.send(
            "POST", "/payments/\(ProviderKeys.pathSegment(reference))/refunds", body: .json(data),
            idempotencyKey: ProviderKeys.key(idempotencyKey, purpose: "refund", limit: Self.keyLimit), what: "refund")
        guard answer.status == 201 || answer.status == 200, let object = answer.object,
            object.string("status") == "received", let psp = object.string("pspReference")
        else { throw Self.refusal(answer, what: "refund") }
        // Adyen refunds are asynchronous: `received` now, the REFUND webhook says whether it succeeded
        // (the spec's PaymentRefundResponse.status, Tests/Fixtures/psp/adyen, https://github.com/Adyen/adyen-openapi).
        return .accepted(psp, ofCharge: reference, amount: amount, idempotencyKey: idempotencyKey, isPending: true)
    }

    /// A merchant-initiated charge: `shopperInteraction: ContAuth`, `recurringProcessingModel: Subscription`.
    public func charge(storedMethod request: StoredMethodChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        var body = paymentBody(key: request.idempotencyKey, amount: request.amount)
        let parts = request.paymentMethodReference.split(separator: "|", maxSplits: 1).map(String.init)
        body["paymentMethod"] = ["type": "scheme", "storedPaymentMethodId": parts.last ?? ""]
        body["shopperReference"] = parts.count == 2 ? parts[0] : Self.shopperReference(request.idempotencyKey)
        body["shopperInteraction"] = "ContAuth"
        body["recurringProcessingModel"] = "Subscription"
        return try await pay(body, key: request.idempotencyKey, amount: request.amount)
    }

    /// `POST /paymentMethods` for the merchant account: the cheapest authenticated call.
    public func checkCredentials() async throws(ProcessorError) {
        let data = try ProviderConnection.json(["merchantAccount": merchantAccount])
        let answer = try await connection.send(
            "POST", "/paymentMethods", body: .json(data), idempotencyKey: nil, what: "credentials check")
        guard (200..<300).contains(answer.status) else { throw Self.refusal(answer, what: "credentials check") }
    }

    // MARK: - Steps

    private func paymentBody(key: String, amount: Money) -> [String: Any] {
        [
            "merchantAccount": merchantAccount, "reference": key, "returnUrl": returnURL,
            "amount": ["currency": amount.currency.code, "value": amount.minorUnits],
        ]
    }

    private func pay(_ body: [String: Any], key: String, amount: Money) async throws(ProcessorError) -> ChargeOutcome {
        let answer = try await connection.send(
            "POST", "/payments", body: .json(try ProviderConnection.json(body)),
            idempotencyKey: ProviderKeys.key(key, limit: Self.keyLimit), what: "payment")
        guard answer.status == 200, let payment = answer.object else { throw Self.refusal(answer, what: "payment") }
        let psp = payment.string("pspReference") ?? ""
        let outcome: ChargeOutcome
        // Result codes: https://docs.adyen.com/online-payments/build-your-integration/payment-result-codes
        switch payment.string("resultCode") {
        case "Authorised":
            outcome = .approved(reference: psp)
        case "Refused", "Cancelled", "Error":
            outcome = .declined(.provider(payment.string("refusalReason") ?? payment.string("resultCode")))
        case "Received", "Pending":
            // Taken, not final: the AUTHORISATION webhook decides it. Never a decline.
            outcome = .processing(reference: psp)
        case "RedirectShopper", "IdentifyShopper", "ChallengeShopper", "PresentToShopper":
            // The shopper would have to act (3-D Secure, a redirect): not possible for a server payment.
            outcome = .declined(DeclineReason(code: "authenticationRequired"))
        case let code:
            // A code we do not know says nothing about whether it was charged: unknown, settled by the webhook.
            throw ProcessorError(.invalidAnswer, "adyen answered the payment with resultCode \(code ?? "none")")
        }
        var status = ProcessorChargeStatus.approved
        var reason: DeclineReason?
        switch outcome {
        case .approved: break
        case .declined(let why):
            status = .declined
            reason = why
        case .processing: status = .processing
        }
        let stored = payment.object("additionalData")?.string("tokenization.storedPaymentMethodId")
        recent.keep(
            ProcessorCharge(
                reference: psp, idempotencyKey: key, amount: amount, status: status, declineReason: reason,
                paymentMethodReference: stored.map { Self.shopperReference(key) + "|" + $0 }))
        return outcome
    }

    static func shopperReference(_ key: String) -> String { "shopper-" + key.prefix(48) }

    /// Adyen's brand for a card network (Apple Pay's `paymentMethod.network`). Adyen's codes:
    /// https://docs.adyen.com/online-payments/classic-integrations/hosted-payment-pages/hpp-brandcodes
    static func brand(_ network: String?) -> String {
        switch network?.lowercased() {
        case "visa": "visa"
        case "mastercard": "mc"
        case "amex": "amex"
        case "discover": "discover"
        case "jcb": "jcb"
        case "chinaunionpay": "cup"
        case "cartesbancaires", "cartebancaire": "cartebancaire"
        case "maestro": "maestro"
        default: network?.lowercased() ?? "scheme"
        }
    }

    /// A 4xx: Adyen's `errorCode` (never card data).
    static func refusal(_ answer: ProviderAnswer, what: String) -> ProcessorError {
        let code = answer.errorCode ?? "status \(answer.status)"
        switch answer.status {
        case 404: return ProcessorError(.chargeNotFound, "adyen has no such payment for the \(what)")
        case 200..<300: return ProcessorError(.invalidAnswer, "adyen's \(what) answer could not be read")
        default: return ProcessorError(.invalidRequest, "adyen refused the \(what) (\(answer.status) \(code))")
        }
    }
}
