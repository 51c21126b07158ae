import Foundation
import Foundations
import HTTPCore
import HTTPServer
import Logging
import ProcessorAPI
import Synchronization

/// The processor service: docs/PROCESSOR-PROTOCOL.md over HTTP, a durable SQLite ledger, the sandbox's test
/// triggers and fault injection (docs/SANDBOX-PROCESSOR.md).
///
/// ```swift
/// let server = try ProcessorServer.start(.init(ledgerPath: "/tmp/ledger.sqlite"))
/// print(server.url)  // http://127.0.0.1:PORT
/// await server.shutdown()
/// ```
public final class ProcessorServer: Sendable {
    /// Where the service listens, where its ledger lives and what it accepts.
    public struct Configuration: Sendable {
        /// The SQLite ledger file (created with mode 0600 when missing).
        public var ledgerPath: String
        /// An IPv4 or IPv6 literal, or `localhost`.
        public var host: String
        /// 0 picks a free port.
        public var port: UInt16
        /// When set, charges whose `rootFingerprint` differs are declined `notSandboxToken` (lowercase hex SHA-256
        /// of the sandbox root's DER).
        public var rootFingerprint: String?
        /// How long the `54` trigger stays silent before answering 500.
        public var hangDuration: Duration
        /// A fault armed from the start (as `POST /v1/faults` would).
        public var fault: FaultBody?
        /// Receives one line per request (no card data); `nil` logs nothing.
        public var logger: Logger?

        public init(
            ledgerPath: String, host: String = "127.0.0.1", port: UInt16 = 0, rootFingerprint: String? = nil,
            hangDuration: Duration = .seconds(60), fault: FaultBody? = nil, logger: Logger? = nil
        ) {
            self.ledgerPath = ledgerPath
            self.host = host
            self.port = port
            self.rootFingerprint = rootFingerprint
            self.hangDuration = hangDuration
            self.fault = fault
            self.logger = logger
        }
    }

    public let configuration: Configuration
    /// `http://HOST:PORT`.
    public let url: URL
    /// The bound port.
    public var port: UInt16 { server.port }
    private let server: HTTPServer
    private let routes: ProcessorRoutes

    /// Opens the ledger and starts listening.
    /// - Throws: ``ProcessorServiceError`` `cannotOpenLedger`, `cannotListen`, or `invalidRequest` for a bad fault.
    public static func start(_ configuration: Configuration) throws(ProcessorServiceError) -> ProcessorServer {
        try ProcessorServer(configuration)
    }

    private init(_ configuration: Configuration) throws(ProcessorServiceError) {
        let ledger = try ProcessorLedger(path: configuration.ledgerPath)
        let routes = ProcessorRoutes(
            ledger: ledger, rootFingerprint: configuration.rootFingerprint?.lowercased(),
            hangDuration: configuration.hangDuration)
        if let fault = configuration.fault {
            do { try routes.arm(fault) } catch {
                throw ProcessorServiceError(.invalidFault, error.message)
            }
        }
        let responder = LoggingResponder(router: routes.makeRouter(), logger: configuration.logger)
        let server: HTTPServer
        do {
            // Its clients are a few merchant servers, each with many connections from one address: no per-client
            // connection limit. Its routes never block a thread (the ledger's reads are short, its writes and the
            // delays are awaited): a charge runs on the polling thread until it waits for the ledger's commit.
            server = try HTTPServer.start(
                configuration: .init(
                    host: configuration.host, port: configuration.port, connectionLimit: 4096,
                    perClientConnectionLimit: 0, answersOnPollingThreads: true),
                responder: responder)
        } catch {
            throw ProcessorServiceError(.cannotListen, "\(error)")
        }
        let host = configuration.host == "localhost" ? "127.0.0.1" : configuration.host
        let printable = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        self.configuration = configuration
        self.url = URL(string: "http://\(printable):\(server.port)")!
        self.server = server
        self.routes = routes
    }

    /// Starts a service on 127.0.0.1 with a ledger at `ledgerPath`.
    /// - Throws: ``ProcessorServiceError``.
    public static func start(
        ledgerPath: String, host: String = "127.0.0.1", port: UInt16 = 0, rootFingerprint: String? = nil
    ) throws(ProcessorServiceError) -> ProcessorServer {
        try start(Configuration(ledgerPath: ledgerPath, host: host, port: port, rootFingerprint: rootFingerprint))
    }

    /// Arms a fault for the next charge requests, as `POST /v1/faults` does.
    /// - Throws: ``ProcessorServiceError`` `invalidFault`.
    public func arm(_ fault: FaultBody) throws(ProcessorServiceError) {
        do { try routes.arm(fault) } catch { throw ProcessorServiceError(.invalidFault, error.message) }
    }

    /// Disarms any fault, as `DELETE /v1/faults` does.
    public func disarm() { routes.disarm() }

    /// Stops accepting connections, ends delays and hangs early, waits for the requests in flight, then stops.
    public func shutdown() async {
        routes.stopping.withLock { $0 = true }
        await server.shutdown()
    }
}

/// Logs one line per request through swift-log: method, route pattern, status (or `dropped`) and duration (never a
/// body, so never card data).
struct LoggingResponder: Responder {
    let router: Router
    let logger: Logger?

    func respond(to request: HTTPRequest) async -> HTTPResponse {
        guard let logger else { return await router.respond(to: request) }
        let clock = ContinuousClock()
        let start = clock.now
        let response = await router.respond(to: request)
        let elapsed = start.duration(to: clock.now)
        var route = "unmatched"
        if case .matched(let pattern, _) = router.resolve(method: request.method, path: request.path) {
            route = pattern
        }
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        var fields: Logger.Metadata = [
            "method": .string(request.method.rawValue), "route": .string(route),
            "durationMs": .stringConvertible((milliseconds * 10).rounded() / 10),
        ]
        if response.closesConnectionWithoutAnswer {
            fields["dropped"] = .stringConvertible(true)
        } else {
            fields["status"] = .stringConvertible(response.status)
        }
        logger.info("request", metadata: fields)
        return response
    }
}
