import ApplePay
import Foundation
import HTTPClient
import PaymentToken
import Sandbox

/// Runs a scenario to its end, against its own in-process merchant or a merchant server.
public enum ScenarioRunner {
    /// What a run produced.
    public struct Result: Sendable {
        public var outcome: SessionOutcome
        public var transcript: [TranscriptEntry]
    }

    /// Runs `scenario`: tokens come from `sandbox`; the merchant is the scenario's rules (on a `VirtualClock`,
    /// so late answers cost no real time) or, with `merchantURL`, the merchant server's HTTP API (real time): a
    /// checkout is created from the scenario's cart first, or, with `checkoutID`, the existing checkout is fetched
    /// and paid (the scenario's cart and payment request are then ignored; its wallet and actions are played).
    ///
    /// - Parameters:
    ///   - checkoutID: an existing checkout on the merchant server to pay; needs `merchantURL`.
    ///   - transcript: receives each line as it is written.
    /// - Throws: `PaymentSheetError` `invalidScenario` when the scenario lacks what the mode needs or its
    ///   request/wallet cannot open a sheet; `unknownCheckout` when the server has no checkout `checkoutID`;
    ///   `merchantFailed` when the checkout cannot be created or fetched, or `checkoutID` comes without
    ///   `merchantURL`.
    public static func run(
        _ scenario: Scenario, sandbox: Sandbox, merchantURL: String? = nil, checkoutID: String? = nil,
        transcript: TranscriptSink? = nil
    ) async throws(PaymentSheetError) -> Result {
        let request: PaymentRequest
        let delegate: any PaymentSheetDelegate
        let clock: any SessionClock
        let initiative: SessionInitiative
        if checkoutID != nil && merchantURL == nil {
            throw PaymentSheetError(
                .merchantFailed, "a checkout id can only be paid on a merchant server (merchantURL)")
        }
        if let merchantURL {
            let client = HTTPClient(configuration: .init(timeout: scenario.timeout + .seconds(5)))
            let created: HTTPMerchantDelegate.Checkout
            do {
                if let checkoutID {
                    created = try await HTTPMerchantDelegate.fetchCheckout(
                        baseURL: merchantURL, id: checkoutID, client: client)
                } else {
                    guard let checkout = scenario.checkout else {
                        throw PaymentSheetError(
                            .invalidScenario,
                            "with --merchant-url the scenario needs checkout.items (the cart to buy), "
                                + "or pay an existing checkout with --checkout ID",
                            field: "checkout")
                    }
                    created = try await HTTPMerchantDelegate.createCheckout(
                        baseURL: merchantURL, items: checkout.items, client: client)
                }
            } catch let error as PaymentSheetError {
                throw error
            } catch {
                let what = checkoutID.map { "fetch checkout '\($0)'" } ?? "create a checkout"
                throw PaymentSheetError(.merchantFailed, "cannot \(what) at \(merchantURL): \(error)")
            }
            request = created.paymentRequest
            delegate = HTTPMerchantDelegate(baseURL: merchantURL, checkoutID: created.id, client: client)
            clock = SystemSessionClock()
            // The server can only ask Apple's real gateway for a merchant session: act as an app by default.
            initiative = scenario.initiative ?? .inApp
        } else {
            guard let scenarioRequest = scenario.paymentRequest else {
                throw PaymentSheetError(
                    .invalidScenario,
                    "without --merchant-url the scenario needs a paymentRequest "
                        + "(or, for --merchant-url, a checkout with cart items)",
                    field: "paymentRequest")
            }
            request = scenarioRequest
            let virtualClock = VirtualClock()
            clock = virtualClock
            delegate = ScenarioMerchant(
                rules: scenario.merchant, request: request, clock: virtualClock,
                decryptor: try? decryptor(for: sandbox, clock: virtualClock))
            initiative = scenario.initiative ?? .web
        }
        let session: PaymentSession
        do {
            session = try PaymentSession(
                request: request, wallet: scenario.wallet, delegate: delegate,
                tokenIssuer: SandboxTokenIssuer(sandbox: sandbox), clock: clock,
                configuration: PaymentSession.Configuration(timeout: scenario.timeout, initiative: initiative),
                transcript: transcript)
        } catch {
            let field =
                error.code == .invalidRequest
                ? "paymentRequest" + (error.field.map { $0.isEmpty ? "" : "." + $0 } ?? "") : "wallet"
            throw PaymentSheetError(.invalidScenario, error.message, field: field)
        }
        let outcome = await session.run(scenario.actions)
        return Result(outcome: outcome, transcript: await session.transcript)
    }

    /// A decryptor for the sandbox's merchant keys (EC and RSA), trusting only the sandbox's root.
    public static func decryptor(for sandbox: Sandbox, clock: any SessionClock) throws -> PaymentTokenDecryptor {
        let identities = try [sandbox.paymentProcessingEC, sandbox.paymentProcessingRSA].map {
            try MerchantIdentity(certificate: $0.certificate, privateKey: $0.privateKey)
        }
        return try PaymentTokenDecryptor(
            merchants: identities, roots: [sandbox.rootCertificate], maximumAge: 300, now: { clock.now })
    }
}
