import Foundation
import TestSupport
import Testing

/// The README's subscription walkthrough, run as written: checkout, payment with a minted merchant token (the
/// $1 trial), the sandbox clock moved to `nextChargeAt`, the second charge. Only what `make run` fixes is
/// substituted: the server's address (a free port here), the built tool's path and `/tmp/` (a temporary folder).
@Suite("README: a subscription from checkout to its second charge")
struct SubscriptionWalkthroughTests {
    /// The shell block after the `<!-- walkthrough: NAME -->` marker in README.md.
    static func walkthrough(_ name: String) throws -> String {
        let readme = try String(
            contentsOf: Repository.root.appendingPathComponent("README.md"), encoding: .utf8)
        let marker = try #require(readme.range(of: "<!-- walkthrough: \(name) -->"), "no walkthrough \(name)")
        let rest = readme[marker.upperBound...]
        let open = try #require(rest.range(of: "```sh\n"))
        let close = try #require(rest[open.upperBound...].range(of: "\n```"))
        return String(rest[open.upperBound..<close.lowerBound])
    }

    @Test("the README's commands take a BEANS-MONTHLY checkout to its second charge, each charged once")
    func subscriptionWalkthrough() async throws {
        let block = try Self.walkthrough("subscription")
        #expect(block.contains("http://127.0.0.1:8080") && block.contains(".build/release/applepay"))
        #expect(block.contains("charge-due") && block.contains("\"now\""))

        // What `make run` leaves behind: a sandbox in .sandbox with its admin token, the repository's scenarios.
        let folder = try TemporaryDirectory(prefix: "readme-subscription")
        defer { folder.remove() }
        let made = try await CommandLineTool.run([
            "sandbox", "init", folder.path(".sandbox"), "--merchant-id", "merchant.com.example.sandbox",
        ])
        #expect(made.status == 0, "\(made.standardError)")
        try RunningServer.adminToken.write(
            toFile: folder.path(".sandbox/admin-token"), atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(
            atPath: folder.path("scenarios"), withDestinationPath: Repository.scenarios.path)

        let arguments = [
            "serve", "--sandbox", folder.path(".sandbox"), "--store", "sqlite:" + folder.path("orders.sqlite"),
            "--port", "0",
        ]
        try await RunningServer.with(arguments: arguments) { server in
            let url = try #require(server.baseURL, "the server did not start: \(server.standardError)")
            let script =
                "cd '\(folder.url.path)'\n"
                // `/tmp/` first: the tool's own path may be under /tmp (a clone there) and must stay as it is.
                + block.replacingOccurrences(of: "/tmp/", with: folder.url.path + "/")
                .replacingOccurrences(of: "http://127.0.0.1:8080", with: url)
                .replacingOccurrences(of: ".build/release/applepay", with: "'\(CommandLineTool.executable.path)'")
            let run = try await Subprocess.run("bash", ["-euo", "pipefail", "-c", script], timeout: 120)
            #expect(run.status == 0, "\(run.standardOutput)\n\(run.standardError)")
            let lines = run.standardOutput.split(separator: "\n").map(String.init)
            #expect(lines.count == 3, "\(run.standardOutput)")

            // The subscription before the clock moved: active, cycle 1 due at the trial's end, nothing charged.
            func object(_ line: String?) throws -> [String: Any] {
                let data = Data((line ?? "").utf8)
                return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(line ?? "")")
            }
            let before = try object(lines.first)
            let started = try #require(before["subscription"] as? [String: Any])
            #expect(started["status"] as? String == "active")
            #expect(started["cycle"] as? Int == 1)
            #expect((started["merchantTokenIdentifier"] as? String)?.hasPrefix("DNITHE") == true)
            #expect((before["charges"] as? [Any])?.isEmpty == true)
            let next = try #require(started["nextChargeAt"] as? String)

            // The clock moved to nextChargeAt: one charge, cycle 1 at the plan's price, as of that instant.
            let moved = try object(lines.dropFirst().first)
            #expect(moved["now"] as? String == next)
            let charges = try #require(moved["charges"] as? [[String: Any]])
            #expect(charges.count == 1)
            #expect(charges.first?["cycle"] as? Int == 1)
            #expect(charges.first?["amount"] as? String == "9.99")
            #expect(charges.first?["status"] as? String == "approved")
            #expect(charges.first?["dueAt"] as? String == next)

            // After: cycle 2 a month later; the order of the checkout is the $1 trial, paid.
            let after = try object(lines.last)
            let subscription = try #require(after["subscription"] as? [String: Any])
            #expect(subscription["cycle"] as? Int == 2)
            #expect(subscription["status"] as? String == "active")
            #expect((after["charges"] as? [Any])?.count == 1)
            let iso = ISO8601DateFormatter()
            let nextDate = try #require(iso.date(from: next))
            let following = try #require((subscription["nextChargeAt"] as? String).flatMap(iso.date(from:)))
            let days = following.timeIntervalSince(nextDate) / 86_400
            #expect(days >= 28 && days <= 31, "a month after the second charge's date")
            let orderID = try #require(subscription["orderId"] as? String)
            let order = try await SimulateCheckoutTests.curlJSON(
                SimulateCheckoutTests.admin(url + "/admin/v1/orders/" + orderID))
            #expect(order["status"] as? String == "paid")
            #expect((order["totals"] as? [String: Any])?["total"] as? String == "1.00")

            // Run again at the same instant: each cycle is charged once.
            let again = try await SimulateCheckoutTests.curlJSON(
                SimulateCheckoutTests.admin(url + "/admin/v1/subscriptions/charge-due") + [
                    "-X", "POST", "-H", "Content-Type: application/json", "-d", "{\"now\": \"\(next)\"}",
                ])
            #expect((again["charges"] as? [Any])?.isEmpty == true)
            // No card number, MPAN or cryptogram in the server's log.
            #expect(!server.standardError.contains("4761120010000492"))
            #expect(!server.standardError.contains("onlinePaymentCryptogram"))
        }
    }
}
