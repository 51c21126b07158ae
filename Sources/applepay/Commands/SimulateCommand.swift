import ArgumentParser
import Foundation
import Foundations
import InProcessMerchant
import PaymentSheet
import Sandbox

/// `applepay simulate SCENARIO.json [--merchant-url URL [--checkout ID --checkout-secret SECRET]] [--sandbox DIR]`:
/// plays a payment-sheet scenario.
struct SimulateCommand: StatusCommand {
    /// Exit statuses of this command beyond 0, 1 and 64.
    enum Status {
        /// The run could not start: the sandbox unusable, the merchant server unreachable, no such checkout.
        static let cannotStart = ExitCode(2)
    }

    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Play a payment-sheet scenario against a merchant and print the transcript.",
        usage: """
            applepay simulate SCENARIO.json [--merchant-url URL [--checkout ID --checkout-secret SECRET]] \
            [--sandbox DIR]
            """,
        discussion: """
            A headless Apple Pay sheet: shows the scenario's payment request (or, with --merchant-url, the one \
            the server returns for the scenario's checkout.items; with --checkout ID --checkout-secret SECRET as \
            well, the one of that existing checkout, so the cart is the server's and the scenario needs only its \
            wallet and actions), plays the user's actions with the scenario's wallet, asks the merchant one event \
            at a time, redacts the shipping contact until authorization, mints a real token on authorization, and \
            enforces the 30-second answer timeout.
            Without --merchant-url the merchant server's own API answers in process (no socket), with a store \
            made from the scenario's merchant settings: its line items as the catalog, its shipping zones, \
            tax rates and coupons; merchant validation gets a sandbox merchant session; late answers pass on a \
            virtual clock, so a timeout costs no real time. With --merchant-url, use the sandbox the server \
            trusts; the sheet then acts as an app (no merchant validation, which only Apple's gateway can answer) \
            unless the scenario sets "initiative": "web".

            Prints the transcript: one JSON object per line, named after Apple Pay JS events \
            (validatemerchant, paymentmethodselected, shippingcontactselected, shippingmethodselected, \
            couponcodechanged, paymentauthorized, cancel), then {"event":"finished","outcome":...} with \
            success, failure, cancelled or timedOut. When the merchant server answers the payment with an \
            orderId, the paymentauthorized answer and the finished line carry it (GET /v1/orders/ID shows the \
            order). No card number, cryptogram or token is printed.

            Exit status: 0 the session ran to its end (whatever the outcome); 1 the scenario is invalid \
            (the message names the bad field) or cannot be read; 2 the run could not start (sandbox \
            unusable, merchant server unreachable, no such checkout or not its secret); 64 usage.
            """)

    @Argument(help: ArgumentHelp("The scenario to play.", valueName: "SCENARIO.json"))
    var scenarioPath: String

    @Option(
        name: .customLong("merchant-url"),
        help: ArgumentHelp(
            "Ask this merchant server (its /v1/checkouts API) instead of one run in process with the scenario's "
                + "store.", valueName: "URL"))
    var merchantURL: String?

    @Option(
        name: .customLong("checkout"),
        help: ArgumentHelp(
            "With --merchant-url: pay this existing checkout (GET /v1/checkouts/ID) instead of creating one; the "
                + "scenario's checkout.items and paymentRequest are ignored.", valueName: "ID"))
    var checkoutID: String?

    @Option(
        name: .customLong("checkout-secret"),
        help: ArgumentHelp(
            "With --checkout: the checkout's clientSecret (from POST /v1/checkouts), sent as the Checkout-Secret "
                + "header; without the right one the server answers 404 as for no checkout.", valueName: "SECRET"))
    var checkoutSecret: String?

    @Option(
        name: .customLong("sandbox"),
        help: ArgumentHelp("Mint tokens with this sandbox (default: a temporary one for the run).", valueName: "DIR"))
    var sandboxPath: String?

    func validate() throws {
        if let url = merchantURL {
            guard let components = URLComponents(string: url), ["http", "https"].contains(components.scheme ?? ""),
                components.host?.isEmpty == false
            else { throw ValidationError("--merchant-url must be an http or https URL, e.g. http://127.0.0.1:8080") }
        }
        if let checkoutID {
            guard merchantURL != nil else {
                throw ValidationError("--checkout needs --merchant-url (the server that holds the checkout)")
            }
            guard !checkoutID.isEmpty else { throw ValidationError("--checkout needs a checkout id, e.g. chk_…") }
            guard let checkoutSecret, !checkoutSecret.isEmpty else {
                throw ValidationError("--checkout needs --checkout-secret (the clientSecret of POST /v1/checkouts)")
            }
        } else if checkoutSecret != nil {
            throw ValidationError("--checkout-secret goes with --checkout (the checkout it opens)")
        }
    }

    func perform() async throws -> ExitCode {
        let scenario: Scenario
        do {
            scenario = try Scenario.load(from: URL(fileURLWithPath: scenarioPath))
        } catch {
            report(error, file: scenarioPath)
            return .failure
        }

        var temporary: URL?
        defer { if let temporary { try? FileManager.default.removeItem(at: temporary) } }
        let sandbox: Sandbox
        do {
            if let sandboxPath {
                sandbox = try Sandbox.load(from: URL(fileURLWithPath: sandboxPath))
            } else {
                let folder = FileManager.default.temporaryDirectory
                    .appendingPathComponent("applepay-simulate-\(UUID().uuidString)")
                temporary = folder
                sandbox = try Sandbox.create(at: folder, merchantIdentifier: "merchant.com.example.simulate")
            }
        } catch {
            Output.standardError(
                "error: \((error as? SandboxError)?.message ?? "the sandbox cannot be used: \(error)")")
            return Status.cannotStart
        }

        let output = FileHandle.standardOutput
        do throws(PaymentSheetError) {
            let merchant: ScenarioRunner.Merchant
            if let merchantURL {
                let checkout = checkoutID.map { (id: $0, secret: checkoutSecret ?? "") }
                merchant = try .server(url: merchantURL, checkout: checkout, for: scenario)
            } else {
                merchant = try InProcessMerchant.merchant(for: scenario, sandbox: sandbox)
            }
            _ = try await ScenarioRunner.run(scenario, sandbox: sandbox, merchant: merchant) { entry in
                output.write(Data((entry.jsonLine + "\n").utf8))
            }
        } catch {
            if error.code == .invalidScenario {
                report(error, file: scenarioPath)
                return .failure
            }
            Output.standardError("error: \(error.message)")
            return Status.cannotStart
        }
        return .success
    }

    private func report(_ error: PaymentSheetError, file: String) {
        let field = error.field.map { $0.isEmpty ? "" : "\($0): " } ?? ""
        Output.standardError("error: \(file): \(field)\(error.message)")
    }
}
