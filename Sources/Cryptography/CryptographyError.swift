internal import COpenSSL
import Foundation
import Foundations

/// The stable codes of ``CryptographyError``.
extension ErrorCode<CryptographyError> {
    /// A key could not be parsed, generated, or is of an unsupported kind.
    public static var invalidKey: Self { Self("invalidKey") }
    /// A certificate could not be parsed.
    public static var invalidCertificate: Self { Self("invalidCertificate") }
    /// A signature did not verify or is malformed.
    public static var invalidSignature: Self { Self("invalidSignature") }
    /// Input (DER, PEM, CMS, a length) is malformed.
    public static var malformedInput: Self { Self("malformedInput") }
    /// An algorithm or parameter is not supported.
    public static var unsupportedAlgorithm: Self { Self("unsupportedAlgorithm") }
    /// A certificate chain does not lead to a trusted root, or a certificate is not valid at the time checked.
    public static var untrustedCertificateChain: Self { Self("untrustedCertificateChain") }
    /// Decryption or authentication of ciphertext failed.
    public static var decryptionFailed: Self { Self("decryptionFailed") }
    /// OpenSSL failed where it should not (allocation, an unexpected internal state).
    public static var internalError: Self { Self("internalError") }
}

/// The domain of ``CryptographyError``: its codes are ``ErrorCode`` of it.
public enum CryptographyErrorDomain {}

/// An error from the cryptography layer: a stable `code` a caller can switch on and a message a person can act on.
///
/// Messages may quote OpenSSL's error queue, which names algorithms and parsing failures; they never contain key,
/// plaintext or other secret bytes. Two errors are equal when their codes are equal.
public typealias CryptographyError = CodedFailure<CryptographyErrorDomain>

extension CryptographyError {
    /// An error whose message ends with the text of OpenSSL's error queue (which this drains).
    static func openSSL(_ code: Code, _ message: String) -> CryptographyError {
        let queue = OpenSSLErrorQueue.drain()
        return CryptographyError(code, queue.isEmpty ? message : "\(message) (OpenSSL: \(queue))")
    }
}

/// OpenSSL's per-thread error queue.
enum OpenSSLErrorQueue {
    /// Reads and clears the queue, returning its entries joined by "; " (at most a few, to keep messages short).
    static func drain() -> String {
        var entries: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if entries.count < 4 {
                var buffer = [CChar](repeating: 0, count: 256)
                ERR_error_string_n(code, &buffer, buffer.count)
                entries.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        return entries.joined(separator: "; ")
    }

    /// Clears anything a previous call left behind.
    static func clear() { ERR_clear_error() }
}
