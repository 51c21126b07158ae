import Foundation
import TestSupport
import Testing

/// `applepay simulate --merchant-url URL --checkout ID --checkout-secret SECRET`: paying a checkout someone else
/// created, as in the README's curl session, against the real server.
@Suite("applepay simulate --checkout")
struct SimulateCheckoutTests {
    typealias Transcript = SimulateCommandTests.Transcript

    /// `curl -s` with the given extra arguments; the body parsed as a JSON object.
    static func curlJSON(_ arguments: [String]) async throws -> [String: Any] {
        let result = try await Subprocess.run("curl", ["-s", "--max-time", "10"] + arguments)
        #expect(result.status == 0, "curl \(arguments): \(result.standardError)")
        let object = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        return try #require(object, "curl \(arguments) printed \(result.standardOutput)")
    }

    /// curl arguments for an admin API request (the servers started here have `RunningServer.adminToken`).
    static func admin(_ url: String) -> [String] {
        ["-H", "Authorization: Bearer \(RunningServer.adminToken)", url]
    }

    static func total(_ object: [String: Any]?) -> String? {
        (object?["total"] as? [String: Any])?["amount"] as? String
    }

    @Test("pays a checkout made with POST /v1/checkouts; the transcript's orderId is the order GET /v1/orders shows")
    func paysExistingCheckout() async throws {
        try await RunningServer.servingNewSandbox(prefix: "simulate-checkout") { sandbox, url in
            // Two mugs: a cart unlike the scenario's (two bags of coffee), so the test sees whose cart is paid.
            let created = try await Self.curlJSON([
                "-X", "POST", url + "/v1/checkouts", "-H", "Content-Type: application/json",
                "-d", #"{"items": [{"sku": "MUG-01", "quantity": 2}]}"#,
            ])
            let checkoutID = try #require(created["id"] as? String)
            let secret = try #require(created["clientSecret"] as? String)

            let result = try await CommandLineTool.run(
                [
                    "simulate", SimulateCommandTests.scenario("plain-purchase"), "--merchant-url", url,
                    "--checkout", checkoutID, "--checkout-secret", secret, "--sandbox", sandbox,
                ], timeout: 60)
            #expect(result.status == 0, "\(result.standardError)")
            let transcript = Transcript(result.standardOutput)
            #expect(transcript.outcome == "success", "\(result.standardOutput)")
            let answer = transcript.lines("paymentauthorized").last?["answer"] as? [String: Any]
            #expect(answer?["status"] as? String == "success")
            let orderID = try #require(answer?["orderId"] as? String, "\(result.standardOutput)")
            #expect(orderID.hasPrefix("ord_"))
            #expect(transcript.lines.last?["orderId"] as? String == orderID, "the finished line names the order")
            // Never the card number, the token's encrypted data or its cryptogram.
            #expect(!result.standardOutput.contains("4761120010000492"))
            #expect(!result.standardOutput.contains("paymentData"))
            #expect(!result.standardOutput.contains("onlinePaymentCryptogram"))
            #expect(!result.standardOutput.contains(secret), "nor the checkout's secret")
            #expect(!result.standardError.contains(secret))

            let order = try await Self.curlJSON(Self.admin(url + "/admin/v1/orders/" + orderID))
            #expect(order["id"] as? String == orderID)
            #expect(order["checkoutId"] as? String == checkoutID, "the order is for the curl's checkout")
            #expect(order["status"] as? String == "paid")
            let items = order["items"] as? [[String: Any]] ?? []
            #expect(items.map { $0["sku"] as? String } == ["MUG-01"], "the server's cart, not the scenario's")
            #expect(items.first?["quantity"] as? Int == 2)
            // The order's total is the checkout's (as the sheet left it: address and express shipping chosen),
            // and the amount the token was minted for.
            let checkout = try await Self.curlJSON([
                "-H", "Checkout-Secret: \(secret)", url + "/v1/checkouts/" + checkoutID,
            ])
            let checkoutTotal = try #require(Self.total(checkout["paymentRequest"] as? [String: Any]))
            let orderTotal = (order["totals"] as? [String: Any])?["total"] as? String
            #expect(orderTotal == checkoutTotal)
            #expect(Self.total(transcript.lines.last) == checkoutTotal)
            let payment = transcript.lines("paymentauthorized").last?["payment"] as? [String: Any]
            #expect(payment?["amount"] as? String == checkoutTotal)

            // An id the server does not know, or a known one with a wrong secret: the same clear error, exit 2, no
            // transcript.
            for (id, guess) in [("chk_doesnotexist", secret), (checkoutID, String(repeating: "0", count: 32))] {
                let unknown = try await CommandLineTool.run(
                    [
                        "simulate", SimulateCommandTests.scenario("plain-purchase"), "--merchant-url", url,
                        "--checkout", id, "--checkout-secret", guess, "--sandbox", sandbox,
                    ], timeout: 60)
                #expect(unknown.status == 2)
                #expect(unknown.standardError.contains("no checkout '\(id)'"), "\(unknown.standardError)")
                #expect(unknown.standardOutput.isEmpty)
            }
        }
    }

    @Test("a scenario with only a wallet and actions pays an existing checkout, and is refused without one")
    func walletOnlyScenario() async throws {
        let folder = try TemporaryDirectory(prefix: "simulate-checkout")
        defer { folder.remove() }
        var object = try SimulateCommandTests.scenarioObject("plain-purchase")
        for key in ["paymentRequest", "checkout", "merchant"] { object[key] = nil }
        let path = folder.path("wallet-only.json")
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
        let sandbox = try await SimulateCommandTests.makeSandbox(in: folder)

        // Alone it has nothing to show: exit 1 naming the field.
        let alone = try await CommandLineTool.run(["simulate", path, "--sandbox", sandbox])
        #expect(alone.status == 1)
        #expect(alone.standardError.contains("paymentRequest"), "\(alone.standardError)")

        try await RunningServer.serving(sandbox, in: folder) { _, url in
            // No cart to create a checkout from: exit 1 naming the field.
            let noCart = try await CommandLineTool.run(
                ["simulate", path, "--merchant-url", url, "--sandbox", sandbox], timeout: 60)
            #expect(noCart.status == 1)
            #expect(noCart.standardError.contains("checkout"), "\(noCart.standardError)")

            let created = try await Self.curlJSON([
                "-X", "POST", url + "/v1/checkouts", "-H", "Content-Type: application/json",
                "-d", #"{"items": [{"sku": "GRINDER-9", "quantity": 1}]}"#,
            ])
            let checkoutID = try #require(created["id"] as? String)
            let secret = try #require(created["clientSecret"] as? String)
            let paid = try await CommandLineTool.run(
                [
                    "simulate", path, "--merchant-url", url, "--checkout", checkoutID, "--checkout-secret", secret,
                    "--sandbox", sandbox,
                ], timeout: 60)
            #expect(paid.status == 0, "\(paid.standardError)")
            let transcript = Transcript(paid.standardOutput)
            #expect(transcript.outcome == "success", "\(paid.standardOutput)")
            let orderID = try #require(transcript.lines.last?["orderId"] as? String)
            let order = try await Self.curlJSON(Self.admin(url + "/admin/v1/orders/" + orderID))
            #expect(order["checkoutId"] as? String == checkoutID)
            #expect((order["items"] as? [[String: Any]])?.first?["sku"] as? String == "GRINDER-9")
        }
    }

    @Test("--checkout without --merchant-url or --checkout-secret, or with an empty id, is a usage error")
    func usage() async throws {
        let scenario = SimulateCommandTests.scenario("plain-purchase")
        let server = "http://127.0.0.1:9"
        let alone = try await CommandLineTool.run(["simulate", scenario, "--checkout", "chk_1"])
        #expect(alone.status == 64)
        #expect(alone.standardError.contains("--merchant-url"))
        let empty = try await CommandLineTool.run(
            ["simulate", scenario, "--merchant-url", server, "--checkout", "", "--checkout-secret", "s"])
        #expect(empty.status == 64)
        let noSecret = try await CommandLineTool.run(
            ["simulate", scenario, "--merchant-url", server, "--checkout", "chk_1"])
        #expect(noSecret.status == 64)
        #expect(noSecret.standardError.contains("--checkout-secret"), "\(noSecret.standardError)")
        let emptySecret = try await CommandLineTool.run(
            ["simulate", scenario, "--merchant-url", server, "--checkout", "chk_1", "--checkout-secret", ""])
        #expect(emptySecret.status == 64)
        let secretAlone = try await CommandLineTool.run(
            ["simulate", scenario, "--merchant-url", server, "--checkout-secret", "s"])
        #expect(secretAlone.status == 64)
        let help = try await CommandLineTool.run(["simulate", "--help"])
        #expect(help.standardOutput.contains("--checkout"))
        #expect(help.standardOutput.contains("--checkout-secret"))
        #expect(help.standardOutput.contains("ignored"), "the help says the scenario's cart is ignored")
    }
}
