internal import COpenSSL
import Foundation
import Foundations

/// Verifies signatures made with one public key over SHA-256 digests: ECDSA (DER-encoded signature) for EC keys,
/// PKCS#1 v1.5 for RSA keys.
///
/// Built once per key and reused: it keeps a small pool of ready OpenSSL verification contexts, so verifying
/// costs the signature arithmetic and little else. `@unchecked Sendable`: the pool is behind a lock and each
/// context is used by one thread at a time.
public final class SignatureVerifier: @unchecked Sendable {
    /// The key signatures are checked against.
    public let publicKey: PublicKey
    private let pool: ContextPool

    /// Prepares a verifier for the key.
    /// - Throws: `CryptographyError` with code `invalidKey` when OpenSSL cannot verify with it.
    public init(publicKey: PublicKey) throws {
        self.publicKey = publicKey
        pool = try ContextPool { () throws(CryptographyError) in try Self.makeContext(publicKey) }
    }

    private static func makeContext(_ publicKey: PublicKey) throws(CryptographyError) -> OpaquePointer {
        OpenSSLErrorQueue.clear()
        guard let context = EVP_PKEY_CTX_new(publicKey.pkey, nil) else {
            throw CryptographyError.openSSL(.internalError, "could not create a verification context")
        }
        guard EVP_PKEY_verify_init(context) == 1, EVP_PKEY_CTX_set_signature_md(context, EVP_sha256()) == 1 else {
            EVP_PKEY_CTX_free(context)
            throw CryptographyError.openSSL(.invalidKey, "the key cannot verify SHA-256 signatures")
        }
        if case .rsa = publicKey.kind, EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PADDING) != 1 {
            EVP_PKEY_CTX_free(context)
            throw CryptographyError.openSSL(.invalidKey, "the key cannot verify PKCS#1 v1.5 signatures")
        }
        return context
    }

    /// Whether `signature` is a valid signature of the 32-byte SHA-256 `digest`.
    public func verify(signature: some DataProtocol, sha256Digest digest: some DataProtocol) -> Bool {
        guard digest.count == 32, !signature.isEmpty else { return false }
        let result = try? pool.withContext { context in
            // Both are usually contiguous already (Data, [UInt8]): no copies.
            Digest.withContiguousBytes(signature) { signatureBytes in
                Digest.withContiguousBytes(digest) { digestBytes in
                    EVP_PKEY_verify(
                        context, signatureBytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                        signatureBytes.count, digestBytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                        digestBytes.count)
                }
            }
        }
        if result != 1 { OpenSSLErrorQueue.clear() }
        return result == 1
    }

    /// Whether `signature` is a valid signature of SHA-256(`message`).
    public func verify(signature: some DataProtocol, message: some DataProtocol) -> Bool {
        verify(signature: signature, sha256Digest: Digest.sha256(message))
    }
}

/// ECDH on P-256 with one private key, prepared once: per agreement it decodes the peer's point (checking that it
/// is on the curve) and multiplies, without building OpenSSL key objects.
///
/// `@unchecked Sendable`: the curve group and the private scalar are read-only after `init`; each call uses its
/// own points and big-number context.
public final class P256KeyAgreement: @unchecked Sendable {
    private let group: OpaquePointer
    private let scalar: OpaquePointer
    /// The private key this agreement uses.
    public let privateKey: PrivateKey

    /// Prepares agreement with a P-256 private key.
    /// - Throws: `CryptographyError` with code `invalidKey` when the key is not P-256.
    public init(privateKey: PrivateKey) throws {
        guard privateKey.kind == .p256 else {
            throw CryptographyError(.invalidKey, "ECDH P-256 needs a P-256 private key, not \(privateKey.kind)")
        }
        OpenSSLErrorQueue.clear()
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else {
            throw CryptographyError.openSSL(.internalError, "P-256 is not available")
        }
        var number: OpaquePointer? = nil
        guard EVP_PKEY_get_bn_param(privateKey.pkey, OSSL_PKEY_PARAM_PRIV_KEY, &number) == 1, let number else {
            EC_GROUP_free(group)
            throw CryptographyError.openSSL(.invalidKey, "the private scalar cannot be read")
        }
        BN_set_flags(number, BN_FLG_CONSTTIME)
        self.group = group
        self.scalar = number
        self.privateKey = privateKey
    }

    deinit {
        BN_clear_free(scalar)
        EC_GROUP_free(group)
    }

    /// Z, the 32-byte x coordinate of the shared point, for a peer's X9.62 point (04‖X‖Y, or compressed).
    /// - Throws: `CryptographyError` with code `invalidKey` when the point is malformed or not on the curve.
    public func sharedSecret(peerPoint: some DataProtocol) throws -> Data {
        let encoded = Array(peerPoint)
        guard encoded.count == 65 || encoded.count == 33 else {
            throw CryptographyError(.invalidKey, "a P-256 point is 65 bytes (or 33 compressed), not \(encoded.count)")
        }
        guard let context = BN_CTX_secure_new() else {
            throw CryptographyError.openSSL(.internalError, "could not allocate")
        }
        defer { BN_CTX_free(context) }
        guard let peer = EC_POINT_new(group), let product = EC_POINT_new(group), let x = BN_CTX_get(context) else {
            throw CryptographyError.openSSL(.internalError, "could not allocate")
        }
        defer {
            EC_POINT_free(peer)
            EC_POINT_clear_free(product)
        }
        guard EC_POINT_oct2point(group, peer, encoded, encoded.count, context) == 1 else {
            OpenSSLErrorQueue.clear()
            throw CryptographyError(.invalidKey, "the peer's public key is not a point on P-256")
        }
        guard EC_POINT_mul(group, product, nil, peer, scalar, context) == 1,
            EC_POINT_get_affine_coordinates(group, product, x, nil, context) == 1
        else {
            OpenSSLErrorQueue.clear()
            throw CryptographyError(.invalidKey, "ECDH with the peer's public key failed")
        }
        var secret = Data(count: 32)
        let written = secret.withUnsafeMutableBytes { raw in
            BN_bn2binpad(x, raw.baseAddress?.assumingMemoryBound(to: UInt8.self), 32)
        }
        BN_clear(x)
        guard written == 32 else { throw CryptographyError.openSSL(.internalError, "ECDH output has the wrong size") }
        return secret
    }

    /// Z for a peer's P-256 SubjectPublicKeyInfo (DER), as in an Apple Pay `ephemeralPublicKey`.
    /// - Throws: `CryptographyError` with code `invalidKey` when it is not a P-256 key or the point is invalid.
    public func sharedSecret(peerSubjectPublicKeyInfoDER der: some DataProtocol) throws -> Data {
        let bytes = Array(der)
        // The usual encoding (named curve, uncompressed point) has a fixed 26-byte prefix: skip the general reader.
        if bytes.count == 91, bytes[0..<26].elementsEqual(P256KeyAgreement.uncompressedPrefix) {
            return try sharedSecret(peerPoint: bytes[26...])
        }
        return try sharedSecret(peerPoint: P256KeyAgreement.point(fromSubjectPublicKeyInfo: bytes))
    }

    /// SEQUENCE { SEQUENCE { ecPublicKey, prime256v1 }, BIT STRING (66 bytes, 0 unused bits) }, before 04‖X‖Y.
    static let uncompressedPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
        0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// The point inside a P-256 SubjectPublicKeyInfo.
    static func point(fromSubjectPublicKeyInfo bytes: [UInt8]) throws(CryptographyError) -> ArraySlice<UInt8> {
        let reader = ASN1Reader(bytes)
        do throws(CryptographyError) {
            let top = try reader.children(of: try reader.root(), expecting: 0x30, "SubjectPublicKeyInfo")
            guard top.count == 2, top[1].tag == 0x03 else { throw ASN1Reader.malformed("SubjectPublicKeyInfo") }
            let algorithm = try reader.children(of: top[0], expecting: 0x30, "AlgorithmIdentifier")
            guard algorithm.count == 2, reader.isOID(algorithm[0], OID.ecPublicKey),
                reader.isOID(algorithm[1], OID.prime256v1)
            else { throw CryptographyError(.invalidKey, "the public key is not an EC P-256 key") }
            let bits = reader.content(top[1])
            guard bits.first == 0 else { throw ASN1Reader.malformed("BIT STRING with unused bits") }
            return bits.dropFirst()
        } catch {
            throw CryptographyError(
                .invalidKey, "the public key is not a P-256 SubjectPublicKeyInfo (\(error.message))")
        }
    }
}
