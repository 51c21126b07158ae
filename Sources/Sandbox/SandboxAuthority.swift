import Cryptography
import Foundation

/// A certificate authority shaped like Apple's, for tests: it signs payment tokens and issues merchant certificates.
///
/// The chain mirrors the real one seen in Apple Pay tokens and merchant certificates:
/// - root: EC P-384, self-signed with ECDSA-SHA384, CA (like Apple Root CA - G3);
/// - `intermediate`: EC P-256, CA, OID 1.2.840.113635.100.6.2.14 (like Apple Application Integration CA - G3),
///   issuer of the token-signing leaves;
/// - `merchantCA`: EC P-256, CA, OID 1.2.840.113635.100.6.2.14 (like Apple Worldwide Developer Relations CA - G2),
///   issuer of merchant certificates;
/// - `ecLeaf` (P-256) and `rsaLeaf` (RSA-2048): digitalSignature, OID 1.2.840.113635.100.6.29
///   (like `ecc-smp-broker-sign_UC4-SANDBOX` and `rsa-smp-broker-sign_UC4-SANDBOX`), five years of validity.
///
/// Names say "Sandbox" so that nobody mistakes them for Apple's.
public struct SandboxAuthority: Sendable {
    /// A certificate with its private key.
    public struct Credential: Sendable {
        public let certificate: Certificate
        public let privateKey: PrivateKey

        /// Pairs a certificate and its key.
        /// - Throws: `SandboxError.Code.invalidFile` when the key does not match the certificate.
        public init(certificate: Certificate, privateKey: PrivateKey) throws {
            guard certificate.publicKey == privateKey.publicKey else {
                throw SandboxError(
                    .invalidFile,
                    "the private key does not match the certificate \(certificate.subject)")
            }
            self.certificate = certificate
            self.privateKey = privateKey
        }
    }

    public let root: Credential
    public let intermediate: Credential
    public let merchantCA: Credential
    public let ecLeaf: Credential
    public let rsaLeaf: Credential

    /// Assembles an authority from credentials already made (loaded from a folder).
    public init(
        root: Credential, intermediate: Credential, merchantCA: Credential, ecLeaf: Credential, rsaLeaf: Credential
    ) {
        self.root = root
        self.intermediate = intermediate
        self.merchantCA = merchantCA
        self.ecLeaf = ecLeaf
        self.rsaLeaf = rsaLeaf
    }

    static let organization = "Apple Pay Sandbox (not Apple)"
    static let certificationAuthorityUnit = "Sandbox Certification Authority"
    static let day: TimeInterval = 86_400
    static let year: TimeInterval = 365 * day

    /// Apple's certificatePolicies value: policy 1.2.840.113635.100.5.1 with no qualifiers.
    static let policyExtension = CertificateExtension(
        oid: "2.5.29.32",
        value: Data([0x30, 0x0D, 0x30, 0x0B, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x63, 0x64, 0x05, 0x01]))

    /// Makes a new authority: five fresh keys (one RSA-2048) and their certificates.
    ///
    /// Validity, counted from `now`: root 5 years back to 25 ahead; intermediates 5 back to 15 ahead; leaves 2 back
    /// to 3 ahead, so that tokens with a signing time up to two years in the past still verify.
    /// - Throws: `CryptographyError` when OpenSSL fails.
    public static func generate(now: Date = Date()) throws -> SandboxAuthority {
        let rootKey = try PrivateKey.generate(.p384)
        var rootBuilder = CertificateBuilder(
            subject: caName("Apple Pay Sandbox Root CA - G3"), publicKey: rootKey.publicKey,
            notBefore: now - 5 * year, notAfter: now + 25 * year)
        rootBuilder.basicConstraints = .certificateAuthority(pathLength: nil)
        rootBuilder.keyUsage = [.keyCertSign, .cRLSign]
        rootBuilder.includesAuthorityKeyIdentifier = false
        let root = try Credential(
            certificate: rootBuilder.selfSigned(with: rootKey, digest: .sha384), privateKey: rootKey)

        func intermediate(_ name: String) throws -> Credential {
            let key = try PrivateKey.generate(.p256)
            var builder = CertificateBuilder(
                subject: caName(name), publicKey: key.publicKey, notBefore: now - 5 * year, notAfter: now + 15 * year)
            builder.basicConstraints = .certificateAuthority(pathLength: nil)
            builder.keyUsage = [.keyCertSign, .cRLSign]
            builder.extensions = [.marker(oid: AppleOID.intermediateMarker)]
            return try Credential(
                certificate: builder.signed(by: root.certificate, key: root.privateKey, digest: .sha256),
                privateKey: key)
        }
        let tokenCA = try intermediate("Apple Pay Sandbox Application Integration CA - G3")
        let merchantCA = try intermediate("Apple Pay Sandbox Worldwide Developer Relations CA - G2")

        func leaf(_ kind: KeyKind, _ name: String) throws -> Credential {
            let key = try PrivateKey.generate(kind)
            var builder = CertificateBuilder(
                subject: DistinguishedName(
                    commonName: name, organizationalUnit: "iOS Systems", organization: organization, country: "US"),
                publicKey: key.publicKey, notBefore: now - 2 * year, notAfter: now + 3 * year)
            builder.basicConstraints = .endEntity
            builder.keyUsage = [.digitalSignature]
            builder.extensions = [policyExtension, .marker(oid: AppleOID.leafMarker)]
            return try Credential(
                certificate: builder.signed(by: tokenCA.certificate, key: tokenCA.privateKey), privateKey: key)
        }
        return SandboxAuthority(
            root: root, intermediate: tokenCA, merchantCA: merchantCA,
            ecLeaf: try leaf(.p256, "ecc-smp-broker-sign_UC4-SANDBOX"),
            rsaLeaf: try leaf(.rsa(bits: 2048), "rsa-smp-broker-sign_UC4-SANDBOX"))
    }

    static func caName(_ commonName: String) -> DistinguishedName {
        DistinguishedName(
            commonName: commonName, organizationalUnit: certificationAuthorityUnit, organization: organization,
            country: "US")
    }

    /// The kinds of merchant certificate Apple issues.
    public enum MerchantCertificateKind: String, Sendable, Hashable, Codable, CaseIterable {
        /// Decrypts payment tokens: EC P-256 (EC_v1) or RSA-2048 (RSA_v1); key usage keyEncipherment, keyAgreement.
        case paymentProcessing = "payment-processing"
        /// The TLS client certificate for merchant validation: RSA-2048, extended key usage clientAuth.
        case merchantIdentity = "merchant-identity"
        /// Signs Wallet order packages: RSA-2048, issued by the Wallet (WWDR) intermediate; see
        /// ``issueOrderTypeCertificate(for:orderTypeIdentifier:merchant:walletCA:now:)``.
        case orderTypeID = "order-type-id"
    }

    /// Who the merchant certificates are issued to (the developer portal's team).
    public struct Merchant: Sendable, Hashable {
        public var identifier: String
        public var teamIdentifier: String
        public var organization: String
        public var country: String

        public init(
            identifier: String, teamIdentifier: String = "SANDBOX001", organization: String = "Sandbox Merchant",
            country: String = "US"
        ) {
            self.identifier = identifier
            self.teamIdentifier = teamIdentifier
            self.organization = organization
            self.country = country
        }
    }

    /// Issues a merchant certificate from a CSR, as Apple's developer portal does.
    ///
    /// The subject is Apple's (`UID=<merchant id>, CN=Apple Pay Payment Processing:<id>` or `CN=Merchant ID: <id>`,
    /// `OU=<team>, O=<organization>, C=<country>`), whatever the CSR asked for; the key is the CSR's. Both kinds
    /// carry the merchant identifier hash (OID 1.2.840.113635.100.6.32). Valid 25 months from `now`.
    /// - Throws: `SandboxError.Code.invalidRequest` when the CSR's signature does not verify or its key is of the wrong
    ///   kind (payment processing: EC P-256 or RSA-2048 and up; merchant identity: RSA-2048 and up).
    public func issueMerchantCertificate(
        _ kind: MerchantCertificateKind, for request: CertificateSigningRequest, merchant: Merchant, now: Date = Date()
    ) throws -> Certificate {
        try MerchantIdentifier.validate(merchant.identifier)
        guard request.isSignatureValid else {
            throw SandboxError(
                .invalidRequest,
                "the certificate signing request's signature does not verify with its own key")
        }
        let keyKind = request.publicKey.kind
        switch (kind, keyKind) {
        case (.paymentProcessing, .p256), (.paymentProcessing, .rsa(bits: 2048...)),
            (.merchantIdentity, .rsa(bits: 2048...)):
            break
        case (.orderTypeID, _):
            throw SandboxError(
                .invalidRequest, "Order Type ID certificates are issued by issueOrderTypeCertificate, not here")
        default:
            throw SandboxError(
                .invalidRequest,
                "a \(kind.rawValue) certificate needs \(kind == .paymentProcessing ? "an EC P-256 or RSA-2048" : "an RSA-2048") key, not \(keyKind)"
            )
        }
        // X.520 caps a common name at 64 characters; the subject UID always carries the whole identifier.
        let commonName = String(
            (kind == .paymentProcessing
                ? "Apple Pay Payment Processing:\(merchant.identifier)" : "Merchant ID: \(merchant.identifier)")
                .prefix(64))
        var builder = CertificateBuilder(
            subject: DistinguishedName(
                userID: merchant.identifier, commonName: commonName, organizationalUnit: merchant.teamIdentifier,
                organization: merchant.organization, country: merchant.country),
            publicKey: request.publicKey, notBefore: now - Self.day, notAfter: now + 760 * Self.day)
        builder.basicConstraints = .endEntity
        switch kind {
        case .paymentProcessing:
            builder.keyUsage = [.keyEncipherment, .keyAgreement]
        case .merchantIdentity, .orderTypeID:
            builder.keyUsage = [.digitalSignature, .keyEncipherment]
            builder.extendedKeyUsage = [.clientAuth]
        }
        builder.extensions = [
            Self.policyExtension,
            try CertificateExtension.utf8String(
                oid: AppleOID.merchantIdentifierHash, MerchantIdentifier.hexHash(merchant.identifier)),
        ]
        return try builder.signed(by: merchantCA.certificate, key: merchantCA.privateKey)
    }
}
