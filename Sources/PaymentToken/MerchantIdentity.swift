import Cryptography
import Foundation
import Foundations

/// What a merchant needs to open its tokens: the Payment Processing private key and the merchant identifier hash,
/// from the certificate Apple issued or from the merchant identifier string. Parsed and prepared once.
public struct MerchantIdentity: Sendable, CustomStringConvertible {
    /// The Payment Processing private key (EC P-256 for EC_v1, RSA for RSA_v1).
    public let privateKey: PrivateKey
    /// The Payment Processing certificate, when known.
    public let certificate: Certificate?
    /// SHA-256 of the merchant identifier: the KDF's party V info for EC_v1.
    public let merchantIdentifierHash: Data
    /// SHA-256 of the SubjectPublicKeyInfo: what tokens carry as `publicKeyHash`.
    public let publicKeyHash: Data
    /// Prepared ECDH for EC keys.
    let agreement: P256KeyAgreement?
    /// RSA-OAEP unwrapping prepared for an RSA key (RSA_v1), nil for an EC key.
    let unwrapper: RSAOAEPDecryptor?

    /// An identity from the certificate Apple issued and its private key. The merchant identifier hash is read from
    /// the certificate's extension 1.2.840.113635.100.6.32.
    /// - Throws: `PaymentTokenError.merchantKeyMismatch` when the key is not the certificate's, or the certificate
    ///   lacks the merchant identifier extension or uses an unsupported key.
    public init(certificate: Certificate, privateKey: PrivateKey) throws(PaymentTokenError) {
        guard certificate.publicKey == privateKey.publicKey else {
            throw PaymentTokenError(
                .merchantKeyMismatch,
                "the private key does not belong to the Payment Processing certificate (\(certificate.subject))")
        }
        guard let hash = MerchantIdentity.merchantIdentifierHash(from: certificate) else {
            throw PaymentTokenError(
                .merchantKeyMismatch,
                "the certificate has no merchant identifier extension (1.2.840.113635.100.6.32): is it a Payment Processing certificate?"
            )
        }
        try self.init(privateKey: privateKey, certificate: certificate, merchantIdentifierHash: hash)
    }

    /// An identity from a bare private key and the merchant identifier (e.g. `merchant.com.example`), for when the
    /// certificate is not at hand.
    /// - Throws: `PaymentTokenError.merchantKeyMismatch` for an unsupported key.
    public init(privateKey: PrivateKey, merchantIdentifier: String) throws(PaymentTokenError) {
        try self.init(
            privateKey: privateKey, certificate: nil,
            merchantIdentifierHash: Digest.sha256(Data(merchantIdentifier.utf8)))
    }

    /// Reads PEM texts: the certificate and the key.
    /// - Throws: `PaymentTokenError.merchantKeyMismatch` naming what could not be read.
    public init(certificatePEM: String, privateKeyPEM: String) throws(PaymentTokenError) {
        let certificate: Certificate
        let key: PrivateKey
        do {
            certificate = try Certificate(pem: certificatePEM)
        } catch {
            throw PaymentTokenError(.merchantKeyMismatch, "the merchant certificate cannot be read: \(error)")
        }
        do {
            key = try PrivateKey(pem: privateKeyPEM)
        } catch {
            throw PaymentTokenError(.merchantKeyMismatch, "the merchant private key cannot be read: \(error)")
        }
        try self.init(certificate: certificate, privateKey: key)
    }

    private init(privateKey: PrivateKey, certificate: Certificate?, merchantIdentifierHash: Data)
        throws(PaymentTokenError)
    {
        switch privateKey.kind {
        case .p256:
            do {
                agreement = try P256KeyAgreement(privateKey: privateKey)
            } catch {
                throw PaymentTokenError(.merchantKeyMismatch, "the EC merchant key cannot be used: \(error)")
            }
            unwrapper = nil
        case .rsa:
            agreement = nil
            do {
                unwrapper = try RSAOAEPDecryptor(privateKey: privateKey)
            } catch {
                throw PaymentTokenError(.merchantKeyMismatch, "the RSA merchant key cannot be used: \(error)")
            }
        case .p384:
            throw PaymentTokenError(
                .merchantKeyMismatch, "Apple Pay merchant keys are EC P-256 (EC_v1) or RSA (RSA_v1), not P-384")
        }
        self.privateKey = privateKey
        self.certificate = certificate
        self.merchantIdentifierHash = merchantIdentifierHash
        self.publicKeyHash = Digest.sha256(privateKey.publicKey.subjectPublicKeyInfoDER)
    }

    /// The merchant identifier hash in a Payment Processing certificate: extension .32 holds a UTF8String of 64 hex
    /// characters (some generations hold the 32 raw bytes).
    static func merchantIdentifierHash(from certificate: Certificate) -> Data? {
        guard let value = certificate.extensionValue(oid: ApplePayOID.merchantIdentifierHash) else { return nil }
        let bytes = Array(value)
        if bytes.count == 66, bytes[0] == 0x0c || bytes[0] == 0x04, bytes[1] == 64,
            let decoded = HexCoding.decode(String(decoding: bytes[2...], as: UTF8.self))
        {
            return Data(decoded)
        }
        if bytes.count == 64, let decoded = HexCoding.decode(String(decoding: bytes, as: UTF8.self)) {
            return Data(decoded)
        }
        if bytes.count == 34, bytes[0] == 0x04, bytes[1] == 32 { return Data(bytes[2...]) }
        return nil
    }

    /// Names the key kind and the public key hash; nothing secret.
    public var description: String {
        "MerchantIdentity(\(privateKey.kind), publicKeyHash \(publicKeyHash.base64EncodedString()))"
    }
}
