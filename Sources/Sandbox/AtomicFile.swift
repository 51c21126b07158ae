import Foundation

#if canImport(Glibc)
    import Glibc
    private let systemWrite = Glibc.write
#elseif canImport(Darwin)
    import Darwin
    private let systemWrite = Darwin.write
#endif

/// Writes files so that a reader (or a crash) never sees half of one: the bytes go to a temporary file
/// in the same folder, created with the final permissions, and are renamed into place.
public enum AtomicFile {
    /// Permissions for private keys: owner read and write only.
    public static let privateMode: mode_t = 0o600
    /// Permissions for certificates and other public files.
    public static let publicMode: mode_t = 0o644

    /// Writes `bytes` to `url` atomically with the given permissions.
    /// - Throws: `SandboxError.Code.writeFailed` naming the path (never the content).
    public static func write(_ bytes: some Collection<UInt8>, to url: URL, mode: mode_t) throws {
        let folder = url.deletingLastPathComponent()
        let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw SandboxError(
                .writeFailed,
                "cannot create a file in \(folder.path): \(String(cString: strerror(errno)))", path: url.path)
        }
        var failure: String?
        let array = Array(bytes)
        array.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = systemWrite(descriptor, base + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = String(cString: strerror(errno))
                    return
                }
                offset += written
            }
        }
        if failure == nil, fchmod(descriptor, mode) != 0 { failure = String(cString: strerror(errno)) }
        if failure == nil, fsync(descriptor) != 0 { failure = String(cString: strerror(errno)) }
        close(descriptor)
        if failure == nil, rename(temporary.path, url.path) != 0 { failure = String(cString: strerror(errno)) }
        if let failure {
            unlink(temporary.path)
            throw SandboxError(.writeFailed, "cannot write \(url.path): \(failure)", path: url.path)
        }
    }

    /// Writes a string as UTF-8; see `write(_:to:mode:)`.
    public static func write(_ text: String, to url: URL, mode: mode_t) throws {
        try write(Array(text.utf8), to: url, mode: mode)
    }
}
