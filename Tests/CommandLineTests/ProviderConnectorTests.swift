import Foundation
import TestSupport
import Testing

/// The Stripe, Checkout.com and Adyen connectors as a merchant runs them: `applepay serve --sandbox DIR --config
/// provider.json` against a local fake of each provider (Tests/CommandLineTests/python/psp), which validates every
/// request it receives and every answer it gives against the provider's published spec in Tests/Fixtures/psp.
@Suite("provider connectors against spec-validating fakes", .serialized)
struct ProviderConnectorTests {
    static let scripts = Repository.root.appendingPathComponent("Tests/CommandLineTests/python/psp")
    static let vectors = Repository.pspVectors

    static var environment: [String: String] { ["PSP_VECTORS": vectors.path, "PYTHONDONTWRITEBYTECODE": "1"] }

    /// Runs a script of the fakes' folder and reads its JSON report.
    func run(_ script: String, _ arguments: [String]) async throws -> (
        status: Int32, report: [String: Any], text: String
    ) {
        let result = try await Subprocess.run(
            "python3", [Self.scripts.appendingPathComponent(script).path] + arguments,
            environment: Self.environment, timeout: 600)
        let report =
            (try? JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8))) as? [String: Any] ?? [:]
        return (result.status, report, result.standardOutput + result.standardError)
    }

    @Test(
        "each fake refuses a request that breaks its provider's spec, and accepts a valid one",
        arguments: ["stripe", "checkout", "adyen"])
    func fakesValidate(provider: String) async throws {
        let (status, report, text) = try await run("fake_selftest.py", [provider])
        #expect(status == 0, "\(text)")
        #expect((report["cases"] as? [String: Any])?.count ?? 0 >= 4, "\(text)")
    }

    @Test(
        "pays sandbox tokens end to end: authorised, declined, retried, lost then settled or left to the webhook, refunded; decided later by webhook or look-up",
        arguments: [
            ("stripe", "passThrough"), ("stripe", "decrypted"), ("checkout", "passThrough"), ("checkout", "decrypted"),
            ("adyen", "passThrough"), ("adyen", "decrypted"),
        ])
    func endToEnd(provider: String, mode: String) async throws {
        let folder = try TemporaryDirectory(prefix: "psp-\(provider)")
        defer { folder.remove() }
        let sandbox = folder.path("sandbox")
        try FileManager.default.copyItem(atPath: try await CommandLineSandbox.path(), toPath: sandbox)
        let work = folder.path("work")
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let (status, report, text) = try await run(
            "end_to_end.py", [provider, CommandLineTool.executable.path, sandbox, work, mode])
        #expect(status == 0, "\(text)")
        let checks = report["checks"] as? [String: Bool] ?? [:]
        let required = [
            "a refused key stops the start", "authorised", "declined", "decline reason kept", "retried after 500",
            "retried after 429", "lost answer is unknown, not declined", "refund", "void after refund refused",
            "void while a refund is pending refused, not sent", "plan payment starts a subscription",
            "merchant-initiated charge approved", "merchant-initiated flags sent", "nothing needs a person yet",
            "no spec mismatch", "every charge had an idempotency key", "no double charge", "no secret in the log",
            "a forged webhook is ignored", "a processing charge is answered 202 paymentProcessing",
            "a processing charge is settled by its webhook", "a webhook delivered twice is applied once",
            "a stale failure delivered after the success does not undo it",
            "a refund decided later stays pending until its webhook", "a failed refund webhook marks the refund failed",
        ]
        for name in required {
            #expect(checks[name] == true, "\(name): \(text)")
        }
        let settled = provider == "adyen" ? "lost answer waits for the webhook" : "lost answer settled by look-up"
        #expect(checks[settled] == true, "\(settled): \(text)")
        if provider == "adyen" {
            #expect(checks["lost answer settled by the webhook"] == true, "\(text)")
            #expect(checks["the daily check agrees with the provider"] == true, "\(text)")
        } else {
            #expect(checks["the daily check finds the lost refund, then agrees with the provider"] == true, "\(text)")
            if provider == "checkout" {
                #expect(checks["a 403 void or refund is refused, not bad credentials"] == true, "\(text)")
                let eci =
                    mode == "decrypted"
                    ? "a decrypted token without an ECI is refused before sending, and the checkout unlocks"
                    : "a token without an ECI is paid in pass-through"
                #expect(checks[eci] == true, "\(eci): \(text)")
            }
            if provider == "stripe" {
                for name in [
                    "the plan's first payment saves its method to a Customer", "the renewal charges the saved Customer",
                    "a plan payment whose answer was lost is looked up with its Customer",
                ] {
                    #expect(checks[name] == true, "\(name): \(text)")
                }
            }
            for name in [
                "a processing charge is settled by look-up", "a look-up of an undecided charge leaves it processing",
                "a refund whose webhook never came is settled by look-up",
                "a processing charge declined by its webhook",
            ] {
                #expect(checks[name] == true, "\(name): \(text)")
            }
        }
        #expect(report["double charges"] as? Int == 0)
    }
}
