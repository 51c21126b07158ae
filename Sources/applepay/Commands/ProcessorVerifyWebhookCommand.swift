import Cryptography
import Foundation
import Foundations
import ProviderWebhooks

/// `applepay processor verify-webhook --psp stripe|adyen|checkout --secret-file F --payload-file P
/// [--signature S | --header H] [--now ISO8601] [--tolerance SECONDS]`: the webhook endpoints' signature check.
struct ProcessorVerifyWebhookCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "verify-webhook",
            abstract: "Check a provider's webhook signature as the server's /webhooks endpoints do.",
            usage: [
                "--psp stripe|adyen|checkout --secret-file FILE --payload-file FILE [--signature S | --header H] "
                    + "[--now ISO8601] [--tolerance SECONDS]"
            ],
            options: [
                ("--psp stripe|adyen|checkout", "The provider whose scheme to check (required)."),
                (
                    "--secret-file FILE",
                    "The signing secret: Stripe's whsec_..., Checkout.com's key, Adyen's HMAC key in hex (required; "
                        + "a file of yours, not open to group or others)."
                ),
                ("--payload-file FILE", "The raw body as received (required)."),
                (
                    "--header H",
                    "Stripe: the Stripe-Signature value; Checkout.com: Cko-Signature; Adyen: the HmacSignature header "
                        + "(the raw-body scheme of Balance Platform and Management webhooks)."
                ),
                (
                    "--signature S",
                    "Adyen: the item's signature instead of its additionalData.hmacSignature; Stripe and Checkout.com: "
                        + "the same as --header."
                ),
                ("--now ISO8601", "Stripe: check the timestamp against this time instead of the clock."),
                ("--tolerance SECONDS", "Stripe: the timestamp tolerance (default 300; 0 does not check it)."),
            ],
            discussion: """
                Prints {"valid": true|false, "reason": CODE} and exits 0 when the signature is valid, 1 when it is
                not. Reasons: signatureMatches, missingSignature, malformedHeader, noSignatureOfExpectedScheme,
                signatureMismatch, timestampOutsideTolerance, malformedPayload. The secret is never printed.
                """)
    }

    var provider: WebhookProvider
    var secretFile: String
    var payloadFile: String
    var header: String?
    var signature: String?
    var now: Date
    var tolerance: TimeInterval

    init(arguments: inout Arguments) throws {
        guard let psp = try arguments.option("--psp") else {
            throw UsageError("--psp stripe|adyen|checkout is required")
        }
        guard let provider = WebhookProvider(rawValue: psp) else {
            throw UsageError("--psp must be stripe, adyen or checkout (got '\(psp.prefix(40))')")
        }
        self.provider = provider
        guard let secretFile = try arguments.option("--secret-file") else {
            throw UsageError("--secret-file is required")
        }
        guard let payloadFile = try arguments.option("--payload-file") else {
            throw UsageError("--payload-file is required")
        }
        self.secretFile = secretFile
        self.payloadFile = payloadFile
        header = try arguments.option("--header")
        signature = try arguments.option("--signature")
        if header != nil, signature != nil { throw UsageError("give --signature or --header, not both") }
        now = try arguments.option("--now", as: { ISO8601DateFormatter().date(from: $0) }) ?? Date()
        tolerance =
            try arguments.option("--tolerance", as: { Double($0).flatMap { $0 >= 0 && $0 <= 86_400 * 365 ? $0 : nil } })
            ?? StripeSignature.defaultTolerance
    }

    func run() async throws -> Int32 {
        let secret: WebhookSecret
        do {
            secret = try WebhookEndpoint.readSecret(provider, path: secretFile)
        } catch {
            Output.standardError("error: \(error.message)")
            return SandboxExit.noInput
        }
        guard let payload = FileManager.default.contents(atPath: payloadFile) else {
            Output.standardError("error: cannot read the payload file \(payloadFile)")
            return SandboxExit.noInput
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
        return verdict.isValid ? ExitCode.success : ExitCode.failure
    }
}
