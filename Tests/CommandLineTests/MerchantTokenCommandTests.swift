import Foundation
import Foundations
import TestSupport
import Testing

/// The flaky merchant of `python/flaky_merchant.py`: plain HTTP on 127.0.0.1, 503 for its first requests.
final class FlakyMerchant: Sendable {
    let port: UInt16
    let logPath: String
    private let process: Process

    private init(failures: Int, logPath: String) throws {
        let script = Repository.root.appendingPathComponent("Tests/CommandLineTests/python/flaky_merchant.py").path
        _ = FileManager.default.createFile(atPath: logPath, contents: Data())
        guard let (process, port) = try PortPrintingScript.launch(script, [String(failures), logPath]) else {
            throw ExternalToolFailure(description: "flaky_merchant.py did not start")
        }
        self.port = port
        self.logPath = logPath
        self.process = process
    }

    /// Starts one on a thread of its own (it waits for the script's first line).
    static func start(failures: Int, logPath: String) async throws -> FlakyMerchant {
        try await blocking { try FlakyMerchant(failures: failures, logPath: logPath) }
    }

    var url: String { "http://127.0.0.1:\(port)" }

    /// The paths it was asked for, in order.
    var requests: [String] {
        ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    func stop() {
        let process = self.process
        kill(process.processIdentifier, SIGKILL)
        Thread { process.waitUntilExit() }.start()
    }
}

/// `applepay sandbox mint --merchant-token` and `applepay sandbox gateway emit`, run as a user runs them.
@Suite("applepay sandbox: merchant tokens")
struct MerchantTokenCommandTests {
    /// A fresh sandbox (emit writes into it) and a merchant token minted in it with `notificationURL`.
    static func mintMerchantToken(in folder: TemporaryDirectory, notificationURL: String) async throws -> (
        box: String, identifier: String, tokenPath: String
    ) {
        let box = try await SimulateCommandTests.makeSandbox(in: folder)
        let out = folder.path("token.json")
        let minted = try await CommandLineTool.run([
            "sandbox", "mint", box, "--amount", "9.99", "--currency", "USD", "--merchant-token",
            "--token-notification-url", notificationURL, "--out", out,
        ])
        #expect(minted.status == 0, "\(minted.standardError)")
        let range = try #require(
            minted.standardError.range(of: #"merchant token DNITHE[0-9]+"#, options: .regularExpression),
            "\(minted.standardError)")
        let identifier = String(minted.standardError[range].dropFirst("merchant token ".count))
        return (box, identifier, out)
    }

    static func luhnValid(_ digits: String) -> Bool {
        var sum = 0
        for (index, character) in digits.reversed().enumerated() {
            guard var digit = character.wholeNumberValue else { return false }
            if index % 2 == 1 {
                digit *= 2
                if digit > 9 { digit -= 9 }
            }
            sum += digit
        }
        return sum % 10 == 0
    }

    @Test("mint --merchant-token: the decrypted payload carries the identifier, its metadata and an MPAN")
    func mintMerchantToken() async throws {
        let folder = try TemporaryDirectory(prefix: "cli-merchant-token")
        defer { folder.remove() }
        let notificationURL = "https://shop.example/apple-pay"
        let (box, identifier, out) = try await Self.mintMerchantToken(in: folder, notificationURL: notificationURL)
        #expect(identifier.count == 24)
        #expect(ExternalTool.mode(out) == 0o600)
        // The token file is a PKPaymentToken like any other: no MPAN or identifier in the clear.
        let tokenText = try String(contentsOfFile: out, encoding: .utf8)
        #expect(!tokenText.contains(identifier))

        // Decrypted by the independent Python implementation.
        let decrypted = try await ExternalTool.run(
            "python3",
            [
                ExternalTool.python, "decrypt", out, "--cert", "\(box)/payment-processing-ec.pem", "--key",
                "\(box)/payment-processing-ec.key.pem",
            ])
        try #require(decrypted.status == 0, "\(decrypted.standardError)")
        let payload = try #require(decrypted.json?["payload"] as? [String: Any], "\(decrypted.standardOutput)")
        #expect(payload["merchantTokenIdentifier"] as? String == identifier)
        #expect(payload["transactionAmount"] as? Int == 999)
        let devicePAN = "4761120010000492"
        let mpan = try #require(payload["applicationPrimaryAccountNumber"] as? String)
        #expect(mpan != devicePAN, "a merchant token's account number is the MPAN, not the device PAN")
        #expect(mpan.count == devicePAN.count)
        #expect(mpan.prefix(6) == devicePAN.prefix(6) && mpan.suffix(4) == devicePAN.suffix(4))
        #expect(Self.luhnValid(mpan))
        let metadata = try #require(payload["merchantTokenMetadata"] as? [String: Any])
        let card = try #require(metadata["cardMetadata"] as? [String: Any])
        // Apple's field names: the card's own last four digits are `fpanSuffix` (the sandbox card's shown digits).
        #expect(card["fpanSuffix"] as? String == "0492" && card["suffix"] == nil)
        #expect(card["cardCountry"] as? String == "US" && card["shortDescription"] is String)

        // The sandbox registered it as Apple does: identifier, merchant, notification URL; never the MPAN.
        let recordPath = "\(box)/merchant-tokens/tokens/\(identifier).json"
        let record = try String(contentsOfFile: recordPath, encoding: .utf8)
        #expect(
            record.contains(notificationURL.replacingOccurrences(of: "/", with: "\\/"))
                || record.contains(notificationURL))
        #expect(!record.contains(mpan))
        #expect(ExternalTool.mode(recordPath) == 0o600)

        // Without --merchant-token, a notification URL is a usage error; a plain mint has no merchant token.
        let usage = try await CommandLineTool.run([
            "sandbox", "mint", box, "--amount", "1", "--currency", "USD", "--token-notification-url", notificationURL,
        ])
        #expect(usage.status == 64)
        #expect(usage.standardError.contains("--merchant-token"))
        let plain = try await CommandLineTool.run(["sandbox", "mint", box, "--amount", "1", "--currency", "USD"])
        #expect(plain.status == 0)
        #expect(!plain.standardError.contains("merchant token"))
    }

    @Test(
        "gateway emit records the event and notifies a real merchant server on loopback, which pulls it from the gateway"
    )
    func emitNotifiesMerchantServer() async throws {
        let folder = try TemporaryDirectory(prefix: "cli-emit")
        defer { folder.remove() }
        let (box, identifier, _) = try await Self.mintMerchantToken(
            in: folder, notificationURL: "https://shop.example/apple-pay")
        // The merchant answers 200 only once it has pulled the event: from the sandbox gateway.
        let gateway = try await RunningServer.start(arguments: ["sandbox", "gateway", "--port", "0", box])
        var gatewayURL: String?
        for _ in 0..<400 where gatewayURL == nil {
            let text = gateway.standardOutput
            if let range = text.range(of: #"https://[^\s]+"#, options: .regularExpression) {
                gatewayURL = String(text[range])
            } else {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        let gatewayBase = try #require(gatewayURL, "the gateway did not start: \(gateway.standardError)")
        let arguments = [
            "serve", "--sandbox", box, "--sandbox-gateway", gatewayBase, "--store",
            "sqlite:" + folder.path("orders.sqlite"),
            "--port", "0",
        ]
        try await Self.notified(arguments: arguments, gateway: gateway) { server in
            let url = try #require(server.baseURL, "the server did not start: \(server.standardError)")
            let emitted = try await CommandLineTool.run([
                "sandbox", "gateway", "emit", box, "--event", "UNLINK", "--merchant-token", identifier, "--notify", url,
            ])
            #expect(emitted.status == 0, "\(emitted.standardError)")
            let answer = try #require(emitted.json, "\(emitted.standardOutput)")
            let eventID = try #require(answer["eventId"] as? String)
            #expect(answer["eventType"] as? String == "UNLINK")
            #expect(answer["status"] as? Int == 200)
            #expect(answer["attempts"] as? Int == 1)
            // The registered URL's path on the given scheme, host and port.
            #expect(answer["notificationURL"] as? String == url + "/apple-pay/notification/merchantToken/" + eventID)
            // Recorded for the gateway to answer, and the token marked unlinked.
            let event = try String(contentsOfFile: "\(box)/merchant-tokens/events/\(eventID).json", encoding: .utf8)
            #expect(event.contains("UNLINK") && event.contains(identifier))
            let record = try String(contentsOfFile: "\(box)/merchant-tokens/tokens/\(identifier).json", encoding: .utf8)
            #expect(record.contains("unlinkedAt"))
            // The merchant server got the notification: its request log line names the route and the event.
            try await Self.waitFor {
                server.standardError.split(separator: "\n").contains {
                    $0.contains("notification") && $0.contains("merchantToken") && $0.contains(eventID)
                }
            }
        }
    }

    /// Runs `body` with `applepay ARGUMENTS` started, then stops it and `gateway`, on every path.
    static func notified(
        arguments: [String], gateway: RunningServer, _ body: (RunningServer) async throws -> Void
    ) async throws {
        try await withCleanup {
            try await RunningServer.with(arguments: arguments, body)
        } cleanup: {
            await gateway.stop()
        }
    }

    @Test("gateway emit retries a 5xx: two 503s then 200 is three attempts and success; only 503s is exit 1")
    func emitRetries5xx() async throws {
        let folder = try TemporaryDirectory(prefix: "cli-emit-retry")
        defer { folder.remove() }
        let (box, identifier, _) = try await Self.mintMerchantToken(
            in: folder, notificationURL: "https://shop.example/apple-pay")

        let recovering = try await FlakyMerchant.start(failures: 2, logPath: folder.path("recovering.log"))
        defer { recovering.stop() }
        let emitted = try await CommandLineTool.run([
            "sandbox", "gateway", "emit", box, "--event", "UPDATED_METADATA", "--merchant-token", identifier,
            "--notify", recovering.url,
        ])
        #expect(emitted.status == 0, "\(emitted.standardError)")
        let answer = try #require(emitted.json, "\(emitted.standardOutput)")
        let eventID = try #require(answer["eventId"] as? String)
        #expect(answer["status"] as? Int == 200)
        #expect(answer["attempts"] as? Int == 3)
        #expect(recovering.requests == Array(repeating: "/apple-pay/notification/merchantToken/\(eventID)", count: 3))

        let down = try await FlakyMerchant.start(failures: 100, logPath: folder.path("down.log"))
        defer { down.stop() }
        let failed = try await CommandLineTool.run([
            "sandbox", "gateway", "emit", box, "--event", "UPDATED_CARD_ART", "--merchant-token", identifier,
            "--notify", down.url,
        ])
        #expect(failed.status == 1)
        let failure = try #require(failed.json, "\(failed.standardOutput)")
        #expect(failure["status"] as? Int == 503)
        #expect(failure["attempts"] as? Int == 3)
        #expect(down.requests.count == 3)
        // Each event is recorded even when the merchant did not take it (Apple keeps them for the merchant to pull).
        let events = try FileManager.default.contentsOfDirectory(atPath: "\(box)/merchant-tokens/events")
        #expect(events.count == 2)

        // An unknown token or event type: refused before anything is sent.
        let unknown = try await CommandLineTool.run([
            "sandbox", "gateway", "emit", box, "--event", "UNLINK", "--merchant-token", "DNITHE000", "--notify",
            down.url,
        ])
        #expect(unknown.status != 0)
        let badEvent = try await CommandLineTool.run([
            "sandbox", "gateway", "emit", box, "--event", "DELETE", "--merchant-token", identifier,
        ])
        #expect(badEvent.status == 64)
        #expect(down.requests.count == 3)
    }

    /// Polls `condition` (a server's log is written after it answers) for up to 20 seconds.
    static func waitFor(_ condition: () -> Bool) async throws {
        for _ in 0..<400 {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(condition())
    }
}
