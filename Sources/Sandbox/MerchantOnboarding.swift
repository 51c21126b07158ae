import Cryptography
import Foundation

/// The merchant's side of Apple's set-up steps: keys and CSRs for the developer portal, and reading the `.cer`
/// files it returns.
public enum MerchantOnboarding {
    /// A new private key and CSR for the developer portal.
    public struct KeyAndRequest: Sendable {
        /// Secret: write it only to a 0600 file.
        public let privateKey: PrivateKey
        public let request: CertificateSigningRequest
    }

    /// The key Apple's portal expects: EC P-256 for Payment Processing (RSA-2048 when `rsa`, for RSA_v1 / China),
    /// RSA-2048 always for Merchant Identity.
    public static func keyKind(for kind: SandboxAuthority.MerchantCertificateKind, rsa: Bool) -> KeyKind {
        kind == .paymentProcessing && !rsa ? .p256 : .rsa(bits: 2048)
    }

    /// Makes a key of the right kind and a CSR for it.
    /// - Throws: `SandboxError.Code.invalidMerchantIdentifier` for a bad identifier; `CryptographyError`.
    public static func makeKeyAndRequest(
        _ kind: SandboxAuthority.MerchantCertificateKind, merchantIdentifier: String?, rsa: Bool = false
    ) throws -> KeyAndRequest {
        if let merchantIdentifier {
            if kind == .orderTypeID {
                try OrderTypeIdentifier.validate(merchantIdentifier)
            } else {
                try MerchantIdentifier.validate(merchantIdentifier)
            }
        }
        let key = try PrivateKey.generate(keyKind(for: kind, rsa: rsa))
        return KeyAndRequest(
            privateKey: key, request: try signingRequest(kind, key: key, merchantIdentifier: merchantIdentifier))
    }

    /// A CSR for an existing key. The subject is what Keychain Access puts in one (a common name and a country);
    /// Apple replaces it with its own.
    public static func signingRequest(
        _ kind: SandboxAuthority.MerchantCertificateKind, key: PrivateKey, merchantIdentifier: String?
    ) throws -> CertificateSigningRequest {
        let label =
            switch kind {
            case .paymentProcessing: "Apple Pay Payment Processing"
            case .merchantIdentity: "Apple Pay Merchant Identity"
            case .orderTypeID: "Wallet Order Type ID"
            }
        let commonName = merchantIdentifier.map { "\(label) \($0)" } ?? label
        return try CertificateSigningRequest(
            subject: DistinguishedName(commonName: String(commonName.prefix(64)), country: "US"), privateKey: key)
    }

    /// Reads a certificate file as Apple's portal delivers it (DER `.cer`) or as PEM.
    /// - Throws: `SandboxError.Code.notACertificate` when the bytes are neither.
    public static func readCertificate(_ bytes: Data) throws -> Certificate {
        let pemMarker = Data("-----BEGIN".utf8)
        do {
            if bytes.range(of: pemMarker) != nil {
                return try Certificate(pem: String(decoding: bytes, as: UTF8.self))
            }
            return try Certificate(der: bytes)
        } catch {
            throw SandboxError(
                .notACertificate,
                "the file is not an X.509 certificate in DER (.cer) or PEM form")
        }
    }

    /// What a merchant certificate says, for `applepay merchant inspect`.
    public struct Inspection: Sendable, Codable, Hashable {
        /// `payment-processing`, `merchant-identity`, or `unknown`.
        public var kind: String
        public var merchantIdentifier: String?
        /// The order type identifier of an Order Type ID certificate (its subject UID).
        public var orderTypeIdentifier: String?
        /// Lowercase hex SHA-256 of the merchant identifier (from OID …6.32, else computed from the UID).
        public var merchantIdentifierHash: String?
        /// Whether OID …6.32 agrees with SHA-256 of the subject UID (nil when either is missing).
        public var merchantIdentifierHashMatchesUID: Bool?
        public var subject: String
        public var issuer: String
        public var serialNumber: String
        public var keyType: String
        /// Base64 SHA-256 of the SubjectPublicKeyInfo: the `publicKeyHash` of tokens for this certificate.
        public var publicKeyHash: String
        public var notBefore: Date
        public var notAfter: Date
        /// Whole days until `notAfter` (negative once expired).
        public var daysLeft: Int
        public var isExpired: Bool
        /// Whether the given private key matches; nil when no key was given.
        public var keyMatches: Bool?
    }

    /// Describes a merchant certificate (and whether `key` belongs to it) as of `now`.
    public static func inspect(_ certificate: Certificate, key: PrivateKey? = nil, now: Date = Date()) -> Inspection {
        let uid = certificate.subjectUID
        let extensionHash = MerchantIdentifier.hash(in: certificate)
        let kind: String
        if certificate.isOrderTypeCertificate {
            kind = SandboxAuthority.MerchantCertificateKind.orderTypeID.rawValue
        } else if certificate.hasExtendedKeyUsage(.clientAuth) {
            kind = SandboxAuthority.MerchantCertificateKind.merchantIdentity.rawValue
        } else if extensionHash != nil || certificate.keyUsage?.contains(.keyAgreement) == true
            || certificate.keyUsage?.contains(.keyEncipherment) == true
        {
            kind = SandboxAuthority.MerchantCertificateKind.paymentProcessing.rawValue
        } else {
            kind = "unknown"
        }
        let hash = extensionHash ?? uid.map { MerchantIdentifier.hash($0) }
        let isOrderType = certificate.isOrderTypeCertificate
        let seconds = certificate.notAfter.timeIntervalSince(now)
        return Inspection(
            kind: kind, merchantIdentifier: isOrderType ? nil : uid,
            orderTypeIdentifier: isOrderType ? uid : nil,
            merchantIdentifierHash: isOrderType ? nil : hash.map { hex($0) },
            merchantIdentifierHashMatchesUID: extensionHash.flatMap { value in
                uid.map { MerchantIdentifier.hash($0) == value }
            },
            subject: certificate.subject, issuer: certificate.issuer, serialNumber: certificate.serialNumber,
            keyType: certificate.publicKey.kind.description,
            publicKeyHash: Digest.sha256(certificate.publicKey.subjectPublicKeyInfoDER).base64EncodedString(),
            notBefore: certificate.notBefore, notAfter: certificate.notAfter,
            daysLeft: Int((seconds / 86_400).rounded(.down)), isExpired: seconds < 0,
            keyMatches: key.map { $0.publicKey == certificate.publicKey })
    }
}
