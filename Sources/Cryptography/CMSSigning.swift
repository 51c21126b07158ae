internal import COpenSSL
import Foundation
import Foundations

/// Makes detached CMS SignedData signatures the way Apple signs payment tokens: SHA-256, a signing-time attribute
/// chosen by the caller, the signer's certificate and extra certificates (the intermediate) included, DER output.
///
/// ECDSA (P-256, P-384) signers produce ecdsa-with-SHA256 signatures, RSA signers RSA PKCS#1 v1.5 with SHA-256.
/// The signer is built once and reused; it is `Sendable` because its certificates and key are.
public struct CMSSigner: Sendable {
    /// The certificate whose issuer and serial name the signer, included in the signature.
    public let certificate: Certificate
    /// The private key matching `certificate`.
    public let privateKey: PrivateKey
    /// More certificates to include after the signer's (for example its intermediate CA).
    public let additionalCertificates: [Certificate]

    /// A signer for `certificate` with `privateKey`.
    /// - Throws: `CryptographyError` with code `invalidKey` when the key does not match the certificate.
    public init(certificate: Certificate, privateKey: PrivateKey, additionalCertificates: [Certificate] = []) throws {
        guard certificate.publicKey == privateKey.publicKey else {
            throw CryptographyError(.invalidKey, "the private key does not match the signer certificate")
        }
        self.certificate = certificate
        self.privateKey = privateKey
        self.additionalCertificates = additionalCertificates
    }

    /// Signs `content` (binary, not included in the output) and returns the DER `ContentInfo`.
    /// - Parameters:
    ///   - content: the bytes the signature covers; a verifier supplies them again.
    ///   - signingTime: the value of the signed `signingTime` attribute (whole seconds).
    /// - Throws: `CryptographyError` with code `malformedInput` for a signing time outside the years 0 to 9999,
    ///   `internalError` when OpenSSL fails.
    public func signDetached(_ content: Data, signingTime: Date) throws -> Data {
        OpenSSLErrorQueue.clear()
        let flags = UInt32(CMS_DETACHED | CMS_BINARY | CMS_PARTIAL | CMS_NOSMIMECAP)
        guard let cms = CMS_sign(nil, nil, nil, nil, flags) else {
            throw CryptographyError.openSSL(.internalError, "could not start a CMS signature")
        }
        defer { CMS_ContentInfo_free(cms) }
        guard let signerInfo = CMS_add1_signer(cms, certificate.x509, privateKey.pkey, EVP_sha256(), flags) else {
            throw CryptographyError.openSSL(.invalidKey, "could not add the signer")
        }
        guard let seconds = signingTime.certificateTime else {
            throw CryptographyError(.malformedInput, "the signing time must lie between the years 0 and 9999")
        }
        guard let time = ASN1_TIME_set(nil, seconds) else {
            throw CryptographyError.openSSL(.malformedInput, "the signing time cannot be encoded")
        }
        defer { ASN1_TIME_free(time) }
        // Added before CMS_final, so OpenSSL keeps it instead of stamping the current time.
        guard CMS_signed_add1_attr_by_NID(signerInfo, NID_pkcs9_signingTime, ASN1_STRING_type(time), time, -1) == 1
        else {
            throw CryptographyError.openSSL(.internalError, "could not add the signing time")
        }
        for extra in additionalCertificates {
            guard CMS_add1_cert(cms, extra.x509) == 1 else {
                throw CryptographyError.openSSL(.internalError, "could not add a certificate to the signature")
            }
        }
        let finished = try OpenSSLSupport.withReadBIO(content) { bio in CMS_final(cms, bio, nil, flags) }
        guard finished == 1 else { throw CryptographyError.openSSL(.internalError, "could not sign the content") }
        guard let der = OpenSSLSupport.der({ i2d_CMS_ContentInfo(cms, $0) }) else {
            throw CryptographyError.openSSL(.internalError, "could not encode the signature")
        }
        withExtendedLifetime(self) {}
        return der
    }
}
