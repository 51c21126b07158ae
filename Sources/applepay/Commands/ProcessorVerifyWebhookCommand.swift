import ArgumentParser
import Cryptography
import Foundation
import Foundations
import ProviderWebhooks

/// `applepay processor verify-webhook --psp stripe|adyen|checkout --secret-file F --payload-file P
/// [--signature S | --header H] [--now ISO8601] [--tolerance SECONDS]`: the webhook endpoints' signature check.
struct ProcessorVerifyWebhookCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-webhook",
        abstract: "Check a provider's webhook signature as the server's /webhooks endpoints do.",
        usage: """
            applepay processor verify-webhook --psp stripe|adyen|checkout --secret-file FILE --payload-file FILE \
            [--signature S | --header H] [--now ISO8601] [--tolerance SECONDS]
            """,
        discussion: """
            Prints {"valid": true|false, "reason": CODE} and exits 0 when the signature is valid, 1 when it is \
            not. Reasons: signatureMatches, missingSignature, malformedHeader, noSignatureOfExpectedScheme, \
            signatureMismatch, timestampOutsideTolerance, malformedPayload. The secret is never printed.
            """)

    @Option(
        name: .customLong("psp"),
        help: ArgumentHelp("The provider whose scheme to check (required).", valueName: "stripe|adyen|checkout"))
    var providerText: String?

    @Option(
        name: .customLong("secret-file"),
        help: ArgumentHelp(
            "The signing secret: Stripe's whsec_..., Checkout.com's key, Adyen's HMAC key in hex (required; "
                + "a file of yours, not open to group or others).", valueName: "FILE"))
    var secretFile: String?

    @Option(
        name: .customLong("payload-file"), help: ArgumentHelp("The raw body as received (required).", valueName: "FILE")
    )
    var payloadFile: String?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Stripe: the Stripe-Signature value; Checkout.com: Cko-Signature; Adyen: the HmacSignature header "
                + "(the raw-body scheme of Balance Platform and Management webhooks).", valueName: "H"))
    var header: String?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Adyen: the item's signature instead of its additionalData.hmacSignature; Stripe and Checkout.com: "
                + "the same as --header.", valueName: "S"))
    var signature: String?

    @Option(
        name: .customLong("now"),
        help: ArgumentHelp("Stripe: check the timestamp against this time instead of the clock.", valueName: "ISO8601"))
    var nowText: String?

    @Option(
        name: .customLong("tolerance"), parsing: .unconditional,
        help: ArgumentHelp(
            "Stripe: the timestamp tolerance (default 300; 0 does not check it).", valueName: "SECONDS"))
    var toleranceText: String?

    /// What to check, as the options name it.
    struct Check {
        var provider: WebhookProvider
        var secretFile: String
        var payloadFile: String
        var now: Date
        var tolerance: TimeInterval
    }

    func validate() throws {
        _ = try check()
    }

    /// The check the options describe; a usage error names the option at fault.
    func check() throws -> Check {
        guard let providerText else { throw ValidationError("--psp stripe|adyen|checkout is required") }
        guard let provider = WebhookProvider(rawValue: providerText) else {
            throw ValidationError("--psp must be stripe, adyen or checkout (got '\(providerText.prefix(40))')")
        }
        guard let secretFile else { throw ValidationError("--secret-file is required") }
        guard let payloadFile else { throw ValidationError("--payload-file is required") }
        if header != nil, signature != nil { throw ValidationError("give --signature or --header, not both") }
        var now = Date()
        if let nowText {
            guard let date = ISO8601DateFormatter().date(from: nowText) else {
                throw ValidationError("invalid value '\(nowText)' for --now")
            }
            now = date
        }
        var tolerance = StripeSignature.defaultTolerance
        if let toleranceText {
            guard let seconds = Double(toleranceText), seconds >= 0, seconds <= 86_400 * 365 else {
                throw ValidationError("invalid value '\(toleranceText)' for --tolerance")
            }
            tolerance = seconds
        }
        return Check(
            provider: provider, secretFile: secretFile, payloadFile: payloadFile, now: now, tolerance: tolerance)
    }

    func perform() async throws -> ExitCode {
        let check = try check()
        let (provider, secretFile, payloadFile) = (check.provider, check.secretFile, check.payloadFile)
        let (now, tolerance) = (check.now, check.tolerance)
        let secret: WebhookSecret
        do {
            secret = try WebhookEndpoint.readSecret(provider, path: secretFile)
        } catch {
            Output.standardError("error: \(error.message)")
            return .noInput
        }
        guard let payload = FileManager.default.contents(atPath: payloadFile) else {
            Output.standardError("error: cannot read the payload file \(payloadFile)")
            return .noInput
        }
        let verdict: WebhookVerdict
        switch provider {
        case .stripe:
            verdict = StripeSignature.verify(
                payload: payload, header: header ?? signature, secret: secret, now: now,
                tolerance: tolerance > 0 ? tolerance : nil)
        case .checkout:
            verdict = CheckoutSignature.verify(body: payload, header: header ?? signature, secret: secret)
        case .adyen:
            if let header {
                verdict = AdyenSignature.verify(rawBody: payload, header: header, key: secret)
            } else {
                verdict = AdyenSignature.verify(notification: payload, signature: signature, key: secret)
            }
        }
        print("{\"valid\": \(verdict.isValid), \"reason\": \"\(verdict.reason.rawValue)\"}")
        return verdict.isValid ? .success : .failure
    }
}
