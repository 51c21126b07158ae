internal import CNGHTTP2
import Foundation
import Synchronization

/// One HTTP/2 request, complete (headers and body).
public struct HTTP2Request: Sendable {
    public var method: String
    /// The `:path` pseudo-header: path and query.
    public var path: String
    /// Header fields (names lower-case, as HTTP/2 sends them), pseudo-headers left out.
    public var headers: [String: String]
    public var body: Data
}

/// The answer to an ``HTTP2Request``.
public struct HTTP2Response: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: Data

    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Why the server could not start.
public struct HTTP2ServerError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// A small HTTP/2 server over TLS (ALPN `h2` only, TLS 1.2+): nghttp2 speaks the protocol, OpenSSL's libssl the
/// TLS. One thread per connection, blocking reads; a handler runs on its connection's thread and may block
/// (long polls). Meant for test services such as the sandbox APNs, not for heavy load.
///
/// `@unchecked Sendable`: the listening socket and SSL context are set once; `stopped` is atomic.
public final class HTTP2Server: @unchecked Sendable {
    public let port: UInt16
    private let listener: Int32
    private let context: OpaquePointer
    private let handler: @Sendable (HTTP2Request) -> HTTP2Response
    private let stopped = Atomic<Bool>(false)

    /// Listens on `host`:`port` (0: any free port) with the PEM certificate chain (leaf first) and key files.
    /// - Throws: ``HTTP2ServerError`` when TLS cannot be set up or the address cannot be bound.
    public static func start(
        host: String = "127.0.0.1", port: UInt16 = 0, certificateChainPath: String, privateKeyPath: String,
        handler: @escaping @Sendable (HTTP2Request) -> HTTP2Response
    ) throws -> HTTP2Server {
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw HTTP2ServerError(message: "could not create a TLS context")
        }
        guard CNGHTTP2_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1,
            SSL_CTX_use_certificate_chain_file(context, certificateChainPath) == 1,
            SSL_CTX_use_PrivateKey_file(context, privateKeyPath, SSL_FILETYPE_PEM) == 1,
            SSL_CTX_check_private_key(context) == 1
        else {
            ERR_clear_error()
            SSL_CTX_free(context)
            throw HTTP2ServerError(message: "could not load the TLS certificate \(certificateChainPath) and its key")
        }
        SSL_CTX_set_alpn_select_cb(context, selectH2, nil)

        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else {
            SSL_CTX_free(context)
            throw HTTP2ServerError(message: "could not create a socket")
        }
        var yes: Int32 = 1
        setsockopt(socketFD, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(socketFD)
            SSL_CTX_free(context)
            throw HTTP2ServerError(message: "\(host) is not an IPv4 address")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(socketFD, 64) == 0 else {
            close(socketFD)
            SSL_CTX_free(context)
            throw HTTP2ServerError(message: "could not listen on \(host):\(port): errno \(errno)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) }
        }
        let server = HTTP2Server(
            port: UInt16(bigEndian: actual.sin_port), listener: socketFD, context: context, handler: handler)
        let thread = Thread { server.acceptLoop() }
        thread.name = "HTTP2Server accept"
        thread.start()
        return server
    }

    private init(
        port: UInt16, listener: Int32, context: OpaquePointer,
        handler: @escaping @Sendable (HTTP2Request) -> HTTP2Response
    ) {
        self.port = port
        self.listener = listener
        self.context = context
        self.handler = handler
    }

    /// Stops accepting connections (connections already open finish on their own threads).
    public func shutdown() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        _ = Glibc.shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    deinit {
        shutdown()
        // The context is reference counted by OpenSSL: connections still open hold their own reference.
        SSL_CTX_free(context)
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .acquiring) {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            let served = Connection(fd: connection, context: context, handler: handler)
            let thread = Thread { served.serve() }
            thread.name = "HTTP2Server connection"
            thread.start()
        }
    }
}

/// ALPN: only `h2` is accepted (APNs speaks nothing else).
private func selectH2(
    _ ssl: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
    _ outLength: UnsafeMutablePointer<UInt8>?,
    _ input: UnsafePointer<UInt8>?, _ inputLength: UInt32, _ argument: UnsafeMutableRawPointer?
) -> Int32 {
    guard let input, let out, let outLength else { return SSL_TLSEXT_ERR_ALERT_FATAL }
    var index = 0
    while index < Int(inputLength) {
        let length = Int(input[index])
        if length == 2, index + 2 < Int(inputLength), input[index + 1] == 0x68, input[index + 2] == 0x32 {
            out.pointee = input + index + 1
            outLength.pointee = 2
            return SSL_TLSEXT_ERR_OK
        }
        index += 1 + length
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL
}

/// One TLS connection and its nghttp2 session. `@unchecked Sendable`: it is handed to its thread once and used by
/// that thread alone (the nghttp2 callbacks run on it too).
private final class Connection: @unchecked Sendable {
    struct Stream {
        var method = ""
        var path = ""
        var headers: [String: String] = [:]
        var body = Data()
    }

    let fd: Int32
    let context: OpaquePointer
    let handler: @Sendable (HTTP2Request) -> HTTP2Response
    var ssl: OpaquePointer?
    var streams: [Int32: Stream] = [:]
    /// Streams whose request is complete, answered after `nghttp2_session_mem_recv` returns.
    var ready: [Int32] = []
    /// Response bodies being sent, with how much has gone.
    var outgoing: [Int32: (body: Data, offset: Int)] = [:]

    init(fd: Int32, context: OpaquePointer, handler: @escaping @Sendable (HTTP2Request) -> HTTP2Response) {
        self.fd = fd
        self.context = context
        self.handler = handler
        SSL_CTX_up_ref(context)  // released when the connection is done, so a stopped server's context lives on
    }

    func serve() {
        defer {
            close(fd)
            SSL_CTX_free(context)
        }
        guard let ssl = SSL_new(context) else { return }
        self.ssl = ssl
        defer {
            SSL_shutdown(ssl)
            SSL_free(ssl)
            ERR_clear_error()
        }
        SSL_set_fd(ssl, fd)
        guard SSL_accept(ssl) == 1 else { return }
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return }
        nghttp2_session_callbacks_set_send_callback(callbacks, sendCallback)
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, beginHeadersCallback)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, headerCallback)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, dataChunkCallback)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, frameReceivedCallback)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, streamClosedCallback)
        var session: OpaquePointer?
        let created = nghttp2_session_server_new(&session, callbacks, Unmanaged.passUnretained(self).toOpaque())
        nghttp2_session_callbacks_del(callbacks)
        guard created == 0, let session else { return }
        defer { nghttp2_session_del(session) }
        var settings = nghttp2_settings_entry(
            settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: 100)
        guard nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, 1) == 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            guard nghttp2_session_send(session) == 0 else { return }
            if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 { return }
            let count = SSL_read(ssl, &buffer, Int32(buffer.count))
            guard count > 0 else { return }
            guard nghttp2_session_mem_recv(session, buffer, Int(count)) >= 0 else { return }
            while !ready.isEmpty {
                let id = ready.removeFirst()
                guard let stream = streams[id] else { continue }
                let response = handler(
                    HTTP2Request(method: stream.method, path: stream.path, headers: stream.headers, body: stream.body))
                respond(session, stream: id, response)
            }
        }
    }

    private func respond(_ session: OpaquePointer, stream id: Int32, _ response: HTTP2Response) {
        var fields: [(String, String)] = [(":status", String(response.status))]
        for (name, value) in response.headers { fields.append((name.lowercased(), value)) }
        fields.append(("content-length", String(response.body.count)))
        outgoing[id] = (response.body, 0)
        // nghttp2 copies names and values during the submit call.
        var storage = fields.map { (Array($0.0.utf8), Array($0.1.utf8)) }
        var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: readCallback)
        let count = storage.count
        storage.withUnsafeMutableBufferPointer { pairs in
            var headers: [nghttp2_nv] = []
            for index in 0..<count {
                pairs[index].0.withUnsafeMutableBufferPointer { name in
                    pairs[index].1.withUnsafeMutableBufferPointer { value in
                        headers.append(
                            nghttp2_nv(
                                name: name.baseAddress, value: value.baseAddress, namelen: name.count,
                                valuelen: value.count, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
                    }
                }
            }
            _ = nghttp2_submit_response(session, id, headers, headers.count, &provider)
        }
    }

    static func from(_ pointer: UnsafeMutableRawPointer?) -> Connection {
        Unmanaged<Connection>.fromOpaque(pointer!).takeUnretainedValue()
    }
}

private func sendCallback(
    _ session: OpaquePointer?, _ data: UnsafePointer<UInt8>?, _ length: Int, _ flags: Int32,
    _ user: UnsafeMutableRawPointer?
) -> Int {
    let connection = Connection.from(user)
    guard let ssl = connection.ssl, let data else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    let written = SSL_write(ssl, data, Int32(length))
    return written > 0 ? Int(written) : Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue)
}

private func beginHeadersCallback(
    _ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ user: UnsafeMutableRawPointer?
) -> Int32 {
    guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
        frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
    else { return 0 }
    Connection.from(user).streams[frame.pointee.hd.stream_id] = Connection.Stream()
    return 0
}

private func headerCallback(
    _ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ name: UnsafePointer<UInt8>?,
    _ nameLength: Int, _ value: UnsafePointer<UInt8>?, _ valueLength: Int, _ flags: UInt8,
    _ user: UnsafeMutableRawPointer?
) -> Int32 {
    guard let frame, let name, let value else { return 0 }
    let connection = Connection.from(user)
    let id = frame.pointee.hd.stream_id
    guard var stream = connection.streams[id] else { return 0 }
    let key = String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self)
    let text = String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
    switch key {
    case ":method": stream.method = text
    case ":path": stream.path = text
    case _ where key.hasPrefix(":"): break
    default: stream.headers[key] = text
    }
    connection.streams[id] = stream
    return 0
}

private func dataChunkCallback(
    _ session: OpaquePointer?, _ flags: UInt8, _ id: Int32, _ data: UnsafePointer<UInt8>?, _ length: Int,
    _ user: UnsafeMutableRawPointer?
) -> Int32 {
    let connection = Connection.from(user)
    guard let data, connection.streams[id] != nil else { return 0 }
    guard (connection.streams[id]?.body.count ?? 0) + length <= 1 << 20 else {
        return Int32(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue)
    }
    connection.streams[id]?.body.append(data, count: length)
    return 0
}

private func frameReceivedCallback(
    _ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ user: UnsafeMutableRawPointer?
) -> Int32 {
    guard let frame else { return 0 }
    let type = frame.pointee.hd.type
    let endsStream = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
    if endsStream, type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue) {
        let connection = Connection.from(user)
        if connection.streams[frame.pointee.hd.stream_id] != nil {
            connection.ready.append(frame.pointee.hd.stream_id)
        }
    }
    return 0
}

private func streamClosedCallback(
    _ session: OpaquePointer?, _ id: Int32, _ errorCode: UInt32, _ user: UnsafeMutableRawPointer?
) -> Int32 {
    let connection = Connection.from(user)
    connection.streams[id] = nil
    connection.outgoing[id] = nil
    return 0
}

private func readCallback(
    _ session: OpaquePointer?, _ id: Int32, _ buffer: UnsafeMutablePointer<UInt8>?, _ length: Int,
    _ flags: UnsafeMutablePointer<UInt32>?, _ source: UnsafeMutablePointer<nghttp2_data_source>?,
    _ user: UnsafeMutableRawPointer?
) -> Int {
    let connection = Connection.from(user)
    guard let buffer, let flags, let entry = connection.outgoing[id] else {
        flags?.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
        return 0
    }
    let count = min(length, entry.body.count - entry.offset)
    entry.body.withUnsafeBytes { bytes in
        if count > 0 { buffer.update(from: bytes.bindMemory(to: UInt8.self).baseAddress! + entry.offset, count: count) }
    }
    connection.outgoing[id] = (entry.body, entry.offset + count)
    if entry.offset + count >= entry.body.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
    return count
}
