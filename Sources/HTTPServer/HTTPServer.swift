internal import CGnuTLS
internal import CMicroHTTPD
import Foundation
import Foundations
import HTTPCore
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd: keep-alive, a pool of polling threads, a body limit enforced as the
/// body arrives, an idle timeout and a graceful shutdown. Each request is answered by a `Responder` on the
/// server's own responder threads while its connection is suspended, so a slow answer never holds a polling thread.
///
/// ```swift
/// let server = try HTTPServer.start(configuration: .init(port: 0), responder: router)
/// print(server.port)
/// await server.shutdown()
/// ```
public final class HTTPServer: Sendable {
    /// How the server listens and what it accepts.
    public struct Configuration: Sendable {
        /// The address to bind: an IPv4 or IPv6 literal, or `localhost`.
        public var host: String
        /// The port; 0 picks a free one (read it back from `HTTPServer.port`).
        public var port: UInt16
        /// Polling threads; defaults to the number of cores.
        public var threads: Int
        /// The largest request body accepted; beyond it the answer is `413`.
        public var maximumBodySize: Int
        /// Seconds a connection may stay idle (also while a request is arriving) before it is closed.
        public var connectionTimeout: Int
        /// The most connections open at once.
        public var connectionLimit: Int
        /// The most connections open at once from one client address (0: no limit). Further connections from that
        /// address are closed as soon as they are accepted. ``trustedProxies`` are not limited: their connections
        /// carry many clients.
        public var perClientConnectionLimit: Int
        /// Seconds a client has to send a whole request, head and body, counted from the moment its connection
        /// opened or its previous answer was queued; past it the connection is closed. Unlike `connectionTimeout`
        /// (idle time), a byte now and then does not extend it (slow-loris). An idle keep-alive connection is
        /// closed after the smaller of the two.
        public var requestTimeout: Int
        /// Threads that run responders (their own executor, apart from Swift's shared pool); defaults to twice the
        /// cores, at least 4.
        public var responderThreads: Int
        /// HTTPS instead of HTTP; `nil` serves plain HTTP.
        public var tls: TLS?
        /// Whether a polling thread runs the responder itself until the responder first waits (for a store, a
        /// network call, another thread), handing over to the responder threads only then; an answer that needs
        /// no waiting costs no hand-off. Only for responders that never block a thread (they `await` instead):
        /// blocking or long work would hold every connection of that polling thread. Off by default.
        public var answersOnPollingThreads: Bool
        /// The proxies whose forwarding header names the client (``HTTPRequest/clientAddress``); none by default:
        /// every request is its TCP peer's.
        public var trustedProxies: TrustedProxies

        /// HTTPS settings (libmicrohttpd's GnuTLS): the server's certificate and key, and optionally the CAs whose
        /// client certificates are asked for. A request then carries ``HTTPRequest/clientCertificate``.
        public struct TLS: Sendable {
            /// The server's certificate (PEM), optionally followed by its intermediates.
            public var certificatePEM: String
            /// The server's private key (PEM, unencrypted PKCS#8 or SEC1).
            public var privateKeyPEM: String
            /// CAs (PEM) that client certificates are verified against; `nil` asks for no client certificate.
            public var clientCertificateAuthoritiesPEM: String?

            public init(certificatePEM: String, privateKeyPEM: String, clientCertificateAuthoritiesPEM: String? = nil) {
                self.certificatePEM = certificatePEM
                self.privateKeyPEM = privateKeyPEM
                self.clientCertificateAuthoritiesPEM = clientCertificateAuthoritiesPEM
            }
        }

        public init(
            host: String = "127.0.0.1", port: UInt16 = 0, threads: Int = ProcessInfo.processInfo.activeProcessorCount,
            maximumBodySize: Int = 64 * 1024, connectionTimeout: Int = 30, connectionLimit: Int = 1024,
            perClientConnectionLimit: Int = 64, requestTimeout: Int = 30,
            responderThreads: Int = max(4, 2 * ProcessInfo.processInfo.activeProcessorCount), tls: TLS? = nil,
            answersOnPollingThreads: Bool = false, trustedProxies: TrustedProxies = TrustedProxies()
        ) {
            self.host = host
            self.port = port
            self.threads = threads
            self.maximumBodySize = maximumBodySize
            self.connectionTimeout = connectionTimeout
            self.connectionLimit = connectionLimit
            self.perClientConnectionLimit = perClientConnectionLimit
            self.requestTimeout = requestTimeout
            self.responderThreads = responderThreads
            self.tls = tls
            self.answersOnPollingThreads = answersOnPollingThreads
            self.trustedProxies = trustedProxies
        }
    }

    /// The domain of ``StartError``.
    public enum StartErrorDomain {}

    /// Why the server did not start: a stable `code` to switch on and a message naming the address.
    /// Equality on `code`.
    public typealias StartError = CodedFailure<StartErrorDomain>

    public let configuration: Configuration
    /// The port the server is bound to.
    public let port: UInt16
    private let core: ServerCore

    private init(configuration: Configuration, port: UInt16, core: ServerCore) {
        self.configuration = configuration
        self.port = port
        self.core = core
    }

    /// Starts listening; requests go to `responder` until `shutdown()`.
    /// - Throws: `StartError` when the address does not parse or the port cannot be bound.
    public static func start(configuration: Configuration, responder: any Responder) throws -> HTTPServer {
        if configuration.tls != nil, CMicroHTTPD_supports_tls() == 0 {
            throw StartError(.tlsUnsupported, "This libmicrohttpd was built without HTTPS support (GnuTLS).")
        }
        let core = ServerCore(
            responder: responder, maximumBodySize: configuration.maximumBodySize,
            requestTimeout: .seconds(max(1, configuration.requestTimeout)),
            executor: ResponderExecutor(threads: configuration.responderThreads), tls: configuration.tls,
            answersInline: configuration.answersOnPollingThreads, trustedProxies: configuration.trustedProxies,
            perClientConnectionLimit: configuration.trustedProxies.networks.isEmpty
                ? 0 : configuration.perClientConnectionLimit)
        let host = configuration.host == "localhost" ? "127.0.0.1" : configuration.host
        var flags = UInt32(MHD_USE_INTERNAL_POLLING_THREAD.rawValue) | UInt32(MHD_ALLOW_SUSPEND_RESUME.rawValue)
        #if os(Linux)
            flags |= UInt32(MHD_USE_EPOLL.rawValue)
        #else
            flags |= UInt32(MHD_USE_AUTO.rawValue)
        #endif
        if configuration.tls != nil { flags |= UInt32(MHD_USE_TLS.rawValue) }
        let daemon: OpaquePointer?
        if var address4 = Self.ipv4(host, port: configuration.port) {
            daemon = withUnsafePointer(to: &address4) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Self.startDaemon(flags: flags, address: $0, configuration: configuration, core: core)
                }
            }
        } else if var address6 = Self.ipv6(host, port: configuration.port) {
            flags |= UInt32(MHD_USE_IPv6.rawValue)
            daemon = withUnsafePointer(to: &address6) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Self.startDaemon(flags: flags, address: $0, configuration: configuration, core: core)
                }
            }
        } else {
            core.executor.stop()
            throw StartError(.invalidAddress, "'\(configuration.host)' is not an IP address to listen on.")
        }
        guard let daemon else {
            core.executor.stop()
            throw StartError(
                .cannotListen,
                configuration.tls == nil
                    ? "Cannot listen on \(configuration.host):\(configuration.port) (in use, or not allowed)."
                    : "Cannot listen on \(configuration.host):\(configuration.port) (in use, not allowed, or the TLS "
                        + "certificate or key was refused).")
        }
        core.daemon.withLock { $0 = DaemonHandle(pointer: daemon) }
        core.startSweeping()
        return HTTPServer(configuration: configuration, port: CMicroHTTPD_bound_port(daemon), core: core)
    }

    /// Runs `body` with a started server and shuts it down afterwards, on every path.
    @discardableResult
    public static func withServer<T>(
        configuration: Configuration, responder: any Responder, _ body: (HTTPServer) async throws -> T
    ) async throws -> T {
        let server = try start(configuration: configuration, responder: responder)
        return try await withCleanup {
            try await body(server)
        } cleanup: {
            await server.shutdown()
        }
    }

    /// Stops accepting connections, waits for the requests in flight to be answered (at most `gracePeriod`
    /// for requests still arriving; answers being computed are always awaited), then closes every connection.
    /// Calling it again does nothing.
    public func shutdown(gracePeriod: Duration = .seconds(10)) async {
        guard let daemon = quiesce() else { return }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: gracePeriod)
        while true {
            let (inFlight, dispatched) = core.counters.withLock { ($0.inFlight, $0.dispatched) }
            if inFlight == 0 || (dispatched == 0 && clock.now >= deadline) { break }
            // Woken when a request completes; re-checked at the grace deadline.
            await core.drained.wait(upTo: dispatched == 0 ? max(deadline - clock.now, .milliseconds(1)) : .seconds(1))
        }
        // From here on a request arriving on a kept-alive connection is answered 503 at once instead of being
        // suspended: libmicrohttpd must not be stopped with a suspended connection.
        core.counters.withLock { $0.stopping = true }
        while core.counters.withLock({ $0.dispatched }) > 0 { await core.drained.wait(upTo: .seconds(1)) }
        // A resumed connection is sent its answer by the polling thread; give it a moment to flush.
        try? await Task.sleep(for: .milliseconds(20))
        core.stopSweeping()
        MHD_stop_daemon(daemon.pointer)
        core.executor.stop()
    }

    /// Takes the daemon (so that only one caller stops it) and closes its listening socket, which quiescing
    /// hands back to us: new connections are refused at once. `nil` when the server is already stopping.
    private func quiesce() -> DaemonHandle? {
        guard
            let daemon = core.daemon.withLock({ handle -> DaemonHandle? in
                defer { handle = nil }
                return handle
            })
        else { return nil }
        let listener = MHD_quiesce_daemon(daemon.pointer)
        if listener >= 0 { close(listener) }
        return daemon
    }

    /// Requests received and not yet finished (answered or abandoned).
    public var requestsInFlight: Int { core.counters.withLock { $0.inFlight } }

    /// Connections open now.
    public var openConnections: Int { core.connections.withLock { $0.open.count } }

    /// Connections closed so far because their request did not arrive whole within `requestTimeout`.
    public var requestsTimedOut: Int { core.connections.withLock { $0.timedOut } }

    /// A server released without `shutdown()` (the documented way to stop one) stops listening at once and
    /// never blocks the releasing thread: with nothing being answered it stops there and then; otherwise a thread
    /// of its own waits (at most 30 s) for the answers being computed and then stops it, and if some never finish
    /// it leaves the daemon running rather than free what their connections still use.
    deinit {
        guard let daemon = quiesce() else { return }
        let core = self.core
        let idle = core.counters.withLock { counters -> Bool in
            counters.stopping = true
            return counters.dispatched == 0
        }
        core.stopSweeping()
        if idle {
            MHD_stop_daemon(daemon.pointer)
            core.executor.stop()
            return
        }
        Thread.detachNewThread {
            for _ in 0..<3000 where core.counters.withLock({ $0.dispatched }) > 0 { usleep(10_000) }
            if core.counters.withLock({ $0.dispatched }) > 0 {
                _ = Unmanaged.passRetained(core)
                return
            }
            // As in shutdown(): let the polling thread flush the last answers before stopping.
            usleep(20_000)
            MHD_stop_daemon(daemon.pointer)
            core.executor.stop()
        }
    }

    private static func startDaemon(
        flags: UInt32, address: UnsafePointer<sockaddr>, configuration: Configuration, core: ServerCore
    ) -> OpaquePointer? {
        let context = Unmanaged.passUnretained(core).toOpaque()
        // With trusted proxies the server counts connections per address itself, sparing the proxies; else MHD does.
        let limitsItself = core.perClientConnectionLimit > 0
        return CMicroHTTPD_start_daemon(
            flags, address, UInt32(max(1, configuration.threads)), UInt32(max(1, configuration.connectionTimeout)),
            UInt32(max(1, configuration.connectionLimit)),
            limitsItself ? 0 : UInt32(max(0, configuration.perClientConnectionLimit)),
            32 * 1024, accessHandler, context, completedHandler, context, connectionNotifier, context,
            limitsItself ? acceptPolicy : nil, context,
            core.tlsStrings.key, core.tlsStrings.certificate, core.tlsStrings.trust)
    }

    private static func ipv4(_ host: String, port: UInt16) -> sockaddr_in? {
        var address = sockaddr_in()
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        return address
    }

    private static func ipv6(_ host: String, port: UInt16) -> sockaddr_in6? {
        var address = sockaddr_in6()
        let literal = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard inet_pton(AF_INET6, literal, &address.sin6_addr) == 1 else { return nil }
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        return address
    }
}

/// A libmicrohttpd pointer that may cross threads: MHD's daemon and connection calls used here are thread-safe
/// (`MHD_resume_connection` is documented to be called from any thread).
struct DaemonHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// State shared by the MHD callbacks of one server.
final class ServerCore: Sendable {
    struct Counters {
        /// Requests whose headers arrived and that have not completed.
        var inFlight = 0
        /// Requests handed to the responder (their connection suspended) and not yet answered.
        var dispatched = 0
        /// Set when shutting down: no connection may be suspended any more.
        var stopping = false
    }

    /// The open connections and when each began waiting for its current request (`nil` while a request is with
    /// the responder). The sweeper shuts down the socket of one whose request is late, under this lock: MHD removes
    /// a connection here (its close notification) before it closes the socket, so the descriptor is still its own.
    struct Connections {
        struct Entry {
            var socket: Int32
            var receivingSince: ContinuousClock.Instant?
            var shut = false
            /// The peer, when the server limits connections per address itself (``perClientConnectionLimit``).
            var peer: IPAddress?
        }
        var open: [UInt: Entry] = [:]
        var timedOut = 0
    }

    let responder: any Responder
    /// ``HTTPServer/Configuration/answersOnPollingThreads``.
    let answersInline: Bool
    let maximumBodySize: Int
    let requestTimeout: Duration
    let trustedProxies: TrustedProxies
    /// With trusted proxies, the per-address connection limit the server keeps itself, sparing them (0: MHD's, or
    /// none).
    let perClientConnectionLimit: Int
    let connections = Mutex(Connections())
    let sweeping = Mutex<Bool>(false)
    let daemon = Mutex<DaemonHandle?>(nil)
    /// Runs the responders.
    let executor: ResponderExecutor
    let counters = Mutex(Counters())
    /// Wakes `shutdown()` whenever a counter goes down.
    let drained = CounterChanges()
    /// The TLS PEM texts as C strings, alive as long as the daemon that was given them.
    let tlsStrings: TLSStrings
    var usesTLS: Bool { tlsStrings.key != nil }

    /// C copies of the PEM texts; libmicrohttpd keeps the pointers, so they live as long as the server core.
    struct TLSStrings: @unchecked Sendable {  // immutable pointers, freed once in ServerCore.deinit
        var key: UnsafeMutablePointer<CChar>?
        var certificate: UnsafeMutablePointer<CChar>?
        var trust: UnsafeMutablePointer<CChar>?
    }

    init(
        responder: any Responder, maximumBodySize: Int, requestTimeout: Duration, executor: ResponderExecutor,
        tls: HTTPServer.Configuration.TLS?, answersInline: Bool, trustedProxies: TrustedProxies,
        perClientConnectionLimit: Int
    ) {
        self.responder = responder
        self.trustedProxies = trustedProxies
        self.perClientConnectionLimit = max(0, perClientConnectionLimit)
        self.answersInline = answersInline
        self.maximumBodySize = maximumBodySize
        self.requestTimeout = requestTimeout
        self.executor = executor
        self.tlsStrings = TLSStrings(
            key: tls.map { strdup($0.privateKeyPEM) }, certificate: tls.map { strdup($0.certificatePEM) },
            trust: tls?.clientCertificateAuthoritiesPEM.map { strdup($0) })
    }

    deinit {
        if let key = tlsStrings.key {
            // The key is secret: overwrite it before giving the memory back.
            memset(key, 0, strlen(key))
            free(key)
        }
        free(tlsStrings.certificate)
        free(tlsStrings.trust)
    }

    /// Starts the thread that closes connections whose request is late (a quarter of the limit apart, at most
    /// every second).
    func startSweeping() {
        sweeping.withLock { $0 = true }
        let interval = min(requestTimeout / 4, .seconds(1))
        let microseconds = UInt32(
            interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000)
        Thread.detachNewThread { [self] in
            while sweeping.withLock({ $0 }) {
                usleep(microseconds)
                sweep(now: ContinuousClock.now)
            }
        }
    }

    func stopSweeping() { sweeping.withLock { $0 = false } }

    /// Shuts down (without closing: MHD owns the descriptor) every connection whose request is late; MHD sees the
    /// socket end and closes the connection.
    func sweep(now: ContinuousClock.Instant) {
        connections.withLock { state in
            for (key, entry) in state.open {
                guard !entry.shut, let since = entry.receivingSince, now - since > requestTimeout else { continue }
                _ = shutdown(entry.socket, Int32(SHUT_RDWR))
                state.open[key]?.shut = true
                state.timedOut += 1
            }
        }
    }

    /// When the connection began waiting for its current request, if it is waiting.
    func receivingSince(_ connection: OpaquePointer) -> ContinuousClock.Instant? {
        connections.withLock { $0.open[UInt(bitPattern: connection)]?.receivingSince }
    }

    /// Marks the connection as waiting for a request from `since` (`nil`: not waiting, its request is complete).
    func setReceiving(_ connection: OpaquePointer, since: ContinuousClock.Instant?) {
        connections.withLock { $0.open[UInt(bitPattern: connection)]?.receivingSince = since }
    }

    /// The responder's answer to a request refused for its `Content-Length` before any of its body is read. It
    /// must be queued during MHD's first call for the request (so no `100 Continue` goes out), so this waits for
    /// it on the MHD thread; the responder sees ``HTTPRequest/bodyLimitExceeded`` and answers at once.
    func answerRefusingBody(of request: HTTPRequest) -> HTTPResponse {
        guard responder.answersOversizedRequests else {
            return HTTPError.payloadTooLarge(limit: maximumBodySize).response
        }
        let refused = {
            var refused = request
            refused.bodyLimitExceeded = maximumBodySize
            return refused
        }()
        let responder = self.responder
        let answer = Mutex<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        let respond: @Sendable () async -> Void = {
            let response = await responder.respond(to: refused)
            answer.withLock { $0 = response }
            done.signal()
        }
        // On a responder thread even when answers run on the polling threads: answered at once, the refusal would
        // close the connection before a client has written its body, and the client would see a broken pipe
        // instead of the 413.
        if #available(macOS 15.0, *) {
            Task(executorPreference: executor) { await respond() }
        } else {
            Task { await respond() }
        }
        done.wait()
        return answer.withLock { $0 } ?? HTTPError.payloadTooLarge(limit: maximumBodySize).response
    }

}

/// One request's state across MHD's calls. MHD calls back for a connection from one thread at a time;
/// the answer computed on another thread is handed over through `answer`, behind a lock.
final class RequestState: @unchecked Sendable {
    var request: HTTPRequest
    /// When the connection began waiting for this request (its deadline is this plus the request timeout).
    var receivingSince: ContinuousClock.Instant?
    var tooLarge = false
    var discarded = 0
    var dispatched = false
    /// Set when the responder's answer was queued on the connection (and `dispatched` counted down for it).
    var delivered = false
    /// The answer, handed over from the responder's thread; `suspended` says whether the connection waits for it
    /// suspended (and must be resumed when it comes) or the polling thread is still running the responder inline.
    let answer = Mutex<(response: HTTPResponse?, suspended: Bool)>((nil, false))

    init(request: HTTPRequest) { self.request = request }
}

private func collectValues(_ connection: OpaquePointer, kind: MHD_ValueKind) -> [(String, String)] {
    final class Box { var pairs: [(String, String)] = [] }
    let box = Box()
    _ = withExtendedLifetime(box) {
        MHD_get_connection_values(
            connection, kind,
            { context, _, key, value in
                guard let context, let key else { return .YES }
                let box = Unmanaged<Box>.fromOpaque(context).takeUnretainedValue()
                box.pairs.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
                return .YES
            }, Unmanaged.passUnretained(box).toOpaque())
    }
    return box.pairs
}

private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
    let created = response.body.withUnsafeBytes { bytes in
        MHD_create_response_from_buffer(
            bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
    }
    guard let created else { return .NO }
    defer { MHD_destroy_response(created) }
    for (name, value) in response.headers {
        // MHD adds Content-Length itself and refuses a duplicate.
        if HTTPHeaders.sameName(name, "Content-Length") { continue }
        _ = MHD_add_response_header(created, name, value)
    }
    return MHD_queue_response(connection, UInt32(response.status), created)
}

/// The client's certificate on a TLS connection, with GnuTLS's verdict on its chain; `nil` when it sent none.
private func peerCertificate(of connection: OpaquePointer) -> HTTPRequest.ClientCertificate? {
    guard let session = CMicroHTTPD_tls_session(connection) else { return nil }
    var der: UnsafePointer<UInt8>?
    var length = 0
    var status: UInt32 = 0
    let result = CGnuTLS_peer_certificate(session, &der, &length, &status)
    guard let der, length > 0 else { return nil }
    return HTTPRequest.ClientCertificate(der: Data(bytes: der, count: length), isTrusted: result == 0 && status == 0)
}

private let accessHandler: MHD_AccessHandlerCallback = {
    context, connection, url, method, _, uploadData, uploadDataSize, requestContext in
    guard let context, let connection, let uploadDataSize, let requestContext else { return .NO }
    let core = Unmanaged<ServerCore>.fromOpaque(context).takeUnretainedValue()

    guard let existing = requestContext.pointee else {
        // First call: the head has arrived.
        var headers = HTTPHeaders()
        for (name, value) in collectValues(connection, kind: .HEADER_KIND) { headers.add(name: name, value: value) }
        var query: [String: String] = [:]
        for (name, value) in collectValues(connection, kind: .GET_ARGUMENT_KIND) { query[name] = value }
        var request = HTTPRequest(
            method: HTTPMethod(rawValue: method.map { String(cString: $0) } ?? "GET"),
            path: url.map { String(cString: $0) } ?? "/", query: query, headers: headers)
        let peer = clientAddress(of: connection)
        request.peerAddress = peer
        request.clientAddress = core.trustedProxies.client(peer: peer, headers: headers)
        if core.usesTLS { request.clientCertificate = peerCertificate(of: connection) }
        let state = RequestState(request: request)
        state.receivingSince = core.receivingSince(connection)
        requestContext.pointee = Unmanaged.passRetained(state).toOpaque()
        core.counters.withLock { $0.inFlight += 1 }
        if let length = headers["Content-Length"].flatMap(contentLength),
            length > core.maximumBodySize
        {
            // Refused before a byte of the body is read: MHD sends no `100 Continue` and closes afterwards.
            state.tooLarge = true
            core.setReceiving(connection, since: nil)
            return queue(core.answerRefusingBody(of: request), on: connection)
        }
        return .YES
    }
    let state = Unmanaged<RequestState>.fromOpaque(existing).takeUnretainedValue()

    if uploadDataSize.pointee > 0 {
        // A piece of the body. A response cannot be queued here: past the limit, drop the bytes and answer 413
        // when the body ends; a client that keeps sending far past it loses the connection.
        let size = uploadDataSize.pointee
        if let since = state.receivingSince, ContinuousClock.now - since > core.requestTimeout {
            // The body is late: close the connection (a client trickling bytes never reaches the idle timeout).
            core.connections.withLock { $0.timedOut += 1 }
            return .NO
        }
        if state.tooLarge || state.request.body.count + size > core.maximumBodySize {
            state.tooLarge = true
            state.request.body = Data()
            state.discarded += size
            if state.discarded > 16 * core.maximumBodySize + 1_048_576 { return .NO }
        } else if let uploadData {
            state.request.body.append(UnsafeRawPointer(uploadData).assumingMemoryBound(to: UInt8.self), count: size)
        }
        uploadDataSize.pointee = 0
        return .YES
    }

    // The body is complete: the connection is no longer waiting for a request.
    core.setReceiving(connection, since: nil)
    if state.tooLarge {
        guard core.responder.answersOversizedRequests else {
            return queue(HTTPError.payloadTooLarge(limit: core.maximumBodySize).response, on: connection)
        }
        state.request.bodyLimitExceeded = core.maximumBodySize
    }
    if let answer = state.answer.withLock({ $0.response }) {
        return deliver(answer, state: state, core: core, on: connection)
    }
    if state.dispatched { return .YES }
    let stopping = core.counters.withLock { counters -> Bool in
        if counters.stopping { return true }
        counters.dispatched += 1
        return false
    }
    if stopping {
        var response = HTTPError(status: 503, code: "shuttingDown", message: "The server is shutting down.").response
        response.headers["Connection"] = "close"
        return queue(response, on: connection)
    }
    state.dispatched = true
    let handle = DaemonHandle(pointer: connection)
    let request = state.request
    let responder = core.responder
    let answer: @Sendable () async -> Void = {
        let response = await responder.respond(to: request)
        let suspended = state.answer.withLock { answer -> Bool in
            answer.response = response
            return answer.suspended
        }
        if suspended { MHD_resume_connection(handle.pointer) }
    }
    let start = {
        if #available(macOS 15.0, *) {
            Task(executorPreference: core.executor) { await answer() }
        } else {
            Task { await answer() }
        }
    }
    if core.answersInline {
        core.executor.runInline { start() }
    } else {
        start()
    }
    // Answered already (inline): queue it now. Otherwise suspend the connection until the answer resumes it; under
    // the lock, so that the answer cannot try to resume it before it is suspended.
    let ready = state.answer.withLock { answer -> HTTPResponse? in
        if let response = answer.response { return response }
        answer.suspended = true
        MHD_suspend_connection(connection)
        return nil
    }
    if let ready { return deliver(ready, state: state, core: core, on: connection) }
    return .YES
}

/// Queues the responder's answer on its connection and counts the request as answered.
private func deliver(_ answer: HTTPResponse, state: RequestState, core: ServerCore, on connection: OpaquePointer)
    -> MHD_Result
{
    state.delivered = true
    core.counters.withLock { $0.dispatched -= 1 }
    core.drained.signal()
    // MHD_NO closes the connection with nothing queued on it.
    if answer.closesConnectionWithoutAnswer { return .NO }
    return queue(answer, on: connection)
}

private let completedHandler: MHD_RequestCompletedCallback = { context, connection, requestContext, _ in
    guard let context, let requestContext, let existing = requestContext.pointee else { return }
    let core = Unmanaged<ServerCore>.fromOpaque(context).takeUnretainedValue()
    // A kept-alive connection now waits for its next request: its time starts now.
    if let connection { core.setReceiving(connection, since: .now) }
    let state = Unmanaged<RequestState>.fromOpaque(existing).takeRetainedValue()
    requestContext.pointee = nil
    // A client that closed its connection while its request was with the responder never gets the answer queued:
    // MHD resumes the connection, sees it closed and completes the request here. Count it down, or shutdown()
    // waits for it forever.
    let undelivered = state.dispatched && !state.delivered
    core.counters.withLock {
        $0.inFlight -= 1
        if undelivered { $0.dispatched -= 1 }
    }
    core.drained.signal()
}

/// Wakes waiters when the server's counters go down: `shutdown()` waits on this instead of polling.
final class CounterChanges: Sendable {
    private struct State {
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var next: UInt64 = 0
    }
    private let state = Mutex(State())

    /// Returns at the next ``signal()`` or after `limit`.
    func wait(upTo limit: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let id = state.withLock { state -> UInt64 in
                state.next += 1
                state.waiters[state.next] = continuation
                return state.next
            }
            Task {
                try? await Task.sleep(for: limit)
                self.state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
            }
        }
    }

    /// Wakes every waiter.
    func signal() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for continuation in woken { continuation.resume() }
    }
}

/// Keeps ``ServerCore/connections`` up to date: MHD calls it on the connection's thread when it opens and before
/// it closes the socket.
private let connectionNotifier: MHD_NotifyConnectionCallback = { context, connection, _, event in
    guard let context, let connection else { return }
    let core = Unmanaged<ServerCore>.fromOpaque(context).takeUnretainedValue()
    let key = UInt(bitPattern: connection)
    if event.rawValue == 0 {  // MHD_CONNECTION_NOTIFY_STARTED (1 is _CLOSED)
        let socket = CMicroHTTPD_connection_fd(connection)
        let peer = core.perClientConnectionLimit > 0 ? clientAddress(of: connection).flatMap { IPAddress($0) } : nil
        core.connections.withLock {
            $0.open[key] = ServerCore.Connections.Entry(socket: socket, receivingSince: .now, peer: peer)
        }
    } else {
        core.connections.withLock { _ = $0.open.removeValue(forKey: key) }
    }
}

/// Whether a connection from `address` may be accepted, when the server limits connections per address itself:
/// a trusted proxy always; another peer while it has fewer than the limit open (counted at their opening, so
/// connections accepted at the same moment on other polling threads may pass it by one each).
private let acceptPolicy: MHD_AcceptPolicyCallback = { context, address, length in
    guard let context, let address, let peer = IPAddress(socketAddress: address, length: Int(length)) else {
        return .YES
    }
    let core = Unmanaged<ServerCore>.fromOpaque(context).takeUnretainedValue()
    if core.trustedProxies.trusts(peer) { return .YES }
    let open = core.connections.withLock { connections in
        connections.open.values.reduce(0) { $0 + ($1.peer == peer ? 1 : 0) }
    }
    return open < core.perClientConnectionLimit ? .YES : .NO
}

/// The client's address as text (`127.0.0.1`, `::1`), or `nil` when MHD does not know it.
private func clientAddress(of connection: OpaquePointer) -> String? {
    var buffer = [CChar](repeating: 0, count: 64)
    let written = buffer.withUnsafeMutableBufferPointer {
        CMicroHTTPD_client_address(connection, $0.baseAddress, $0.count)
    }
    guard written == 0 else { return nil }
    return String(cString: buffer)
}

/// A Content-Length value as a number, surrounding spaces and tabs allowed (with Character properties: no Foundation
/// CharacterSet per request).
private func contentLength(_ value: String) -> Int? {
    let isSpace: (Character) -> Bool = { $0.isWhitespace && !$0.isNewline }
    guard let first = value.firstIndex(where: { !isSpace($0) }), let last = value.lastIndex(where: { !isSpace($0) })
    else { return nil }
    return Int(value[first...last])
}

/// The stable codes of ``HTTPServer/StartError``.
extension ErrorCode<HTTPServer.StartError> {
    /// The host is not an IP address literal (or `localhost`).
    public static var invalidAddress: Self { Self("invalidAddress") }
    /// The port cannot be bound (in use, or not allowed), or the TLS certificate or key was refused.
    public static var cannotListen: Self { Self("cannotListen") }
    /// HTTPS was asked for and this libmicrohttpd was built without TLS.
    public static var tlsUnsupported: Self { Self("tlsUnsupported") }
}
