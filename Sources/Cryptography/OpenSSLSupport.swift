internal import COpenSSL
import Foundation
import Foundations

/// Small helpers shared by the wrapper types. Nothing here is public.
enum OpenSSLSupport {
    /// Runs `body` with a read-only memory BIO over `bytes`; the BIO never outlives the call.
    static func withReadBIO<R>(_ bytes: some DataProtocol, _ body: (OpaquePointer) throws -> R) throws -> R {
        let array = Array(bytes)
        return try array.withUnsafeBytes { raw -> R in
            guard array.count <= Int(Int32.max),
                let bio = BIO_new_mem_buf(raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(array.count))
            else {
                throw CryptographyError.openSSL(.internalError, "could not create a memory buffer")
            }
            defer { BIO_free(bio) }
            return try body(bio)
        }
    }

    /// Runs `body` with a writable memory BIO and returns what it wrote.
    static func writtenBytes(_ body: (OpaquePointer) throws -> Bool, failure: @autoclosure () -> CryptographyError)
        throws -> Data
    {
        guard let bio = BIO_new(BIO_s_mem()) else {
            throw CryptographyError.openSSL(.internalError, "could not create a memory buffer")
        }
        defer { BIO_free(bio) }
        guard try body(bio) else { throw failure() }
        var pointer: UnsafeMutablePointer<CChar>? = nil
        let length = COpenSSL_BIO_get_mem_data(bio, &pointer)
        guard length > 0, let pointer else { return Data() }
        return Data(bytes: pointer, count: Int(length))
    }

    /// The DER encoding produced by an `i2d_*` function, called twice (length, then bytes).
    static func der(_ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> Data? {
        let length = encode(nil)
        guard length > 0 else { return nil }
        var data = Data(count: Int(length))
        let written = data.withUnsafeMutableBytes { raw -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return encode(&cursor)
        }
        guard written == length else { return nil }
        return data
    }

    /// Calls a `d2i_*`-style parser over the bytes; returns nil when it fails or does not consume all of them.
    static func parseDER<T>(
        _ bytes: some DataProtocol,
        requireAllConsumed: Bool = true,
        _ parse: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> T?
    ) -> T? {
        let array = Array(bytes)
        guard !array.isEmpty else { return nil }
        return array.withUnsafeBufferPointer { buffer -> T? in
            guard let base = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            let value = parse(&cursor, buffer.count)
            if requireAllConsumed, value != nil, let cursor, cursor != base + buffer.count { return nil }
            return value
        }
    }

    /// What a `PEM_read_bio_*` call in `read` makes of `pem`, OpenSSL's error queue cleared first.
    /// - Throws: `code` with `message` (and the queue's text) when it reads nothing.
    static func readPEM(
        _ pem: String, _ code: CryptographyError.Code, _ message: String, _ read: (OpaquePointer) -> OpaquePointer?
    ) throws -> OpaquePointer {
        OpenSSLErrorQueue.clear()
        guard let parsed = try withReadBIO(Array(pem.utf8), read) else {
            throw CryptographyError.openSSL(code, message)
        }
        return parsed
    }

    /// What a `d2i_*` call in `parse` makes of `der` (every byte consumed), OpenSSL's error queue cleared first.
    /// - Throws: `code` with `message` (and the queue's text) when it parses nothing.
    static func readDER(
        _ der: Data, _ code: CryptographyError.Code, _ message: String,
        _ parse: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> OpaquePointer?
    ) throws -> OpaquePointer {
        OpenSSLErrorQueue.clear()
        guard let parsed = parseDER(der, parse) else { throw CryptographyError.openSSL(code, message) }
        return parsed
    }

    /// A PEM block with the given label around DER bytes (64-column lines, LF endings).
    static func pem(label: String, der: Data) -> String {
        let body = der.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN \(label)-----\n\(body)\n-----END \(label)-----\n"
    }

    /// A password callback that refuses: encrypted PEM keys fail instead of prompting on the terminal.
    static let refusePassword:
        @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?)
            -> Int32 = { _, _, _, _ in -1 }
}

extension Data {
    /// Lowercase hexadecimal (Foundations' one encoder).
    var lowercaseHex: String { Foundations.lowercaseHex(self) }
}

/// A value behind a lock. `@unchecked Sendable`: every access to `value` goes through `withLock`.
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
