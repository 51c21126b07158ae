import Cryptography
import Foundation

/// Order type identifiers (`order.com.example.shop`): the name of a merchant's Wallet orders and the subject UID of
/// its Order Type ID certificate.
public enum OrderTypeIdentifier {
    /// Checks the form Apple's portal accepts: `order.` and a reverse-DNS name of letters, digits, '.' and '-'.
    /// - Throws: `SandboxError.Code.invalidMerchantIdentifier` naming the identifier.
    public static func validate(_ identifier: String) throws {
        guard isReverseDNSIdentifier(identifier, prefix: "order.") else {
            throw SandboxError(
                .invalidMerchantIdentifier,
                "'\(identifier.prefix(80))' is not an order type identifier: use 'order.' and a reverse-DNS name, e.g. order.com.example.shop"
            )
        }
    }

    /// The sandbox's order type identifier for a merchant: `merchant.com.example.shop` → `order.com.example.shop`.
    public static func derived(fromMerchantIdentifier merchantIdentifier: String) -> String {
        "order." + merchantIdentifier.dropFirst(merchantIdentifier.hasPrefix("merchant.") ? "merchant.".count : 0)
    }
}

extension SandboxAuthority {
    /// Makes the Wallet intermediate: EC P-256, CA, OID 1.2.840.113635.100.6.2.1 (like Apple Worldwide Developer
    /// Relations Certification Authority - G4, the issuer of Pass Type ID and Order Type ID certificates), signed by
    /// the sandbox root. Valid 5 years back to 15 ahead of `now`.
    /// - Throws: `CryptographyError` when OpenSSL fails.
    public static func makeWalletCA(root: Credential, now: Date = Date()) throws -> Credential {
        let key = try PrivateKey.generate(.p256)
        var builder = CertificateBuilder(
            subject: DistinguishedName(
                commonName: "Apple Pay Sandbox Worldwide Developer Relations CA - G4",
                organizationalUnit: certificationAuthorityUnit, organization: organization, country: "US"),
            publicKey: key.publicKey, notBefore: now - 5 * year, notAfter: now + 15 * year)
        builder.basicConstraints = .certificateAuthority(pathLength: 0)
        builder.keyUsage = [.keyCertSign, .cRLSign]
        builder.extensions = [.marker(oid: AppleOID.walletIntermediateMarker)]
        return try Credential(
            certificate: builder.signed(by: root.certificate, key: root.privateKey, digest: .sha384), privateKey: key)
    }

    /// Issues an Order Type ID certificate from a CSR, as Apple's portal does for Wallet orders.
    ///
    /// Subject `UID=<order type id>, CN=Order Type ID: <id>, OU=<team>, O=<organization>, C=<country>`; key usage
    /// digitalSignature and no extended key usage (so `openssl cms -verify` accepts it for signing); issued by
    /// `walletCA`; valid 13 months from `now`.
    /// - Throws: `SandboxError.Code.invalidRequest` when the CSR's signature does not verify, its key is not
    ///   RSA-2048 or larger or EC P-256, or the sandbox has no Wallet CA; `.invalidMerchantIdentifier` for a bad id.
    public func issueOrderTypeCertificate(
        for request: CertificateSigningRequest, orderTypeIdentifier: String, merchant: Merchant,
        walletCA: Credential, now: Date = Date()
    ) throws -> Certificate {
        try OrderTypeIdentifier.validate(orderTypeIdentifier)
        guard request.isSignatureValid else {
            throw SandboxError(
                .invalidRequest, "the certificate signing request's signature does not verify with its own key")
        }
        switch request.publicKey.kind {
        case .p256, .rsa(bits: 2048...): break
        default:
            throw SandboxError(
                .invalidRequest,
                "an Order Type ID certificate needs an RSA-2048 or EC P-256 key, not \(request.publicKey.kind)")
        }
        var builder = CertificateBuilder(
            subject: DistinguishedName(
                userID: orderTypeIdentifier, commonName: String("Order Type ID: \(orderTypeIdentifier)".prefix(64)),
                organizationalUnit: merchant.teamIdentifier, organization: merchant.organization,
                country: merchant.country),
            publicKey: request.publicKey, notBefore: now - Self.day, notAfter: now + 395 * Self.day)
        builder.basicConstraints = .endEntity
        builder.keyUsage = [.digitalSignature]
        builder.extensions = [Self.policyExtension]
        return try builder.signed(by: walletCA.certificate, key: walletCA.privateKey)
    }
}

extension Certificate {
    /// Whether this looks like an Order Type ID certificate: a subject UID starting with `order.` and a common name
    /// starting with `Order Type ID`.
    public var isOrderTypeCertificate: Bool {
        (subjectUID?.hasPrefix("order.") ?? false)
            && subjectName.value(of: .commonName)?.hasPrefix("Order Type ID") == true
    }
}
