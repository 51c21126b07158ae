import Foundation
import Foundations

/// Reads a private key file the safe way: opened without following a symbolic link, then checked on the opened
/// descriptor (so nothing can be swapped between the check and the read): a regular file, owned by this process's
/// user, with no group or other permission bits.
public enum KeyFile {
    /// The domain of ``Failure``.
    public enum FailureDomain {}

    /// Why a key file was refused; equality on `code`; the message names the file and what to do.
    public typealias Failure = CodedFailure<FailureDomain>

    /// The largest key file read (a PEM RSA-4096 key is about 3.3 KB).
    public static let maximumSize = 1024 * 1024

    /// The file's bytes after the checks above.
    /// - Parameter description: how messages name the file, e.g. "the Merchant Identity private key".
    /// - Throws: ``Failure`` naming the file and what to do.
    public static func read(_ path: String, description: String = "the private key") throws(Failure) -> Data {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard descriptor >= 0 else {
            let number = errno
            switch number {
            case ENOENT: throw Failure(.missing, "\(description) \(path) does not exist")
            case ELOOP:
                throw Failure(
                    .symbolicLink,
                    "\(description) \(path) is a symbolic link; keys are not read through links: name the real file")
            default:
                throw Failure(
                    .unreadable, "\(description) \(path) cannot be opened: \(String(cString: strerror(number)))")
            }
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw Failure(.unreadable, "\(description) \(path) cannot be examined: \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw Failure(.insecure, "\(description) \(path) is not a regular file")
        }
        guard status.st_uid == geteuid() else {
            throw Failure(
                .insecure,
                "\(description) \(path) belongs to user \(status.st_uid), not to this process's user \(geteuid()); chown it"
            )
        }
        guard status.st_mode & 0o077 == 0 else {
            throw Failure(
                .insecure,
                "\(description) \(path) is readable by other users (mode \(String(status.st_mode & 0o777, radix: 8))); run chmod 600 on it"
            )
        }
        guard Int(status.st_size) <= maximumSize else {
            throw Failure(.unreadable, "\(description) \(path) is larger than \(maximumSize) bytes")
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = Foundation.read(descriptor, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw Failure(.unreadable, "\(description) \(path) cannot be read: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            data.append(contentsOf: buffer[0..<count])
            guard data.count <= maximumSize else {
                throw Failure(.unreadable, "\(description) \(path) is larger than \(maximumSize) bytes")
            }
        }
        buffer.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
        return data
    }
}

/// The stable identifiers of the kinds of key file refusal.
extension ErrorCode<KeyFile.Failure> {
    /// The file does not exist.
    public static var missing: Self { Self("missing") }
    /// The path is a symbolic link (never followed for a key).
    public static var symbolicLink: Self { Self("symbolicLink") }
    /// Not a regular file, owned by another user, or readable or writable by group or others.
    public static var insecure: Self { Self("insecure") }
    /// It could not be opened or read.
    public static var unreadable: Self { Self("unreadable") }
}
