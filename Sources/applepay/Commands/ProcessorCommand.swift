import Cryptography
import Foundation
import Foundations
import Logging
import ProcessorAPI
import ProcessorService

/// `applepay processor`: the sandbox payment processor as an HTTP service.
struct ProcessorCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "processor",
            abstract:
                "Run a sandbox payment processor that speaks docs/PROCESSOR-PROTOCOL.md; check provider webhooks.",
            subcommands: [ProcessorServeCommand.self, ProcessorVerifyWebhookCommand.self])
    }
}

/// `applepay processor serve [--host ADDR] [--port N] --ledger sqlite:PATH [--sandbox DIR] [--hang-seconds S]
/// [--fault KIND[:COUNT[:SECONDS]]]`.
struct ProcessorServeCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "serve",
            abstract: "Serve the processor protocol with a durable SQLite ledger, test triggers and fault injection.",
            usage: [
                "--ledger sqlite:PATH [--host ADDRESS] [--port N] [--sandbox DIR] [--hang-seconds S] "
                    + "[--fault KIND[:COUNT[:SECONDS]]]"
            ],
            options: [
                ("--ledger sqlite:PATH", "The ledger file (created with mode 0600 when missing; required)."),
                ("--host ADDRESS", "The address to listen on (default 127.0.0.1)."),
                ("--port N", "The port to listen on; 0 picks a free one (default 0)."),
                ("--sandbox DIR", "Accept only tokens that chained to DIR/root.pem (from 'applepay sandbox init')."),
                ("--hang-seconds S", "How long the 54 trigger stays silent before answering 500 (default 60)."),
                (
                    "--fault KIND[:COUNT[:SECONDS]]",
                    "Arm delay, dropAfterCommit or failBeforeCommit for the next COUNT charges (default 1)."
                ),
            ],
            discussion: """
                Prints one line with its URL (http://HOST:PORT) on standard output once listening, then one JSON log
                line per request on standard error (method, route, status, duration; never card data). Test
                triggers and faults: docs/SANDBOX-PROCESSOR.md; faults can also be armed with POST /v1/faults.
                SIGINT or SIGTERM stop accepting connections, finish the requests in flight, and exit 0.
                """)
    }

    var configuration: ProcessorServer.Configuration
    var sandboxFolder: String?

    init(arguments: inout Arguments) throws {
        guard let ledger = try arguments.option("--ledger") else {
            throw UsageError("--ledger sqlite:PATH is required")
        }
        guard ledger.hasPrefix("sqlite:"), ledger.count > "sqlite:".count else {
            throw UsageError("--ledger must be sqlite:PATH")
        }
        let host = try arguments.option("--host") ?? "127.0.0.1"
        let port = try arguments.option("--port", as: { UInt16($0) }) ?? 0
        let hang = try arguments.option(
            "--hang-seconds", as: { Double($0).flatMap { $0 >= 0 && $0 <= 3600 ? $0 : nil } })
        let fault = try arguments.option("--fault", as: Self.parseFault)
        sandboxFolder = try arguments.option("--sandbox")
        configuration = ProcessorServer.Configuration(
            ledgerPath: String(ledger.dropFirst("sqlite:".count)), host: host, port: port,
            hangDuration: .milliseconds(Int64((hang ?? 60) * 1000)), fault: fault,
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

    func run() async throws -> Int32 {
        var configuration = self.configuration
        if let sandboxFolder {
            let rootPath = URL(fileURLWithPath: sandboxFolder).appendingPathComponent("root.pem").path
            do {
                let pem = try String(contentsOfFile: rootPath, encoding: .utf8)
                let root = try Certificate(pem: pem)
                configuration.rootFingerprint = root.sha256Fingerprint.map { String(format: "%02x", $0) }.joined()
            } catch {
                Output.standardError("error: cannot read the sandbox root \(rootPath): \(error)")
                return SandboxExit.noInput
            }
        }
        let server: ProcessorServer
        do {
            server = try ProcessorServer.start(configuration)
        } catch {
            Output.standardError("error: cannot start the processor: \(error.message) [\(error.code)]")
            return ExitCode.failure
        }
        return await ServeCommand.serve(announcing: "Processor listening on \(server.url.absoluteString)") {
            await server.shutdown()
        }
    }
}
