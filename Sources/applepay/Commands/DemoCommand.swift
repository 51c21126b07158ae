import ArgumentParser
import Foundation
import Foundations
import JSONLogging
import Logging
import MerchantCore
import MerchantSandbox
import MerchantServer
import MerchantStore
import PaymentSheet
import Sandbox
import Synchronization

/// `applepay demo`: the merchant server on a free port, the example scenarios played against it over HTTP.
struct DemoCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Start a server on a free port, play the example scenarios against it, print transcripts and orders.",
        usage: "applepay demo [--scenarios DIR] [--sandbox DIR]",
        discussion: """
            Starts `applepay serve` in-process on 127.0.0.1 with the demo store, a temporary SQLite store and a \
            sandbox, then plays every scenario that has a checkout cart through the headless payment sheet over \
            HTTP. Prints, one JSON object per line: {"scenario", "description"}, the sheet's transcript, and \
            {"order": ...} for each order the scenario's payment created (last four digits only). Stops the \
            server at the end. Exit status 0 when every scenario ran to its end, 1 otherwise.
            """)

    @Option(
        name: .customLong("scenarios"),
        help: ArgumentHelp("Where the scenario files are (default: scenarios).", valueName: "DIR"))
    var scenariosOption: String?

    @Option(
        name: .customLong("sandbox"),
        help: ArgumentHelp(
            "An existing sandbox to use (default: a temporary one, removed afterwards).", valueName: "DIR"))
    var sandboxFolder: String?

    func perform() async throws -> ExitCode {
        let scenariosFolder = scenariosOption ?? "scenarios"
        let manager = FileManager.default
        guard
            let names = try? manager.contentsOfDirectory(atPath: scenariosFolder).filter({ $0.hasSuffix(".json") })
                .sorted(),
            !names.isEmpty
        else {
            Output.standardError("error: no scenario files (*.json) in \(scenariosFolder)")
            return .failure
        }
        let work = manager.temporaryDirectory.appendingPathComponent("applepay-demo-\(UUID().uuidString)")
        defer { try? manager.removeItem(at: work) }
        do {
            try manager.createDirectory(
                at: work, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            Output.standardError("error: cannot create a working folder in \(manager.temporaryDirectory.path)")
            return .failure
        }
        let sandbox: Sandbox
        do {
            sandbox =
                try sandboxFolder.map { try Sandbox.load(from: URL(fileURLWithPath: $0)) }
                ?? Sandbox.create(
                    at: work.appendingPathComponent("sandbox"), merchantIdentifier: "merchant.com.example.demo")
        } catch {
            Output.standardError(
                "error: the sandbox cannot be used: \((error as? SandboxError)?.message ?? "\(error)")")
            return .failure
        }

        var configuration = MerchantServerConfiguration()
        configuration.port = 0
        configuration.useSandbox(folder: sandbox.folder.path)
        configuration.storeLocation = .sqlite(path: work.appendingPathComponent("orders.sqlite").path)
        // Order ids come from the server's own request log.
        let orders = Mutex<[String]>([])
        let logger = Logger(label: "applepay.demo") { _ in
            JSONLogHandler { line in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    object["route"] as? String == "/v1/checkouts/{id}/payment", let id = object["orderId"] as? String
                else { return }
                orders.withLock { if !$0.contains(id) { $0.append(id) } }
            }
        }
        let application: MerchantApplication
        do {
            application = try await MerchantApplication.start(configuration, plugins: [SandboxMode()], logger: logger)
        } catch {
            Output.standardError("error: cannot start the server: \(error.message) [\(error.code)]")
            return .failure
        }
        let output = FileHandle.standardOutput
        func emit(_ object: [String: Any]) {
            if let data = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            {
                output.write(data + Data("\n".utf8))
            }
        }
        emit(["server": application.url, "merchantIdentifier": application.configuration.store.merchantIdentifier])
        var failures = 0
        for name in names {
            let path = URL(fileURLWithPath: scenariosFolder).appendingPathComponent(name)
            let scenario: Scenario
            do {
                scenario = try Scenario.load(from: path)
            } catch {
                emit(["scenario": name, "error": error.message])
                failures += 1
                continue
            }
            guard scenario.checkout != nil else {
                emit([
                    "scenario": name,
                    "skipped":
                        "no checkout cart: this scenario plays only in process with its own store (applepay simulate)",
                ])
                continue
            }
            emit(["scenario": name, "description": scenario.description ?? ""])
            let before = orders.withLock { $0.count }
            do {
                _ = try await ScenarioRunner.run(scenario, sandbox: sandbox, merchantURL: application.url) { entry in
                    output.write(Data((entry.jsonLine + "\n").utf8))
                }
            } catch {
                emit(["scenario": name, "error": error.message])
                failures += 1
            }
            for id in orders.withLock({ Array($0.dropFirst(before)) }) {
                if let order = try? await application.store.order(id: id),
                    let data = try? JSONEncoder().encode(order),
                    let object = try? JSONSerialization.jsonObject(with: data)
                {
                    emit(["order": object])
                }
            }
        }
        await application.shutdown()
        return failures == 0 ? .success : .failure
    }
}
