internal import COpenSSL
import Foundation
import Foundations

/// The kinds of key this project uses.
public enum KeyKind: Sendable, Hashable, CustomStringConvertible {
    /// ECDSA / ECDH on NIST P-256 (prime256v1): Apple Pay EC_v1 merchant keys, Apple's EC leaf.
    case p256
    /// NIST P-384 (secp384r1): Apple's root and intermediate CAs.
    case p384
    /// RSA with a modulus of `bits` bits: RSA_v1 merchant keys, merchant identity keys.
    case rsa(bits: Int)

    public var description: String {
        switch self {
        case .p256: "EC P-256"
        case .p384: "EC P-384"
        case .rsa(let bits): "RSA-\(bits)"
        }
    }

    /// The kind of an OpenSSL key, or nil when it is not one this project supports.
    static func of(_ pkey: OpaquePointer) -> KeyKind? {
        switch EVP_PKEY_get_base_id(pkey) {
        case EVP_PKEY_RSA:
            return .rsa(bits: Int(EVP_PKEY_get_bits(pkey)))
        case EVP_PKEY_EC:
            var buffer = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_group_name(pkey, &buffer, buffer.count, &length) == 1 else { return nil }
            let name = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            switch name {
            case "prime256v1", "P-256", "secp256r1": return .p256
            case "secp384r1", "P-384": return .p384
            default: return nil
            }
        default:
            return nil
        }
    }
}

/// A private key (EC P-256, EC P-384 or RSA), parsed once and held in memory.
///
/// `@unchecked Sendable`: the wrapped `EVP_PKEY` is never mutated after `init`, and OpenSSL documents an
/// `EVP_PKEY` as safe to use from several threads at once once created (each operation makes its own context).
/// The `description` names only the kind of key; the key material is reachable only through
/// `pemRepresentation`, which callers must treat as secret.
public final class PrivateKey: @unchecked Sendable, CustomStringConvertible {
    /// The owned `EVP_PKEY *`.
    let pkey: OpaquePointer
    /// The kind of key.
    public let kind: KeyKind
    /// The matching public key.
    public let publicKey: PublicKey

    /// Takes ownership of an `EVP_PKEY`; frees it and throws when the kind is unsupported.
    init(takingOwnershipOf pkey: OpaquePointer) throws(CryptographyError) {
        let (kind, spki) = try PublicKey.kindAndSPKI(
            adopting: pkey, kindName: "key", publicPart: "the public half of the private key")
        // The public half gets its own EVP_PKEY, parsed from the SPKI, so that it holds no private material.
        let publicHalf = OpenSSLSupport.parseDER(spki) { cursor, length in d2i_PUBKEY(nil, cursor, length) }
        guard let publicHalf else {
            EVP_PKEY_free(pkey)
            throw CryptographyError.openSSL(.invalidKey, "could not read back the public half of the private key")
        }
        self.pkey = pkey
        self.kind = kind
        self.publicKey = PublicKey(owning: publicHalf, kind: kind, spki: spki)
    }

    /// Parses a PEM private key: PKCS#8 ("PRIVATE KEY"), SEC1 ("EC PRIVATE KEY", an "EC PARAMETERS" block before
    /// it is skipped) or PKCS#1 ("RSA PRIVATE KEY"). Encrypted keys are refused.
    /// - Throws: `CryptographyError` with code `invalidKey` when no usable key is found.
    public convenience init(pem: String) throws {
        let parsed = try OpenSSLSupport.readPEM(
            pem, .invalidKey, "no readable private key in the PEM text (is it a key file, and not encrypted?)"
        ) { bio in
            PEM_read_bio_PrivateKey(bio, nil, OpenSSLSupport.refusePassword, nil)
        }
        try self.init(takingOwnershipOf: parsed)
    }

    /// Parses a DER private key: PKCS#8, SEC1 or PKCS#1.
    /// - Throws: `CryptographyError` with code `invalidKey`.
    public convenience init(der: Data) throws {
        let parsed = try OpenSSLSupport.readDER(
            der, .invalidKey, "the bytes are not a DER private key (PKCS#8, SEC1 or PKCS#1)"
        ) { cursor, length in
            d2i_AutoPrivateKey(nil, cursor, length)
        }
        try self.init(takingOwnershipOf: parsed)
    }

    /// Generates a new key of the given kind.
    /// - Throws: `CryptographyError` with code `invalidKey` for an unsupported RSA size, `internalError` otherwise.
    public static func generate(_ kind: KeyKind) throws -> PrivateKey {
        OpenSSLErrorQueue.clear()
        let algorithm: String
        switch kind {
        case .p256, .p384: algorithm = "EC"
        case .rsa(let bits):
            guard (1024...16384).contains(bits) else {
                throw CryptographyError(.invalidKey, "RSA key size \(bits) is out of range (use 2048 or more)")
            }
            algorithm = "RSA"
        }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, algorithm, nil) else {
            throw CryptographyError.openSSL(.internalError, "no \(algorithm) key generator")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1 else {
            throw CryptographyError.openSSL(.internalError, "could not start key generation")
        }
        switch kind {
        case .p256:
            guard EVP_PKEY_CTX_set_group_name(context, "P-256") == 1 else {
                throw CryptographyError.openSSL(.internalError, "could not select P-256")
            }
        case .p384:
            guard EVP_PKEY_CTX_set_group_name(context, "P-384") == 1 else {
                throw CryptographyError.openSSL(.internalError, "could not select P-384")
            }
        case .rsa(let bits):
            guard EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) == 1 else {
                throw CryptographyError.openSSL(.invalidKey, "could not set the RSA key size")
            }
        }
        var generated: OpaquePointer? = nil
        guard EVP_PKEY_generate(context, &generated) == 1, let generated else {
            throw CryptographyError.openSSL(.internalError, "key generation failed")
        }
        return try PrivateKey(takingOwnershipOf: generated)
    }

    deinit { EVP_PKEY_free(pkey) }

    /// The key as PKCS#8 PEM ("PRIVATE KEY"). Secret: write it only to a 0600 file, never to a log.
    public var pemRepresentation: String {
        let bytes = try? OpenSSLSupport.writtenBytes(
            { PEM_write_bio_PrivateKey($0, pkey, nil, nil, 0, nil, nil) == 1 },
            failure: CryptographyError.openSSL(.internalError, "could not encode the private key"))
        return String(decoding: bytes ?? Data(), as: UTF8.self)
    }

    /// The key as PKCS#8 DER. Secret, like `pemRepresentation`.
    public var pkcs8DERRepresentation: Data {
        let bytes = try? OpenSSLSupport.writtenBytes(
            { i2d_PKCS8PrivateKey_bio($0, pkey, nil, nil, 0, nil, nil) == 1 },
            failure: CryptographyError.openSSL(.internalError, "could not encode the private key"))
        return bytes ?? Data()
    }

    /// Names the kind of key and the SHA-256 of its public key; nothing secret.
    public var description: String {
        "PrivateKey(\(kind), public key SHA-256 \(Digest.sha256(publicKey.subjectPublicKeyInfoDER).lowercaseHex.prefix(16))…)"
    }
}

/// A public key (EC P-256, EC P-384 or RSA). Equal when the SubjectPublicKeyInfo DER is equal.
///
/// `@unchecked Sendable`: the wrapped `EVP_PKEY` is read-only after `init`; see `PrivateKey`.
public final class PublicKey: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// The owned `EVP_PKEY *` (one reference).
    let pkey: OpaquePointer
    /// The kind of key.
    public let kind: KeyKind
    /// The DER SubjectPublicKeyInfo: what Apple hashes for `publicKeyHash`.
    public let subjectPublicKeyInfoDER: Data

    /// Adopts one reference to `pkey` whose kind and SPKI the caller has already computed.
    init(owning pkey: OpaquePointer, kind: KeyKind, spki: Data) {
        self.pkey = pkey
        self.kind = kind
        self.subjectPublicKeyInfoDER = spki
    }

    /// Takes ownership of an `EVP_PKEY`; frees it and throws when it is unsupported.
    convenience init(takingOwnershipOf pkey: OpaquePointer) throws(CryptographyError) {
        let (kind, spki) = try Self.kindAndSPKI(adopting: pkey, kindName: "public key", publicPart: "the public key")
        self.init(owning: pkey, kind: kind, spki: spki)
    }

    /// The kind and DER SubjectPublicKeyInfo of an `EVP_PKEY` being adopted; frees it and throws when its kind is
    /// unsupported or its public part cannot be encoded (the messages name `kindName` and `publicPart`).
    static func kindAndSPKI(
        adopting pkey: OpaquePointer, kindName: String, publicPart: String
    ) throws(CryptographyError) -> (KeyKind, Data) {
        guard let kind = KeyKind.of(pkey) else {
            EVP_PKEY_free(pkey)
            throw CryptographyError(.invalidKey, "unsupported \(kindName) type: use EC P-256, EC P-384 or RSA")
        }
        guard let spki = OpenSSLSupport.der({ i2d_PUBKEY(pkey, $0) }) else {
            EVP_PKEY_free(pkey)
            throw CryptographyError.openSSL(.invalidKey, "could not encode \(publicPart)")
        }
        return (kind, spki)
    }

    /// Parses a DER SubjectPublicKeyInfo. For EC keys the point is checked to be on the curve.
    /// - Throws: `CryptographyError` with code `invalidKey`.
    public convenience init(subjectPublicKeyInfoDER der: Data) throws {
        let parsed = try OpenSSLSupport.readDER(
            der, .invalidKey, "the bytes are not a DER SubjectPublicKeyInfo (or the point is not on the curve)"
        ) { cursor, length in
            d2i_PUBKEY(nil, cursor, length)
        }
        try self.init(takingOwnershipOf: parsed)
    }

    /// Parses a PEM public key ("PUBLIC KEY").
    /// - Throws: `CryptographyError` with code `invalidKey`.
    public convenience init(pem: String) throws {
        let parsed = try OpenSSLSupport.readPEM(pem, .invalidKey, "no readable \"PUBLIC KEY\" block in the PEM text") {
            bio in
            PEM_read_bio_PUBKEY(bio, nil, OpenSSLSupport.refusePassword, nil)
        }
        try self.init(takingOwnershipOf: parsed)
    }

    deinit { EVP_PKEY_free(pkey) }

    /// The key as PEM ("PUBLIC KEY").
    public var pemRepresentation: String { OpenSSLSupport.pem(label: "PUBLIC KEY", der: subjectPublicKeyInfoDER) }

    public static func == (lhs: PublicKey, rhs: PublicKey) -> Bool {
        lhs.subjectPublicKeyInfoDER == rhs.subjectPublicKeyInfoDER
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(subjectPublicKeyInfoDER) }

    public var description: String {
        "PublicKey(\(kind), SHA-256 \(Digest.sha256(subjectPublicKeyInfoDER).lowercaseHex.prefix(16))…)"
    }
}
