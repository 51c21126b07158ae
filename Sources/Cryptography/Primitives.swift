internal import COpenSSL
import Foundation
import Foundations

/// SHA-2 digests.
public enum Digest {
    /// SHA-256 of the bytes (32 bytes).
    public static func sha256(_ data: some DataProtocol) -> Data {
        hash(data, length: Int(SHA256_DIGEST_LENGTH), FetchedDigest.sha256)
    }

    /// SHA-256 of the bytes (32 bytes); the same as the generic form, without its generic dispatch.
    public static func sha256(_ bytes: [UInt8]) -> Data {
        bytes.withUnsafeBytes { hash($0, length: Int(SHA256_DIGEST_LENGTH), FetchedDigest.sha256) }
    }

    /// SHA-256 of the bytes (32 bytes); the same as the generic form, without its generic dispatch.
    public static func sha256(_ data: Data) -> Data {
        data.withUnsafeBytes { hash($0, length: Int(SHA256_DIGEST_LENGTH), FetchedDigest.sha256) }
    }

    /// SHA-384 of the bytes (48 bytes).
    public static func sha384(_ data: some DataProtocol) -> Data {
        hash(data, length: Int(SHA384_DIGEST_LENGTH), FetchedDigest.sha384)
    }

    /// SHA-256 of the parts one after another, hashed in place (no concatenated copy).
    public static func sha256(concatenating parts: [[UInt8]]) -> Data {
        var output = Data(count: Int(SHA256_DIGEST_LENGTH))
        output.withUnsafeMutableBytes { out in
            let base = out.baseAddress?.assumingMemoryBound(to: UInt8.self)
            guard streamSHA256(into: base, parts: parts) else {
                // Only an allocation failure gets here: hash a concatenation with the one-shot function instead.
                OpenSSLErrorQueue.clear()
                let joined = parts.flatMap { $0 }
                _ = SHA256(joined, joined.count, base)
                return
            }
        }
        return output
    }

    /// SHA-256 over `parts` with one `EVP_MD_CTX`; false if OpenSSL failed (allocation).
    static func streamSHA256(into output: UnsafeMutablePointer<UInt8>?, parts: [[UInt8]]) -> Bool {
        streamSHA256(into: output, count: parts.count) { index, update in
            parts[index].withUnsafeBytes { update($0) }
        }
    }

    /// SHA-256 over `count` buffers that `part` hands to `update` in order; false if OpenSSL failed.
    static func streamSHA256(
        into output: UnsafeMutablePointer<UInt8>?, count: Int,
        part: (Int, (UnsafeRawBufferPointer) -> Bool) -> Bool
    ) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestInit_ex(context, FetchedDigest.sha256.pointer, nil) == 1 else { return false }
        for index in 0..<count {
            let updated = part(index) { bytes in
                bytes.isEmpty || EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1
            }
            guard updated else { return false }
        }
        var written: UInt32 = 0
        return EVP_DigestFinal_ex(context, output, &written) == 1 && written == SHA256_DIGEST_LENGTH
    }

    /// Runs `EVP_Digest` with a digest fetched once (the one-shot `SHA256()` fetches the algorithm from the
    /// provider by name on every call, a lock and a property query per hash).
    private static func hash(_ data: some DataProtocol, length: Int, _ digest: FetchedDigest) -> Data {
        withContiguousBytes(data) { hash($0, length: length, digest) }
    }

    private static func hash(_ input: UnsafeRawBufferPointer, length: Int, _ digest: FetchedDigest) -> Data {
        var output = Data(count: length)
        output.withUnsafeMutableBytes { out in
            var written: UInt32 = 0
            let base = out.baseAddress?.assumingMemoryBound(to: UInt8.self)
            if EVP_Digest(input.baseAddress, input.count, base, &written, digest.pointer, nil) != 1
                || Int(written) != length
            {
                // Only an allocation failure gets here; hash with the one-shot function instead.
                OpenSSLErrorQueue.clear()
                let bytes = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
                _ =
                    length == Int(SHA256_DIGEST_LENGTH)
                    ? SHA256(bytes, input.count, base) : SHA384(bytes, input.count, base)
            }
        }
        return output
    }

    /// Calls `body` with the bytes as one contiguous buffer (copying only when they are not contiguous already).
    static func withContiguousBytes<R>(_ data: some DataProtocol, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        if let result = data.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) { return result }
        if let data = data as? Data { return data.withUnsafeBytes(body) }
        return Array(data).withUnsafeBytes(body)
    }
}

/// HMAC (RFC 2104): the message authentication code providers sign webhooks with.
public enum HMAC {
    /// HMAC-SHA256 of `message` under `key` (32 bytes). Any key length works, the empty key included.
    /// - Throws: ``CryptographyError`` `internalError` when OpenSSL fails (an allocation): never a made-up MAC.
    public static func sha256(key: some DataProtocol, message: some DataProtocol) throws(CryptographyError) -> Data {
        // One-byte stand-ins keep the pointers non-null for an empty key or message (OpenSSL reads none of them).
        let keyBytes: [UInt8] = key.isEmpty ? [0] : Array(key)
        let messageBytes: [UInt8] = message.isEmpty ? [0] : Array(message)
        let keyLength = Int32(clamping: key.count)
        let messageLength = message.count
        var output = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        var written: UInt32 = 0
        let done = keyBytes.withUnsafeBytes { (keyBuffer: UnsafeRawBufferPointer) -> Bool in
            messageBytes.withUnsafeBufferPointer { (messageBuffer: UnsafeBufferPointer<UInt8>) -> Bool in
                output.withUnsafeMutableBufferPointer { (out: inout UnsafeMutableBufferPointer<UInt8>) -> Bool in
                    COpenSSL.HMAC(
                        FetchedDigest.sha256.pointer, keyBuffer.baseAddress, keyLength, messageBuffer.baseAddress,
                        messageLength, out.baseAddress, &written) != nil
                }
            }
        }
        guard done, Int(written) == output.count else {
            throw CryptographyError.openSSL(.internalError, "HMAC-SHA256 failed")
        }
        return Data(output)
    }
}

/// Cryptographically secure random bytes.
public enum SecureRandom {
    /// `count` random bytes from OpenSSL's DRBG (the system generator if OpenSSL ever fails).
    public static func bytes(_ count: Int) -> Data {
        guard count > 0 else { return Data() }
        var data = Data(count: count)
        let ok = data.withUnsafeMutableBytes { raw -> Bool in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return false }
            var offset = 0
            while offset < count {
                let chunk = min(count - offset, Int(Int32.max))
                guard RAND_bytes(base + offset, Int32(chunk)) == 1 else { return false }
                offset += chunk
            }
            return true
        }
        if !ok {
            OpenSSLErrorQueue.clear()
            var generator = SystemRandomNumberGenerator()
            data = Data((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        }
        return data
    }
}

/// Elliptic-curve Diffie-Hellman.
public enum ECDH {
    /// The shared secret Z (the x coordinate, 32 bytes for P-256) between a private key and a peer's public key.
    /// - Throws: `CryptographyError` with code `invalidKey` when the keys are not on the same curve or not EC.
    public static func sharedSecret(privateKey: PrivateKey, publicKey: PublicKey) throws -> Data {
        guard privateKey.kind == publicKey.kind, privateKey.kind == .p256 || privateKey.kind == .p384 else {
            throw CryptographyError(
                .invalidKey, "ECDH needs two EC keys on the same curve (got \(privateKey.kind) and \(publicKey.kind))")
        }
        OpenSSLErrorQueue.clear()
        guard let context = EVP_PKEY_CTX_new(privateKey.pkey, nil) else {
            throw CryptographyError.openSSL(.internalError, "could not create a key-agreement context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_derive_set_peer(context, publicKey.pkey) == 1 else {
            throw CryptographyError.openSSL(.invalidKey, "the peer public key cannot be used for ECDH")
        }
        var length = 0
        guard EVP_PKEY_derive(context, nil, &length) == 1, length > 0 else {
            throw CryptographyError.openSSL(.internalError, "ECDH failed")
        }
        var secret = Data(count: length)
        let ok = secret.withUnsafeMutableBytes { raw in
            EVP_PKEY_derive(context, raw.baseAddress?.assumingMemoryBound(to: UInt8.self), &length) == 1
        }
        guard ok else { throw CryptographyError.openSSL(.invalidKey, "ECDH failed") }
        return secret.prefix(length)
    }
}

/// A digest fetched once from the default provider and shared (an `EVP_MD` is immutable and reference-counted).
struct FetchedDigest: @unchecked Sendable {
    let pointer: OpaquePointer?
    init(_ name: String) { pointer = EVP_MD_fetch(nil, name, nil) }

    static let sha256 = FetchedDigest("SHA256")
    static let sha384 = FetchedDigest("SHA384")
}

/// A cipher fetched once from the default provider and shared (an `EVP_CIPHER` is immutable and reference-counted).
struct FetchedCipher: @unchecked Sendable {
    let pointer: OpaquePointer?
    init(_ name: String) { pointer = EVP_CIPHER_fetch(nil, name, nil) }

    static let aes128GCM = FetchedCipher("AES-128-GCM")
    static let aes256GCM = FetchedCipher("AES-256-GCM")
}

/// AES in Galois/Counter Mode, no associated data, 16-byte tag appended to the ciphertext.
public enum AESGCM {
    /// The length of the authentication tag.
    public static let tagLength = 16

    /// Encrypts; returns ciphertext ‖ 16-byte tag.
    /// - Parameters:
    ///   - key: 16 bytes (AES-128) or 32 bytes (AES-256).
    ///   - iv: any non-empty length; Apple Pay uses 16 zero bytes.
    /// - Throws: `CryptographyError` with code `invalidKey` for a bad key length, `malformedInput` for a bad IV.
    public static func seal(_ plaintext: Data, key: Data, iv: Data) throws -> Data {
        try run(encrypt: true, input: plaintext, tag: nil, key: key, iv: iv)
    }

    /// Decrypts and authenticates ciphertext ‖ 16-byte tag.
    /// - Throws: `CryptographyError` with code `decryptionFailed` when the tag does not match or the input is too
    ///   short; `invalidKey` for a bad key length.
    public static func open(_ combined: Data, key: Data, iv: Data) throws -> Data {
        guard combined.count >= tagLength else {
            throw CryptographyError(.decryptionFailed, "ciphertext is shorter than the 16-byte GCM tag")
        }
        let tag = combined.suffix(tagLength)
        return try run(
            encrypt: false, input: combined.prefix(combined.count - tagLength), tag: Data(tag), key: key, iv: iv)
    }

    /// Decrypts and authenticates ciphertext ‖ 16-byte tag given as bytes, without intermediate copies: the
    /// plaintext is written once into the returned array.
    /// - Throws: as `open(_:key:iv:)`.
    public static func open(
        bytes combined: [UInt8], key: some ContiguousBytes, iv: some ContiguousBytes
    ) throws -> [UInt8] {
        guard combined.count >= tagLength else {
            throw CryptographyError(.decryptionFailed, "ciphertext is shorter than the 16-byte GCM tag")
        }
        let length = combined.count - tagLength
        var failure: CryptographyError? = nil
        let output = combined.withUnsafeBytes { all in
            key.withUnsafeBytes { key in
                iv.withUnsafeBytes { iv in
                    [UInt8](unsafeUninitializedCapacity: length) { out, initialized in
                        do {
                            try run(
                                encrypt: false, input: UnsafeRawBufferPointer(rebasing: all[0..<length]),
                                tag: UnsafeRawBufferPointer(rebasing: all[length...]), key: key, iv: iv,
                                output: UnsafeMutableRawBufferPointer(out))
                            initialized = length
                        } catch {
                            // Wipe whatever partial plaintext was written before reporting.
                            if let base = out.baseAddress, length > 0 { base.initialize(repeating: 0, count: length) }
                            initialized = 0
                            failure =
                                error as? CryptographyError
                                ?? CryptographyError(.decryptionFailed, "AES-GCM authentication failed")
                        }
                    }
                }
            }
        }
        if let failure { throw failure }
        return output
    }

    private static func run(encrypt: Bool, input: Data, tag: Data?, key: Data, iv: Data) throws -> Data {
        var output = Data(count: input.count + (encrypt ? tagLength : 0))
        do {
            try input.withUnsafeBytes { input in
                try key.withUnsafeBytes { key in
                    try iv.withUnsafeBytes { iv in
                        try output.withUnsafeMutableBytes { out in
                            if let tag {
                                try tag.withUnsafeBytes { tag in
                                    try run(encrypt: encrypt, input: input, tag: tag, key: key, iv: iv, output: out)
                                }
                            } else {
                                try run(encrypt: encrypt, input: input, tag: nil, key: key, iv: iv, output: out)
                            }
                        }
                    }
                }
            }
        } catch {
            // Wipe whatever partial plaintext was written before reporting.
            output.resetBytes(in: 0..<output.count)
            throw error
        }
        return output
    }

    /// The one implementation: `output` has room for the input (and the tag when encrypting).
    private static func run(
        encrypt: Bool, input: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer?, key: UnsafeRawBufferPointer,
        iv: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws {
        let cipher: FetchedCipher
        switch key.count {
        case 16: cipher = .aes128GCM
        case 32: cipher = .aes256GCM
        default: throw CryptographyError(.invalidKey, "AES-GCM key must be 16 or 32 bytes, not \(key.count)")
        }
        guard !iv.isEmpty, iv.count <= 128 else {
            throw CryptographyError(.malformedInput, "AES-GCM IV must be 1 to 128 bytes, not \(iv.count)")
        }
        guard input.count < Int(Int32.max) - 32 else {
            throw CryptographyError(.malformedInput, "input too large for AES-GCM in one call")
        }
        guard output.count >= input.count + (encrypt ? tagLength : 0) else {
            throw CryptographyError(.internalError, "AES-GCM output buffer too small")
        }
        OpenSSLErrorQueue.clear()
        guard let algorithm = cipher.pointer, let context = EVP_CIPHER_CTX_new() else {
            throw CryptographyError.openSSL(.internalError, "AES-GCM is not available")
        }
        defer { EVP_CIPHER_CTX_free(context) }
        let initialise = encrypt ? EVP_EncryptInit_ex : EVP_DecryptInit_ex
        guard initialise(context, algorithm, nil, nil, nil) == 1,
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(iv.count), nil) == 1
        else {
            throw CryptographyError.openSSL(.internalError, "could not set up AES-GCM")
        }
        guard
            initialise(
                context, nil, nil, key.baseAddress?.assumingMemoryBound(to: UInt8.self),
                iv.baseAddress?.assumingMemoryBound(to: UInt8.self)) == 1
        else { throw CryptographyError.openSSL(.internalError, "could not key AES-GCM") }
        var failed = false
        let outBase = output.baseAddress?.assumingMemoryBound(to: UInt8.self)
        var written: Int32 = 0
        if !input.isEmpty {
            let inBase = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
            let ok =
                encrypt
                ? EVP_EncryptUpdate(context, outBase, &written, inBase, Int32(input.count))
                : EVP_DecryptUpdate(context, outBase, &written, inBase, Int32(input.count))
            failed = ok != 1 || Int(written) != input.count
        }
        if !failed, let tag {
            // EVP_CTRL_GCM_SET_TAG only reads the tag.
            failed =
                tag.count != tagLength
                || EVP_CIPHER_CTX_ctrl(
                    context, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), UnsafeMutableRawPointer(mutating: tag.baseAddress))
                    != 1
        }
        if !failed {
            var finalLength: Int32 = 0
            var scratch: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
            let finished = withUnsafeMutableBytes(of: &scratch) { scratch in
                let base = scratch.baseAddress?.assumingMemoryBound(to: UInt8.self)
                return encrypt
                    ? EVP_EncryptFinal_ex(context, base, &finalLength)
                    : EVP_DecryptFinal_ex(context, base, &finalLength)
            }
            failed = finished != 1 || finalLength != 0
        }
        if !failed, encrypt {
            failed =
                EVP_CIPHER_CTX_ctrl(
                    context, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), outBase.map { $0 + input.count }) != 1
        }
        if failed {
            if encrypt { throw CryptographyError.openSSL(.internalError, "AES-GCM encryption failed") }
            OpenSSLErrorQueue.clear()
            throw CryptographyError(
                .decryptionFailed, "AES-GCM authentication failed: wrong key, or the ciphertext or tag was altered")
        }
    }
}

/// RSA-OAEP with SHA-256 and MGF1-SHA-256 (Apple Pay RSA_v1).
public enum RSAOAEP {
    /// Encrypts a short message (at most modulus length − 66 bytes).
    /// - Throws: `CryptographyError` with code `invalidKey` for a non-RSA key, `malformedInput` when too long.
    public static func encrypt(_ plaintext: Data, publicKey: PublicKey) throws -> Data {
        guard case .rsa = publicKey.kind else {
            throw CryptographyError(.invalidKey, "RSA-OAEP needs an RSA public key, not \(publicKey.kind)")
        }
        return try run(pkey: publicKey.pkey, encrypt: true, input: plaintext)
    }

    /// Decrypts.
    /// - Throws: `CryptographyError` with code `decryptionFailed` when the padding does not check (wrong key or
    ///   altered ciphertext), `invalidKey` for a non-RSA key.
    public static func decrypt(_ ciphertext: Data, privateKey: PrivateKey) throws -> Data {
        guard case .rsa = privateKey.kind else {
            throw CryptographyError(.invalidKey, "RSA-OAEP needs an RSA private key, not \(privateKey.kind)")
        }
        return try run(pkey: privateKey.pkey, encrypt: false, input: ciphertext)
    }

    private static func run(pkey: OpaquePointer, encrypt: Bool, input: Data) throws -> Data {
        OpenSSLErrorQueue.clear()
        guard let context = EVP_PKEY_CTX_new(pkey, nil) else {
            throw CryptographyError.openSSL(.internalError, "could not create an RSA context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard (encrypt ? EVP_PKEY_encrypt_init(context) : EVP_PKEY_decrypt_init(context)) == 1,
            EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_OAEP_PADDING) == 1,
            EVP_PKEY_CTX_set_rsa_oaep_md_name(context, "SHA256", nil) == 1,
            EVP_PKEY_CTX_set_rsa_mgf1_md_name(context, "SHA256", nil) == 1
        else {
            throw CryptographyError.openSSL(.internalError, "could not set up RSA-OAEP with SHA-256")
        }
        let bytes = Array(input)
        var length = 0
        let sized = bytes.withUnsafeBufferPointer { inp in
            encrypt
                ? EVP_PKEY_encrypt(context, nil, &length, inp.baseAddress, inp.count)
                : EVP_PKEY_decrypt(context, nil, &length, inp.baseAddress, inp.count)
        }
        guard sized == 1, length > 0 else {
            throw CryptographyError.openSSL(
                encrypt ? .malformedInput : .decryptionFailed, "RSA-OAEP could not size its output")
        }
        var output = [UInt8](repeating: 0, count: length)
        let done = bytes.withUnsafeBufferPointer { inp in
            encrypt
                ? EVP_PKEY_encrypt(context, &output, &length, inp.baseAddress, inp.count)
                : EVP_PKEY_decrypt(context, &output, &length, inp.baseAddress, inp.count)
        }
        guard done == 1 else {
            if encrypt {
                throw CryptographyError.openSSL(
                    .malformedInput, "RSA-OAEP encryption failed (message too long for the key?)")
            }
            OpenSSLErrorQueue.clear()
            throw CryptographyError(
                .decryptionFailed, "RSA-OAEP decryption failed: wrong key, or the ciphertext was altered")
        }
        return Data(output.prefix(length))
    }
}

/// RSA-OAEP (SHA-256, MGF1-SHA-256) decryption with one private key, prepared once: it keeps a small pool of
/// OpenSSL contexts already set up for the padding and digests, so a decryption costs the RSA private operation and
/// the padding check, not a context's set-up and two digest fetches.
///
/// `@unchecked Sendable`: the pool is behind a lock and each context is used by one thread at a time.
public final class RSAOAEPDecryptor: @unchecked Sendable {
    /// The key this decryptor uses.
    public let privateKey: PrivateKey
    private let pool: ContextPool

    /// Prepares decryption with an RSA private key.
    /// - Throws: `CryptographyError` with code `invalidKey` when the key is not RSA or OpenSSL cannot use it.
    public init(privateKey: PrivateKey) throws {
        guard case .rsa = privateKey.kind else {
            throw CryptographyError(.invalidKey, "RSA-OAEP needs an RSA private key, not \(privateKey.kind)")
        }
        self.privateKey = privateKey
        pool = try ContextPool { () throws(CryptographyError) in try Self.makeContext(privateKey) }
    }

    private static func makeContext(_ privateKey: PrivateKey) throws(CryptographyError) -> OpaquePointer {
        OpenSSLErrorQueue.clear()
        guard let context = EVP_PKEY_CTX_new(privateKey.pkey, nil) else {
            throw CryptographyError.openSSL(.internalError, "could not create an RSA context")
        }
        guard EVP_PKEY_decrypt_init(context) == 1,
            EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_OAEP_PADDING) == 1,
            EVP_PKEY_CTX_set_rsa_oaep_md_name(context, "SHA256", nil) == 1,
            EVP_PKEY_CTX_set_rsa_mgf1_md_name(context, "SHA256", nil) == 1
        else {
            EVP_PKEY_CTX_free(context)
            throw CryptographyError.openSSL(.invalidKey, "could not set up RSA-OAEP with SHA-256")
        }
        return context
    }

    /// Decrypts, as `RSAOAEP.decrypt(_:privateKey:)`.
    /// - Throws: `CryptographyError` with code `decryptionFailed` when the padding does not check (wrong key or
    ///   altered ciphertext).
    public func decrypt(_ ciphertext: some DataProtocol) throws -> Data {
        // The output is at most the modulus size.
        var output = [UInt8](repeating: 0, count: Int(EVP_PKEY_get_size(privateKey.pkey)))
        var length = output.count
        let done = try pool.withContext { context in
            Digest.withContiguousBytes(ciphertext) { input in
                EVP_PKEY_decrypt(
                    context, &output, &length, input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count)
            }
        }
        guard done == 1, length <= output.count else {
            OpenSSLErrorQueue.clear()
            for index in output.indices { output[index] = 0 }
            throw CryptographyError(
                .decryptionFailed, "RSA-OAEP decryption failed: wrong key, or the ciphertext was altered")
        }
        defer { for index in output.indices { output[index] = 0 } }
        return Data(output.prefix(length))
    }
}
