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

/// The stable codes of ``HTTPClientError``.
extension ErrorCode<HTTPClientError> {
    /// The URL does not parse, or has no host.
    public static var invalidURL: Self { Self("invalidURL") }
    /// A scheme other than `http` or `https`.
    public static var unsupportedProtocol: Self { Self("unsupportedProtocol") }
    /// The host could not be resolved or connected to.
    public static var connectionFailed: Self { Self("connectionFailed") }
    /// The request took longer than the configured timeout.
    public static var timeout: Self { Self("timeout") }
    /// The TLS handshake failed (untrusted server, client certificate refused, ...).
    public static var tlsFailure: Self { Self("tlsFailure") }
    /// The response body is larger than the configured limit.
    public static var responseTooLarge: Self { Self("responseTooLarge") }
    /// Any other transfer failure.
    public static var transferFailed: Self { Self("transferFailed") }
}

/// The domain of ``HTTPClientError``: its codes are ``ErrorCode`` of it.
public enum HTTPClientErrorDomain {}

/// Why a request got no answer: a stable `code` to switch on and a message. Equality on `code`.
///
/// Messages name the URL and libcurl's reason; never the request or response body, nor the client key.
public typealias HTTPClientError = CodedFailure<HTTPClientErrorDomain>

/// HTTP and HTTPS requests on libcurl: TLS 1.2 or later, optional client certificate and trusted roots
/// from memory, a total timeout, and only the `http` and `https` protocols (redirects are not followed).
/// One client may be used from many threads and tasks at once.
///
/// `send(_:) async` hands the request to the client's event loop (`TransferLoop.swift`): one thread, started when
/// the client is first used and ended once it has been idle for ``Configuration/idleConnectionLifetime``, that drives every
/// transfer of the client on one libcurl multi handle with epoll. A transfer holds no thread, so thousands may be in
/// flight at once; connections are kept in the multi handle's cache and reused by later requests (keep-alive, HTTP/2
/// streams multiplexed on one connection when ``Configuration/http2`` is set), and TLS sessions are resumed on new
/// connections. A connection idle for longer than that is not reused, and the loop closes them all when it
/// ends. Cancelling the calling task removes the transfer from the loop at once, closing its connection.
///
/// `send(_:) throws` runs the transfer on the calling thread instead, with handles (and their connections) kept
/// between such calls in the same way.
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
        /// How long a kept connection may stay unused before it is closed (and, for `send(_:) async`, how long the
        /// event loop's thread stays up with nothing in flight). Whole seconds, at least one.
        public var idleConnectionLifetime: Duration
        /// The most connections `send(_:) async` opens to one host at once (`CURLMOPT_MAX_HOST_CONNECTIONS`);
        /// further transfers wait inside the loop for one to free up, their deadlines running. `nil`: no limit.
        public var maximumConnectionsPerHost: Int?
        /// The most connections `send(_:) async` keeps open for reuse, in use or idle (`CURLMOPT_MAXCONNECTS`); past
        /// it, the connection unused longest is closed as a transfer ends. libcurl's own bound is four times the
        /// transfers in flight at that moment, so a quieter moment closed the connections a busy one had opened, and
        /// the next burst connected again.
        public var maximumKeptConnections: Int

        public init(
            timeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10),
            clientIdentity: ClientIdentity? = nil,
            trustedRootsPEM: Data? = nil, maximumResponseSize: Int = 8 * 1024 * 1024, proxy: String? = nil,
            idleConnectionLifetime: Duration = HTTPClient.defaultIdleConnectionLifetime,
            maximumConnectionsPerHost: Int? = nil, maximumKeptConnections: Int = 64
        ) {
            self.maximumKeptConnections = maximumKeptConnections
            self.proxy = proxy
            self.idleConnectionLifetime = idleConnectionLifetime
            self.maximumConnectionsPerHost = maximumConnectionsPerHost
            self.timeout = timeout
            self.connectTimeout = connectTimeout
            self.clientIdentity = clientIdentity
            self.trustedRootsPEM = trustedRootsPEM
            self.maximumResponseSize = maximumResponseSize
        }
    }

    public let configuration: Configuration
    /// The event loop of `send(_:) async`.
    private let loop: TransferLoop
    /// libcurl handles between synchronous requests, most recently used last, each with the connections it keeps.
    private let idle = Mutex<IdleHandles>(IdleHandles())

    /// How long a connection may stay unused before it is closed, unless the configuration says otherwise.
    public static let defaultIdleConnectionLifetime: Duration = .seconds(30)
    /// Beyond this many idle handles, a finished one is closed instead of kept.
    static let maximumIdleHandles = 32

    public init(configuration: Configuration = Configuration()) {
        _ = HTTPClient.globalInitialization
        self.configuration = configuration
        self.loop = TransferLoop(configuration: configuration)
    }

    deinit {
        loop.shutDown()
        for entry in idle.withLock({ $0.take() }) { curl_easy_cleanup(entry.handle.pointer) }
    }

    private static let globalInitialization: Void = { _ = curl_global_init(Int(CURL_GLOBAL_ALL)) }()

    /// The threads this client runs for `send(_:) async` now: one while it is in use, none once idle.
    package var eventLoopThreads: Int { loop.threads }

    /// The `send(_:) async` calls of this client under way: handed to its event loop and not yet answered.
    public var transfersInFlight: Int { loop.inFlight }

    /// Sends `request` and waits for the whole response, blocking the calling thread.
    /// - Throws: `HTTPClientError` when there is no complete response (any status is a response).
    public func send(_ request: HTTPClientRequest) throws -> HTTPClientResponse {
        try Self.validate(request.url)
        return try perform(request)
    }

    /// Sends `request` on the client's event loop and suspends the caller meanwhile, holding no thread.
    ///
    /// Cancelling the calling task aborts the transfer at once: the event loop removes it, closing its connection.
    /// - Throws: `CancellationError` when the calling task was cancelled before the response was complete;
    ///   otherwise `HTTPClientError` as `send(_:)` does.
    public func send(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        try Task.checkCancellation()
        try Self.validate(request.url)
        let transfer = Transfer(request)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfer.wait(with: continuation)
                loop.submit(.start(transfer))
            }
        } onCancel: {
            if transfer.requestCancellation() { loop.submit(.cancel(transfer)) }
        }
    }

    /// Refuses a URL libcurl should not be given: not absolute, a scheme other than http and https, no host, or a
    /// character no URL holds (RFC 3986: a space, a control, anything outside ASCII, `<>"{}|\^` and the backtick, a `%`
    /// without two hex digits). A scan of the text: this runs before every request.
    static func validate(_ url: String) throws {
        let bytes = Array(url.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, isAlpha(bytes[0]),
            bytes[1..<colon].allSatisfy(isSchemeCharacter), hasOnlyURLCharacters(bytes)
        else {
            throw HTTPClientError(.invalidURL, "'\(url)' is not an absolute URL.")
        }
        let scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw HTTPClientError(
                .unsupportedProtocol, "Only http and https URLs are allowed, not '\(scheme)'.")
        }
        guard hasHost(bytes[(colon + 1)...]) else {
            throw HTTPClientError(.invalidURL, "'\(url)' has no host.")
        }
    }

    /// Whether what follows the scheme is `//`, then an authority whose host (without user information and port) is
    /// not empty.
    private static func hasHost(_ rest: ArraySlice<UInt8>) -> Bool {
        let slash = UInt8(ascii: "/")
        guard rest.count >= 2, rest[rest.startIndex] == slash, rest[rest.startIndex + 1] == slash else { return false }
        let start = rest.startIndex + 2
        let end = rest[start...].firstIndex { $0 == slash || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
        var authority = rest[start..<(end ?? rest.endIndex)]
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[(at + 1)...] }
        if authority.first == UInt8(ascii: "[") { return authority.count > 2 }  // an IPv6 literal
        if let colon = authority.firstIndex(of: UInt8(ascii: ":")) { authority = authority[..<colon] }
        return !authority.isEmpty
    }

    private static func isAlpha(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }

    private static func isSchemeCharacter(_ byte: UInt8) -> Bool {
        isAlpha(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "+")
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }

    private static func hasOnlyURLCharacters(_ bytes: [UInt8]) -> Bool {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case ...0x20, 0x7F..., UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "\""), UInt8(ascii: "{"),
                UInt8(ascii: "}"), UInt8(ascii: "|"), UInt8(ascii: "\\"), UInt8(ascii: "^"), UInt8(ascii: "`"):
                return false
            case UInt8(ascii: "%"):
                guard index + 2 < bytes.count, ASCII.hexDigitValue(bytes[index + 1]) != nil,
                    ASCII.hexDigitValue(bytes[index + 2]) != nil
                else {
                    return false
                }
                index += 2
            default: break
            }
            index += 1
        }
        return true
    }

    /// Runs one transfer on the calling thread with `curl_easy_perform`.
    private func perform(_ request: HTTPClientRequest) throws -> HTTPClientResponse {
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
        let options = TransferOptions(request: request, configuration: configuration)
        defer { options.release() }
        let setup = options.apply(to: handle)
        let code = setup == CURLE_OK ? withExtendedLifetime(options) { curl_easy_perform(handle) } : setup
        let response = try options.result(of: code, on: handle).get()
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

    /// Closes the handles idle for longer than the idle connection lifetime, then looks again while any are left.
    private func scheduleIdleSweep() {
        let lifetime = configuration.idleConnectionLifetime
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

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }

    static func error(for code: CURLcode, reason: String, sink: ResponseSink) -> HTTPClientError {
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

/// One request's libcurl options and the memory they point to (header list, error buffer, response sink), alive
/// from `apply(to:)` until the transfer is over and `release()` is called; used by one thread at a time.
final class TransferOptions {
    let request: HTTPClientRequest
    let configuration: HTTPClient.Configuration
    let sink: ResponseSink
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>

    init(request: HTTPClientRequest, configuration: HTTPClient.Configuration) {
        self.request = request
        self.configuration = configuration
        sink = ResponseSink(limit: configuration.maximumResponseSize)
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    /// Frees the header list and the error buffer; the handle must no longer use them.
    func release() {
        curl_slist_free_all(headerList)
        headerList = nil
        errorBuffer.deallocate()
    }

    /// Sets every option of the request on `handle` (fresh or reset); the first failure, or `CURLE_OK`.
    func apply(to handle: UnsafeMutableRawPointer) -> CURLcode {
        var setup = CURLE_OK
        func set(_ result: CURLcode) { if setup == CURLE_OK { setup = result } }
        set(CCurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer))
        set(CCurl_setopt_string(handle, CURLOPT_URL, request.url))
        set(CCurl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        set(CCurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        // An empty proxy turns proxies off, the environment's included; NOPROXY "*" makes sure of it.
        set(CCurl_setopt_string(handle, CURLOPT_PROXY, configuration.proxy ?? ""))
        if configuration.proxy == nil { set(CCurl_setopt_string(handle, CURLOPT_NOPROXY, "*")) }
        set(CCurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        set(CCurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, HTTPClient.milliseconds(configuration.timeout)))
        set(
            CCurl_setopt_long(
                handle, CURLOPT_CONNECTTIMEOUT_MS, HTTPClient.milliseconds(configuration.connectTimeout)))
        // A kept connection unused for longer is not reused (and is closed when libcurl next prunes its cache).
        let lifetime = Int(configuration.idleConnectionLifetime.components.seconds)
        set(CCurl_setopt_long(handle, CURLOPT_MAXAGE_CONN, max(1, lifetime)))
        set(CCurl_setopt_long(handle, CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2))
        set(CCurl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1))
        set(CCurl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2))
        if configuration.http2 {
            set(CCurl_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)))
            // Requests made while the first TLS connection is being set up wait for it, to learn whether it
            // multiplexes, instead of each opening a connection of its own.
            if request.url.lowercased().hasPrefix("https:") { set(CCurl_setopt_long(handle, CURLOPT_PIPEWAIT, 1)) }
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
        return setup
    }

    /// The response, or the error, of the transfer on `handle` that ended with `code`.
    func result(of code: CURLcode, on handle: UnsafeMutableRawPointer) -> Result<HTTPClientResponse, HTTPClientError> {
        guard code == CURLE_OK else {
            let detail = String(cString: errorBuffer)
            let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            return .failure(HTTPClient.error(for: code, reason: reason, sink: sink))
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
        return .success(response)
    }
}

/// Collects one response; used by one libcurl transfer on one thread at a time.
final class ResponseSink {
    let limit: Int
    var body = Data()
    var headers: [String: String] = [:]
    var overflowed = false

    init(limit: Int) { self.limit = limit }

    /// One header line as libcurl hands it over (its CRLF included), read as bytes: the status line of a new
    /// response clears what came before (after `100 Continue` or a proxy's answer); `name: value` is kept under the
    /// name in ASCII lowercase, the value without the whitespace around it. (Characters, and Foundation's trimming
    /// before them, cost a grapheme break per byte of every header line of every answer.)
    func header(_ line: UnsafeRawBufferPointer) {
        let isSpace = { (byte: UInt8) in byte == 0x20 || (byte >= 0x09 && byte <= 0x0d) }
        var start = line.startIndex
        var end = line.endIndex
        while start < end, isSpace(line[start]) { start += 1 }
        while end > start, isSpace(line[end - 1]) { end -= 1 }
        let text = UnsafeRawBufferPointer(rebasing: line[start..<end])
        if text.starts(with: "HTTP/".utf8) {
            headers = [:]
        } else if let colon = text.firstIndex(of: UInt8(ascii: ":")) {
            let name = String(
                decoding: text[..<colon].lazy.map { $0 >= 0x41 && $0 <= 0x5a ? $0 | 0x20 : $0 }, as: UTF8.self)
            var valueStart = colon + 1
            while valueStart < text.endIndex, isSpace(text[valueStart]) { valueStart += 1 }
            headers[name] = String(decoding: text[valueStart...], as: UTF8.self)
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
    sink.header(UnsafeRawBufferPointer(start: data, count: length))
    return length
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
