internal import COpenSSL
import Foundation
import Foundations

extension PrivateKey {
    /// Signs SHA-256 of `message` with this EC key and returns the signature as JOSE/JWS wants it: `r || s`, each
    /// left-padded to the curve's size (64 bytes for P-256, ES256).
    /// - Throws: `CryptographyError` with code `invalidKey` for a non-EC key, `internalError` when OpenSSL fails.
    public func rawECDSASignature(_ message: some DataProtocol) throws -> Data {
        let size: Int
        switch kind {
        case .p256: size = 32
        case .p384: size = 48
        default: throw CryptographyError(.invalidKey, "ECDSA needs an EC P-256 or P-384 key, not \(kind)")
        }
        OpenSSLErrorQueue.clear()
        let digest = Digest.sha256(message)
        guard let context = EVP_PKEY_CTX_new(pkey, nil) else {
            throw CryptographyError.openSSL(.internalError, "could not create a signing context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_sign_init(context) == 1, EVP_PKEY_CTX_set_signature_md(context, EVP_sha256()) == 1 else {
            throw CryptographyError.openSSL(.invalidKey, "the key cannot sign SHA-256 digests")
        }
        var length = 0
        let digestBytes = [UInt8](digest)
        guard EVP_PKEY_sign(context, nil, &length, digestBytes, digestBytes.count) == 1 else {
            throw CryptographyError.openSSL(.internalError, "could not size the signature")
        }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_sign(context, &der, &length, digestBytes, digestBytes.count) == 1 else {
            throw CryptographyError.openSSL(.internalError, "could not sign")
        }
        withExtendedLifetime(self) {}
        return try Self.rawSignature(fromDER: Array(der.prefix(length)), size: size)
    }

    /// `SEQUENCE { INTEGER r, INTEGER s }` → `r || s` with each padded to `size` bytes.
    static func rawSignature(fromDER der: [UInt8], size: Int) throws(CryptographyError) -> Data {
        var index = 0
        func length() throws(CryptographyError) -> Int {
            guard index < der.count else { throw CryptographyError(.malformedInput, "truncated ECDSA signature") }
            let first = Int(der[index])
            index += 1
            if first < 0x80 { return first }
            guard first == 0x81, index < der.count else {
                throw CryptographyError(.malformedInput, "unexpected ECDSA signature length")
            }
            index += 1
            return Int(der[index - 1])
        }
        guard der.first == 0x30 else { throw CryptographyError(.malformedInput, "not a DER ECDSA signature") }
        index = 1
        _ = try length()
        var output = Data()
        for _ in 0..<2 {
            guard index < der.count, der[index] == 0x02 else {
                throw CryptographyError(.malformedInput, "not a DER ECDSA signature")
            }
            index += 1
            let count = try length()
            guard index + count <= der.count else { throw CryptographyError(.malformedInput, "truncated signature") }
            var integer = Array(der[index..<(index + count)])
            index += count
            while integer.count > size, integer.first == 0 { integer.removeFirst() }
            guard integer.count <= size else { throw CryptographyError(.malformedInput, "ECDSA integer too long") }
            output.append(Data(repeating: 0, count: size - integer.count))
            output.append(contentsOf: integer)
        }
        return output
    }
}

extension PublicKey {
    /// Verifies a JOSE `r || s` ECDSA signature over SHA-256 of `message` (ES256 with a P-256 key).
    public func isValidRawECDSASignature(_ signature: Data, for message: some DataProtocol) -> Bool {
        let size = kind == .p256 ? 32 : kind == .p384 ? 48 : 0
        guard size > 0, signature.count == 2 * size else { return false }
        func integer(_ bytes: Data) -> [UInt8] {
            var value = Array(bytes.drop(while: { $0 == 0 }))
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(signature.prefix(size)) + integer(signature.suffix(size))
        let der = [0x30, UInt8(body.count)] + body
        guard let verifier = try? SignatureVerifier(publicKey: self) else { return false }
        return verifier.verify(signature: der, message: message)
    }
}
