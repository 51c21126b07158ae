import Foundation
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A plain TCP connection to 127.0.0.1 for tests that need control over the bytes: keep-alive, truncated bodies.
final class RawConnection {
    private let socketDescriptor: Int32
    private var buffer = Data()

    struct Failure: Error { var message: String }

    /// Connects to 127.0.0.1:`port`, from `source` (another loopback address such as 127.0.0.2) when given.
    init(port: UInt16, from source: String? = nil) throws {
        socketDescriptor = LoopbackSocket.open()
        guard socketDescriptor >= 0 else { throw Failure(message: "socket") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else { throw Failure(message: "bind \(source)") }
        }
        // On failure the descriptor is closed by deinit (which runs for a fully initialised object): closing it
        // here too would close whatever socket reused the number meanwhile.
        guard LoopbackSocket.connect(socketDescriptor, port: port) else { throw Failure(message: "connect") }
    }

    deinit { close(socketDescriptor) }

    func send(_ text: String) throws { try send(Data(text.utf8)) }

    func send(_ data: Data) throws {
        try data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let sent = Foundation.send(
                    socketDescriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                guard sent > 0 else { throw Failure(message: "send") }
                offset += sent
            }
        }
    }

    /// Closes the sending half: the server sees the end of the stream.
    func shutdownWrite() { shutdown(socketDescriptor, Int32(SHUT_WR)) }

    /// Reads one response (head and a `Content-Length` body); `nil` when the server closed the connection first.
    func readResponse() throws -> (status: Int, headers: [String: String], body: Data)? {
        while true {
            if let range = buffer.range(of: Data("\r\n\r\n".utf8)) {
                let head = String(decoding: buffer[..<range.lowerBound], as: UTF8.self)
                var lines = head.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst().split(separator: " ")
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                        in: .whitespaces)
                }
                let length = Int(headers["content-length"] ?? "0") ?? 0
                let bodyStart = range.upperBound
                while buffer.count - (bodyStart - buffer.startIndex) < length {
                    guard try fill() else { throw Failure(message: "closed inside a body") }
                }
                let body = Data(buffer[bodyStart..<(bodyStart + length)])
                buffer = Data(buffer[(bodyStart + length)...])
                return (Int(statusLine.count > 1 ? statusLine[1] : "") ?? 0, headers, body)
            }
            guard try fill() else { return nil }
        }
    }

    /// Whether the server has closed the connection (reads end of stream).
    func isClosedByPeer() throws -> Bool {
        if !buffer.isEmpty { return false }
        return try !fill()
    }

    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = recv(socketDescriptor, &chunk, chunk.count, 0)
        if count < 0 { throw Failure(message: "recv failed, errno \(errno)") }
        if count == 0 { return false }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }
}

/// Runs blocking work (raw sockets, synchronous HTTP) on a thread of its own, so that it never occupies one of
/// the few threads of Swift's cooperative pool that the server's responders need.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
