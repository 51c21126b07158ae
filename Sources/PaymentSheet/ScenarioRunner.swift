import ApplePay
import Foundation
import Foundations
import HTTPClient
import PaymentToken
import Sandbox

/// Runs a scenario to its end against a merchant API: a merchant server over HTTP, or (the `applepay` tool's
/// `InProcessMerchant`) the merchant server's API called in process with the scenario's store settings.
public enum ScenarioRunner {
    /// What a run produced.
    public struct Result: Sendable {
        public var outcome: SessionOutcome
        public var transcript: [TranscriptEntry]
    }

    /// The merchant a scenario is played against.
    public struct Merchant: Sendable {
        /// Which checkout the session pays.
        public enum CheckoutSource: Sendable {
            /// `POST /v1/checkouts` with these items.
            case create([ScenarioCartItem])
            /// `GET /v1/checkouts/{id}`: an existing checkout, reached with its client secret.
            case existing(id: String, secret: String)
        }

        /// How the merchant API is reached.
        public var transport: any MerchantTransport
        /// Names the merchant in error messages, for example its URL.
        public var name: String
        public var checkout: CheckoutSource
        /// The session's clock (a `VirtualClock` when the merchant's time is simulated too).
        public var clock: any SessionClock
        /// The initiative when the scenario names none.
        public var initiative: SessionInitiative
        /// The request the sheet shows, with the checkout's prices put in: its `total`, `lineItems`, `couponCode`,
        /// `applicationData` and (when it offers any) `shippingMethods` come from the server; nil: the server's
        /// request as it is.
        public var request: PaymentRequest?

        public init(
            transport: any MerchantTransport, name: String, checkout: CheckoutSource, clock: any SessionClock,
            initiative: SessionInitiative, request: PaymentRequest? = nil
        ) {
            self.transport = transport
            self.name = name
            self.checkout = checkout
            self.clock = clock
            self.initiative = initiative
            self.request = request
        }

        /// A merchant server at `url` over HTTP, on the system clock; the sheet acts as an app unless the scenario
        /// says otherwise (the server can only ask Apple's real gateway for a merchant session).
        /// - Parameters:
        ///   - checkout: an existing checkout to pay (its id and client secret); nil: create one from the scenario's
        ///     cart.
        /// - Throws: `PaymentSheetError` `invalidScenario` when a checkout is to be created and the scenario has no
        ///   cart.
        public static func server(
            url: String, checkout existing: (id: String, secret: String)? = nil, for scenario: Scenario
        ) throws(PaymentSheetError) -> Merchant {
            let checkout: CheckoutSource
            if let existing {
                checkout = .existing(id: existing.id, secret: existing.secret)
            } else {
                guard let cart = scenario.checkout else {
                    throw PaymentSheetError(
                        .invalidScenario,
                        "with --merchant-url the scenario needs checkout.items (the cart to buy), "
                            + "or pay an existing checkout with --checkout ID --checkout-secret SECRET",
                        field: "checkout")
                }
                checkout = .create(cart.items)
            }
            let client = HTTPClient(configuration: .init(timeout: scenario.timeout + .seconds(5)))
            return Merchant(
                transport: HTTPClientTransport(baseURL: url, client: client), name: url, checkout: checkout,
                clock: SystemSessionClock(), initiative: .inApp)
        }
    }

    /// Runs `scenario` against a merchant server over HTTP (real time): a checkout is created from the scenario's
    /// cart first, or, with `checkout`, the existing checkout is fetched and paid (the scenario's cart and
    /// payment request are then ignored; its wallet and actions are played). Tokens come from `sandbox`.
    ///
    /// - Parameters:
    ///   - merchantURL: the merchant server's base URL.
    ///   - checkout: an existing checkout on the merchant server to pay: its id and client secret.
    ///   - transcript: receives each line as it is written.
    /// - Throws: as `run(_:sandbox:merchant:transcript:)`, and `invalidScenario` when a checkout is to be created
    ///   and the scenario has no cart.
    public static func run(
        _ scenario: Scenario, sandbox: Sandbox, merchantURL: String, checkout: (id: String, secret: String)? = nil,
        transcript: TranscriptSink? = nil
    ) async throws(PaymentSheetError) -> Result {
        try await run(
            scenario, sandbox: sandbox, merchant: try .server(url: merchantURL, checkout: checkout, for: scenario),
            transcript: transcript)
    }

    /// Runs `scenario` against `merchant`: creates or fetches the checkout, opens the sheet on its payment request
    /// and plays the scenario's actions. Tokens come from `sandbox`.
    ///
    /// - Parameters:
    ///   - transcript: receives each line as it is written.
    /// - Throws: `PaymentSheetError` `invalidScenario` when the scenario's request or wallet cannot open a sheet;
    ///   `unknownCheckout` when the merchant has no such checkout; `merchantFailed` when the checkout cannot be
    ///   created or fetched.
    public static func run(
        _ scenario: Scenario, sandbox: Sandbox, merchant: Merchant, transcript: TranscriptSink? = nil
    ) async throws(PaymentSheetError) -> Result {
        let created: HTTPMerchantDelegate.Checkout
        do {
            switch merchant.checkout {
            case .existing(let id, let secret):
                created = try await HTTPMerchantDelegate.fetchCheckout(
                    transport: merchant.transport, id: id, secret: secret,
                    server: "the merchant server at \(merchant.name)")
            case .create(let items):
                created = try await HTTPMerchantDelegate.createCheckout(transport: merchant.transport, items: items)
            }
        } catch let error as PaymentSheetError {
            throw error
        } catch {
            var what = "create a checkout"
            if case .existing(let id, _) = merchant.checkout { what = "fetch checkout '\(id)'" }
            throw PaymentSheetError(.merchantFailed, "cannot \(what) at \(merchant.name): \(error)")
        }
        var request = created.paymentRequest
        if var shown = merchant.request {
            shown.total = request.total
            shown.lineItems = request.lineItems
            if shown.shippingMethods != nil { shown.shippingMethods = request.shippingMethods }
            shown.couponCode = request.couponCode
            shown.applicationData = request.applicationData
            request = shown
        }
        let delegate = HTTPMerchantDelegate(
            transport: merchant.transport, checkoutID: created.id, checkoutSecret: created.secret)
        let session: PaymentSession
        do {
            session = try PaymentSession(
                request: request, wallet: scenario.wallet, delegate: delegate,
                tokenIssuer: SandboxTokenIssuer(sandbox: sandbox), clock: merchant.clock,
                configuration: PaymentSession.Configuration(
                    timeout: scenario.timeout, initiative: scenario.initiative ?? merchant.initiative),
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
