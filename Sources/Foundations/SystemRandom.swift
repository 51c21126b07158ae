import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The kernel's random bytes (`getrandom`), fetched 256 at a time and each handed out once: one payment takes
/// random bytes in five places (two identifiers, the order's secret, the request's id), each of which was a
/// system call before. Every random identifier and secret the server makes comes from here (``randomBytes(_:)``,
/// ``randomHex(bytes:)``); keys come from OpenSSL's generator (`Cryptography`).
///
/// The bytes not yet handed out wait in this process's memory, as a generator's state does in any library that
/// draws from the kernel. The server never forks without `exec`, so no other process starts with a copy of them.
public struct SystemRandom: RandomNumberGenerator, Sendable {
    private struct Pool {
        static let size = 256
        var bytes = [UInt8](repeating: 0, count: Pool.size)
        var next = Pool.size
    }

    private static let pool = Mutex(Pool())

    public init() {}

    public mutating func next() -> UInt64 {
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { Self.fill($0) }
        return value
    }

    /// Fills `buffer` with random bytes.
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard buffer.count <= Pool.size / 4 else { return kernelFill(buffer) }  // large draws skip the pool
        nonisolated(unsafe) let buffer = buffer  // the caller's memory, written under the lock and never kept
        pool.withLock { pool in
            let start = pool.next
            pool.bytes.withUnsafeMutableBytes { bytes in
                var start = start
                if Pool.size - start < buffer.count {
                    kernelFill(bytes)
                    start = 0
                }
                let taken = UnsafeMutableRawBufferPointer(rebasing: bytes[start..<start + buffer.count])
                buffer.copyMemory(from: UnsafeRawBufferPointer(taken))
                // Handed out once: the pool keeps no copy of what it gave.
                taken.initializeMemory(as: UInt8.self, repeating: 0)
                pool.next = start + buffer.count
            }
        }
    }

    /// Fills `buffer` straight from the kernel: `getentropy`, which is `getrandom` 256 bytes at most at a time.
    private static func kernelFill(_ buffer: UnsafeMutableRawBufferPointer) {
        var generator = SystemRandomNumberGenerator()
        var filled = 0
        while filled < buffer.count {
            let count = min(256, buffer.count - filled)
            #if canImport(Glibc)
                if getentropy(buffer.baseAddress! + filled, count) == 0 {
                    filled += count
                    continue
                }
            #endif
            // No getentropy (or it failed): Swift's generator, which traps where the kernel has no randomness.
            for index in filled..<filled + count { buffer[index] = UInt8(truncatingIfNeeded: generator.next()) }
            filled += count
        }
    }
}

/// `count` random bytes from the system's generator (``SystemRandom``).
public func randomBytes(_ count: Int) -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        SystemRandom.fill(UnsafeMutableRawBufferPointer(buffer))
        initialized = count
    }
}

/// `count` random bytes from the system's generator, in lowercase hex: the random part of every secret the server
/// makes.
public func randomHex(bytes count: Int) -> String {
    lowercaseHex(randomBytes(count))
}
