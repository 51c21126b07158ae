internal import COpenSSL

/// A small pool of prepared `EVP_PKEY_CTX`s for one key, shared by the classes that keep one (`SignatureVerifier`,
/// `RSAOAEPDecryptor`): a call borrows a ready context, or makes one when all are in use, and gives it back; at most
/// `limit` are kept, the rest are freed. The pool owns the contexts it holds and frees them when it goes.
final class ContextPool: @unchecked Sendable {
    private let contexts = Locked<[OpaquePointer]>([])
    private let limit: Int
    private let make: @Sendable () throws(CryptographyError) -> OpaquePointer

    /// Makes the first context at once, so a key OpenSSL cannot use fails here, not on first use.
    init(limit: Int = 32, make: @escaping @Sendable () throws(CryptographyError) -> OpaquePointer)
        throws(CryptographyError)
    {
        self.limit = limit
        self.make = make
        let first = try make()
        contexts.withLock { $0.append(first) }
    }

    deinit {
        contexts.withLock { held in
            for context in held { EVP_PKEY_CTX_free(context) }
            held.removeAll()
        }
    }

    /// Runs `body` with a context of the pool's (or a new one), then gives it back.
    func withContext<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        let pooled = contexts.withLock { $0.popLast() }
        let context = try pooled ?? make()
        defer {
            let leftover: OpaquePointer? = contexts.withLock { held in
                guard held.count < limit else { return context }
                held.append(context)
                return nil
            }
            if let leftover { EVP_PKEY_CTX_free(leftover) }
        }
        return try body(context)
    }
}
