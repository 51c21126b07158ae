import ArgumentParser
import Cryptography
import Foundation
import Foundations
import Logging
import MerchantServer
import ProcessorAPI
import ProcessorService

/// `applepay processor`: the sandbox payment processor as an HTTP service.
struct ProcessorCommand: CommandGroup {
    static let configuration = CommandConfiguration(
        commandName: "processor",
        abstract: "Run a sandbox payment processor that speaks docs/PROCESSOR-PROTOCOL.md; check provider webhooks.",
        subcommands: [ProcessorServeCommand.self, ProcessorVerifyWebhookCommand.self])
}

/// `applepay processor serve [--host ADDR] [--port N] --ledger sqlite:PATH [--sandbox DIR] [--hang-seconds S]
/// [--fault KIND[:COUNT[:SECONDS]]]`.
struct ProcessorServeCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the processor protocol with a durable SQLite ledger, test triggers and fault injection.",
        usage: """
            applepay processor serve --ledger sqlite:PATH [--host ADDRESS] [--port N] [--sandbox DIR] \
            [--hang-seconds S] [--fault KIND[:COUNT[:SECONDS]]]
            """,
        discussion: """
            Prints one line with its URL (http://HOST:PORT) on standard output once listening, then one JSON log \
            line per request on standard error (method, route, status, duration; never card data). Test \
            triggers and faults: docs/SANDBOX-PROCESSOR.md; faults can also be armed with POST /v1/faults. \
            SIGINT or SIGTERM stop accepting connections, finish the requests in flight, and exit 0.
            """)

    @Option(
        help: ArgumentHelp(
            "The ledger file (created with mode 0600 when missing; required).", valueName: "sqlite:PATH"))
    var ledger: String?

    @Option(help: ArgumentHelp("The address to listen on (default 127.0.0.1).", valueName: "ADDRESS"))
    var host: String?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("The port to listen on; 0 picks a free one (default 0).", valueName: "N"))
    var port: UInt16?

    @Option(
        name: .customLong("sandbox"),
        help: ArgumentHelp(
            "Accept only tokens that chained to DIR/root.pem (from 'applepay sandbox init').", valueName: "DIR"))
    var sandboxFolder: String?

    @Option(
        name: .customLong("hang-seconds"), parsing: .unconditional,
        help: ArgumentHelp(
            "How long the 54 trigger stays silent before answering 500 (default 60).", valueName: "S"))
    var hangSeconds: Double?

    @Option(
        name: .customLong("fault"),
        help: ArgumentHelp(
            "Arm delay, dropAfterCommit or failBeforeCommit for the next COUNT charges (default 1).",
            valueName: "KIND[:COUNT[:SECONDS]]"))
    var faultText: String?

    func validate() throws {
        _ = try serverConfiguration()
    }

    /// The processor server the options describe.
    func serverConfiguration() throws -> ProcessorServer.Configuration {
        guard let ledger else { throw ValidationError("--ledger sqlite:PATH is required") }
        guard ledger.hasPrefix("sqlite:"), ledger.count > "sqlite:".count else {
            throw ValidationError("--ledger must be sqlite:PATH")
        }
        if let hangSeconds, !(0...3600).contains(hangSeconds) {
            throw ValidationError("invalid value '\(hangSeconds)' for --hang-seconds")
        }
        let fault = try faultText.map { text in
            guard let fault = Self.parseFault(text) else {
                throw ValidationError("invalid value '\(text)' for --fault")
            }
            return fault
        }
        return ProcessorServer.Configuration(
            ledgerPath: String(ledger.dropFirst("sqlite:".count)), host: host ?? "127.0.0.1", port: port ?? 0,
            hangDuration: .milliseconds(Int64((hangSeconds ?? 60) * 1000)), fault: fault,
            logger: Logger(label: "applepay.processor"))
    }

    /// `delay:2:15` → delay the next 2 charges by 15 s.
    static func parseFault(_ text: String) -> FaultBody? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard (1...3).contains(parts.count), let kind = FaultBody.Kind(rawValue: parts[0]) else { return nil }
        let count = parts.count > 1 ? Int(parts[1]) : 1
        let seconds = parts.count > 2 ? Double(parts[2]) : nil
        guard let count, count >= 1, parts.count < 3 || seconds.map({ $0 >= 0 && $0 <= 3600 }) == true else {
            return nil
        }
        return FaultBody(kind: kind, count: count, seconds: seconds)
    }

    func perform() async throws -> ExitCode {
        var configuration = try serverConfiguration()
        if let sandboxFolder {
            let rootPath = URL(fileURLWithPath: sandboxFolder).appendingPathComponent("root.pem").path
            do {
                let pem = try String(contentsOfFile: rootPath, encoding: .utf8)
                let root = try Certificate(pem: pem)
                configuration.rootFingerprint = root.sha256Fingerprint.map { String(format: "%02x", $0) }.joined()
            } catch {
                Output.standardError("error: cannot read the sandbox root \(rootPath): \(error)")
                return .noInput
            }
        }
        let server: ProcessorServer
        do {
            server = try ProcessorServer.start(configuration)
        } catch {
            Output.standardError("error: cannot start the processor: \(error.message) [\(error.code)]")
            return .failure
        }
        try await Serving.run(
            [ShutdownAction { await server.shutdown() }],
            announcing: "Processor listening on \(server.url.absoluteString)")
        return .success
    }
}
