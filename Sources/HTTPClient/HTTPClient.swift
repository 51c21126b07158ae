internal import CCurl
import Foundation
import Foundations
import Synchronization

/// A request for `HTTPClient`.
public struct HTTPClientRequest: Sendable {
    /// `GET`, `POST`, ...
    public var method: String
    /// An `http` or `https` URL.
    public var url: String
    /// Header fields, in order.
    public var headers: [(name: String, value: String)]
    public var body: Data?

    public init(method: String = "GET", url: String, headers: [(name: String, value: String)] = [], body: Data? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// A `POST` of `body` as JSON.
    public static func postJSON(_ url: String, body: Data, headers: [(name: String, value: String)] = [])
        -> HTTPClientRequest
    {
        HTTPClientRequest(
            method: "POST", url: url,
            headers: [("Content-Type", "application/json"), ("Accept", "application/json")] + headers, body: body)
    }

    /// A `POST` of an `Encodable` value as JSON.
    /// - Throws: the encoder's error.
    public static func postJSON<T: Encodable>(_ url: String, encoding value: T) throws -> HTTPClientRequest {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return postJSON(url, body: try encoder.encode(value))
    }
}

/// What the server answered.
public struct HTTPClientResponse: Sendable {
    public var status: Int
    /// Header fields of the final response, names lower-cased; a repeated field keeps its last value.
    public var headers: [String: String]
    public var body: Data
    /// The HTTP version spoken: 1 (HTTP/1.x) or 2.
    public var httpVersion: Int = 1
    /// Whether the request went over a connection kept from an earlier one (no new connection, no TLS handshake).
    public var reusedConnection = false

    public init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of a header field, by name in any case.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The body decoded as JSON into `T`.
    /// - Throws: `DecodingError` when the body is not that JSON.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(type, from: body) }
}

/// A client certificate and its private key, both PEM, held in memory and passed to libcurl as blobs.
public struct ClientIdentity: Sendable {
    public var certificatePEM: Data
    public var privateKeyPEM: Data

    public init(certificatePEM: Data, privateKeyPEM: Data) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
    }
}

/// Why a request got no answer: a stable `code` to switch on and a message. Equality on `code`.
///
/// Messages name the URL and libcurl's reason; never the request or response body, nor the client key.
public struct HTTPClientError: CodedError {
    /// The stable identifier of a kind of failure.
    public struct Code: ErrorCode {
        public typealias Owner = HTTPClientError
        /// The code as a string, e.g. `"timeout"`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// The URL does not parse, or has no host.
        public static let invalidURL = Code("invalidURL")
        /// A scheme other than `http` or `https`.
        public static let unsupportedProtocol = Code("unsupportedProtocol")
        /// The host could not be resolved or connected to.
        public static let connectionFailed = Code("connectionFailed")
        /// The request took longer than the configured timeout.
        public static let timeout = Code("timeout")
        /// The TLS handshake failed (untrusted server, client certificate refused, ...).
        public static let tlsFailure = Code("tlsFailure")
        /// The response body is larger than the configured limit.
        public static let responseTooLarge = Code("responseTooLarge")
        /// Any other transfer failure.
        public static let transferFailed = Code("transferFailed")

    }

    /// What kind of failure this is.
    public let code: Code
    /// What went wrong.
    public let message: String

    /// Creates an error with a code and a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

}

/// HTTP and HTTPS requests on libcurl: TLS 1.2 or later, optional client certificate and trusted roots
/// from memory, a total timeout, and only the `http` and `https` protocols (redirects are not followed).
/// Each `send` uses a libcurl handle of its own, so one client may be used from many threads at once. Handles are
/// kept between requests with their connections (keep-alive, and TLS sessions resumed): a client that calls the same
/// server again (a processor) does not connect, and for HTTPS handshake, every time. A connection idle for
/// ``idleConnectionLifetime`` is closed.
///
/// `send(_:) async` runs the transfer on a small pool of threads shared by every client (at most
/// ``transferThreadCount``, started as they are needed), never on the caller's executor, and honours task
/// cancellation: the transfer is aborted (within about a second, when libcurl next reports progress), its
/// connection closed, and the call throws `CancellationError`.
public final class HTTPClient: Sendable {
    public struct Configuration: Sendable {
        /// The longest a whole request may take.
        public var timeout: Duration
        /// The longest connecting (TCP and TLS) may take.
        public var connectTimeout: Duration
        /// Sent when the server asks for a client certificate.
        public var clientIdentity: ClientIdentity?
        /// PEM certificates trusted instead of the system's roots (e.g. a test authority).
        public var trustedRootsPEM: Data?
        /// The largest response body accepted.
        public var maximumResponseSize: Int
        /// Ask for HTTP/2 over TLS (ALPN `h2`; HTTP/1.1 when the server does not offer it) and over cleartext
        /// `http` too (with prior knowledge); `HTTPClientResponse.httpVersion` says what was spoken.
        public var http2 = false
        /// The proxy to go through (`http://host:port`). `nil` goes direct: the environment's `http_proxy`,
        /// `https_proxy` and `ALL_PROXY` are ignored, so a variable cannot route client certificates and payments
        /// through someone else's machine.
        public var proxy: String?

        public init(
            timeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10),
            clientIdentity: ClientIdentity? = nil,
            trustedRootsPEM: Data? = nil, maximumResponseSize: Int = 8 * 1024 * 1024, proxy: String? = nil
        ) {
            self.proxy = proxy
            self.timeout = timeout
            self.connectTimeout = connectTimeout
            self.clientIdentity = clientIdentity
            self.trustedRootsPEM = trustedRootsPEM
            self.maximumResponseSize = maximumResponseSize
        }
    }

    public let configuration: Configuration
    /// libcurl handles between requests, most recently used last, each with the connections it keeps.
    private let idle = Mutex<IdleHandles>(IdleHandles())

    /// How long a connection may stay unused before it is closed.
    public static let idleConnectionLifetime: Duration = .seconds(2)
    /// Beyond this many idle handles, a finished one is closed instead of kept.
    static let maximumIdleHandles = 32

    public init(configuration: Configuration = Configuration()) {
        _ = HTTPClient.globalInitialization
        self.configuration = configuration
    }

    deinit {
        for entry in idle.withLock({ $0.take() }) { curl_easy_cleanup(entry.handle.pointer) }
    }

    private static let globalInitialization: Void = { _ = curl_global_init(Int(CURL_GLOBAL_ALL)) }()

    /// The most threads `send(_:) async` uses, for all clients together; requests beyond it wait their turn
    /// (without holding a thread, and a cancelled one leaves the queue at once). The time limits start when a
    /// request's transfer starts. A transfer thread mostly waits on the network, and a server's calls to its
    /// processor must not queue behind its slow calls elsewhere (a gateway, a hung processor), so the bound is a
    /// safety limit, not a tuning knob: threads are started only as concurrent transfers need them.
    public static let transferThreadCount = 128

    /// Sends `request` and waits for the whole response, blocking the calling thread.
    /// - Throws: `HTTPClientError` when there is no complete response (any status is a response).
    public func send(_ request: HTTPClientRequest) throws -> HTTPClientResponse {
        try perform(request, abort: nil)
    }

    /// Sends `request` on one of the shared transfer threads and suspends the caller meanwhile.
    ///
    /// Cancelling the calling task aborts the transfer: a request still waiting for a thread never starts, and
    /// one under way is stopped the next time libcurl reports progress (about once a second while nothing
    /// arrives), closing its connection.
    /// - Throws: `CancellationError` when the calling task was cancelled before the response was complete;
    ///   otherwise `HTTPClientError` as `send(_:)` does.
    public func send(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        let transfer = Transfer()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard transfer.wait(with: continuation) else { return }
                TransferPool.shared.run { [self] in
                    guard transfer.begin() else { return }
                    transfer.finish(Result { try perform(request, abort: transfer.abortRequested) })
                }
            }
        } onCancel: {
            transfer.cancel()
        }
    }

    /// Runs one transfer on the calling thread; with `abort`, libcurl's progress callback ends it once the flag
    /// is set, and the call throws `CancellationError`.
    private func perform(_ request: HTTPClientRequest, abort: AbortFlag?) throws -> HTTPClientResponse {
        guard let components = URLComponents(string: request.url), let scheme = components.scheme?.lowercased() else {
            throw HTTPClientError(.invalidURL, "'\(request.url)' is not an absolute URL.")
        }
        guard scheme == "http" || scheme == "https" else {
            throw HTTPClientError(
                .unsupportedProtocol, "Only http and https URLs are allowed, not '\(scheme)'.")
        }
        guard components.host?.isEmpty == false else {
            throw HTTPClientError(.invalidURL, "'\(request.url)' has no host.")
        }
        let handle: UnsafeMutableRawPointer
        if let kept = idle.withLock({ $0.entries.popLast() }) {
            handle = kept.handle.pointer
            curl_easy_reset(handle)  // every option back to its default; the connections stay
        } else {
            guard let created = curl_easy_init() else {
                throw HTTPClientError(.transferFailed, "libcurl could not create a handle.")
            }
            handle = created
        }
        // Kept for the next request only after a complete exchange; after an error or an abort its connection may
        // be half-used, so the handle and its connections are closed.
        var reusable = false
        defer {
            if reusable { keep(handle) } else { curl_easy_cleanup(handle) }
        }
        let sink = ResponseSink(limit: configuration.maximumResponseSize)
        var headerList: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headerList) }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)

        let code: CURLcode = errorBuffer.withUnsafeMutableBufferPointer { errorPointer in
            var setup = CURLE_OK
            func set(_ result: CURLcode) { if setup == CURLE_OK { setup = result } }
            set(CCurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorPointer.baseAddress))
            set(CCurl_setopt_string(handle, CURLOPT_URL, request.url))
            set(CCurl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
            set(CCurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
            // An empty proxy turns proxies off, the environment's included; NOPROXY "*" makes sure of it.
            set(CCurl_setopt_string(handle, CURLOPT_PROXY, configuration.proxy ?? ""))
            if configuration.proxy == nil { set(CCurl_setopt_string(handle, CURLOPT_NOPROXY, "*")) }
            set(CCurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
            set(CCurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Self.milliseconds(configuration.timeout)))
            set(CCurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(configuration.connectTimeout)))
            set(CCurl_setopt_long(handle, CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2))
            set(CCurl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1))
            set(CCurl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2))
            if configuration.http2 {
                set(CCurl_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)))
            }
            if let roots = configuration.trustedRootsPEM {
                set(roots.withUnsafeBytes { CCurl_setopt_blob(handle, CURLOPT_CAINFO_BLOB, $0.baseAddress, $0.count) })
            }
            if let identity = configuration.clientIdentity {
                set(CCurl_setopt_string(handle, CURLOPT_SSLCERTTYPE, "PEM"))
                set(CCurl_setopt_string(handle, CURLOPT_SSLKEYTYPE, "PEM"))
                set(
                    identity.certificatePEM.withUnsafeBytes {
                        CCurl_setopt_blob(handle, CURLOPT_SSLCERT_BLOB, $0.baseAddress, $0.count)
                    })
                set(
                    identity.privateKeyPEM.withUnsafeBytes {
                        CCurl_setopt_blob(handle, CURLOPT_SSLKEY_BLOB, $0.baseAddress, $0.count)
                    })
            }
            let method = request.method.uppercased()
            if method == "GET" {
                set(CCurl_setopt_long(handle, CURLOPT_HTTPGET, 1))
            } else if method == "HEAD" {
                set(CCurl_setopt_long(handle, CURLOPT_NOBODY, 1))
            } else {
                set(CCurl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, method))
            }
            if let body = request.body {
                set(CCurl_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
                if body.isEmpty {
                    set(CCurl_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, ""))
                } else {
                    set(
                        body.withUnsafeBytes { bytes in
                            CCurl_setopt_pointer(
                                handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
                        })
                }
            }
            for (name, value) in request.headers {
                headerList = curl_slist_append(headerList, "\(name): \(value)")
            }
            // No `Expect: 100-continue` round trip for small bodies.
            headerList = curl_slist_append(headerList, "Expect:")
            set(CCurl_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList))
            let context = Unmanaged.passUnretained(sink).toOpaque()
            set(CCurl_setopt_write_function(handle, writeCallback))
            set(CCurl_setopt_pointer(handle, CURLOPT_WRITEDATA, context))
            set(CCurl_setopt_header_function(handle, headerCallback))
            set(CCurl_setopt_pointer(handle, CURLOPT_HEADERDATA, context))
            if let abort {
                set(CCurl_setopt_xferinfo_function(handle, progressCallback))
                set(CCurl_setopt_pointer(handle, CURLOPT_XFERINFODATA, Unmanaged.passUnretained(abort).toOpaque()))
                set(CCurl_setopt_long(handle, CURLOPT_NOPROGRESS, 0))
            }
            guard setup == CURLE_OK else { return setup }
            return withExtendedLifetime((sink, abort)) { curl_easy_perform(handle) }
        }
        if code == CURLE_ABORTED_BY_CALLBACK, abort?.isSet == true { throw CancellationError() }
        guard code == CURLE_OK else {
            let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            throw Self.error(for: code, reason: reason, sink: sink)
        }
        var status = 0
        _ = CCurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var version = 0
        _ = CCurl_getinfo_long(handle, CURLINFO_HTTP_VERSION, &version)
        var response = HTTPClientResponse(status: status, headers: sink.headers, body: sink.body)
        response.httpVersion = version == Int(CURL_HTTP_VERSION_2_0) ? 2 : 1
        var connects = 0
        _ = CCurl_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
        response.reusedConnection = connects == 0
        reusable = true
        return response
    }

    /// Puts a handle back for the next request, and makes sure the sweep that closes idle ones will run.
    private func keep(_ handle: UnsafeMutableRawPointer) {
        let (kept, scheduleSweep) = idle.withLock { idle -> (Bool, Bool) in
            guard idle.entries.count < Self.maximumIdleHandles else { return (false, false) }
            idle.entries.append(IdleHandles.Entry(handle: CurlHandle(pointer: handle), since: .now))
            defer { idle.sweepScheduled = true }
            return (true, !idle.sweepScheduled)
        }
        if !kept { curl_easy_cleanup(handle) }
        if scheduleSweep { scheduleIdleSweep() }
    }

    /// Closes the handles idle for longer than ``idleConnectionLifetime``, then looks again while any are left.
    private func scheduleIdleSweep() {
        let lifetime = Self.idleConnectionLifetime
        let delay = Double(lifetime.components.seconds) + Double(lifetime.components.attoseconds) / 1e18
        DispatchQueue.global().asyncAfter(deadline: .now() + delay / 2) { [weak self] in
            guard let self else { return }
            let expired = idle.withLock { idle -> [IdleHandles.Entry] in
                let cutoff = ContinuousClock.now - lifetime
                let expired = idle.entries.filter { $0.since <= cutoff }
                idle.entries.removeAll { $0.since <= cutoff }
                idle.sweepScheduled = !idle.entries.isEmpty
                return expired
            }
            for entry in expired { curl_easy_cleanup(entry.handle.pointer) }
            if idle.withLock({ $0.sweepScheduled }) { scheduleIdleSweep() }
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }

    private static func error(for code: CURLcode, reason: String, sink: ResponseSink) -> HTTPClientError {
        if sink.overflowed {
            return HTTPClientError(
                .responseTooLarge, "The response is larger than \(sink.limit) bytes.")
        }
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return HTTPClientError(.timeout, "The request timed out: \(reason)")
        case CURLE_UNSUPPORTED_PROTOCOL:
            return HTTPClientError(.unsupportedProtocol, reason)
        case CURLE_URL_MALFORMAT:
            return HTTPClientError(.invalidURL, reason)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_PROXY:
            return HTTPClientError(.connectionFailed, reason)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ISSUER_ERROR,
            CURLE_SSL_CRL_BADFILE, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT:
            return HTTPClientError(.tlsFailure, "TLS failed: \(reason)")
        default:
            return HTTPClientError(.transferFailed, reason)
        }
    }
}

/// Collects one response; used by one libcurl transfer on one thread.
private final class ResponseSink {
    let limit: Int
    var body = Data()
    var headers: [String: String] = [:]
    var overflowed = false

    init(limit: Int) { self.limit = limit }

    func header(_ line: String) {
        // Trimmed with Character properties, not `trimmingCharacters(in:)` (a CharacterSet lookup per character
        // through Foundation, once per header line of every answer).
        let trimmed = line.trimming { $0.isWhitespace }
        if trimmed.hasPrefix("HTTP/") {
            headers = [:]  // a new response (after 100 Continue or a proxy's answer)
        } else if let colon = trimmed.firstIndex(of: ":") {
            let name = trimmed[..<colon].lowercased()
            headers[name] = String(
                trimmed[trimmed.index(after: colon)...].trimming { $0.isWhitespace && !$0.isNewline })
        }
    }
}

private let writeCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, context in
    guard let data, let context else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    if sink.body.count + length > sink.limit {
        sink.overflowed = true
        return 0
    }
    sink.body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: length)
    return length
}

private let headerCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, context in
    guard let data, let context else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    sink.header(line)
    return length
}

/// Aborts a transfer when set: read by libcurl's progress callback on the transfer's thread.
final class AbortFlag: Sendable {
    private let value = Atomic(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}

private let progressCallback:
    @convention(c) (UnsafeMutableRawPointer?, curl_off_t, curl_off_t, curl_off_t, curl_off_t) -> Int32 = {
        context, _, _, _, _ in
        guard let context else { return 0 }
        return Unmanaged<AbortFlag>.fromOpaque(context).takeUnretainedValue().isSet ? 1 : 0
    }

extension StringProtocol {
    /// The characters between the first and the last one that `isTrimmed` does not match.
    fileprivate func trimming(_ isTrimmed: (Character) -> Bool) -> SubSequence {
        guard let first = firstIndex(where: { !isTrimmed($0) }), let last = lastIndex(where: { !isTrimmed($0) })
        else { return self[endIndex...] }
        return self[first...last]
    }
}

/// A libcurl easy handle between requests: used by one thread at a time (the pool hands it out once).
struct CurlHandle: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
}

/// The handles a client keeps between requests.
struct IdleHandles: Sendable {
    struct Entry: Sendable {
        var handle: CurlHandle
        var since: ContinuousClock.Instant
    }
    var entries: [Entry] = []
    var sweepScheduled = false

    /// Takes them all (the client is going away).
    mutating func take() -> [Entry] {
        defer { entries.removeAll() }
        return entries
    }
}
