internal import COpenSSL
import Foundation

/// A PKCS#10 certificate signing request: a subject and a public key, signed with the matching private key.
///
/// Apple's developer portal takes one for each Payment Processing certificate (EC P-256, or RSA-2048 for RSA_v1)
/// and each Merchant Identity certificate (RSA-2048).
///
/// `@unchecked Sendable`: the wrapped `X509_REQ` is never mutated after `init`.
public final class CertificateSigningRequest: @unchecked Sendable, CustomStringConvertible {
    /// The owned `X509_REQ *`.
    private let request: OpaquePointer
    /// The DER encoding.
    public let derRepresentation: Data
    /// The requested subject.
    public let subject: DistinguishedName
    /// The public key to be certified.
    public let publicKey: PublicKey

    private init(takingOwnershipOf request: OpaquePointer) throws {
        do {
            guard let der = OpenSSLSupport.der({ i2d_X509_REQ(request, $0) }) else {
                throw CryptographyError.openSSL(.malformedInput, "could not encode the signing request")
            }
            guard let key = X509_REQ_get_pubkey(request) else {
                throw CryptographyError.openSSL(.invalidKey, "the signing request's public key cannot be read")
            }
            let publicKey = try PublicKey(takingOwnershipOf: key)
            guard let name = X509_REQ_get_subject_name(request) else {
                throw CryptographyError.openSSL(.malformedInput, "the signing request has no subject")
            }
            self.subject = DistinguishedName(x509Name: name)
            self.publicKey = publicKey
            self.derRepresentation = der
            self.request = request
        } catch {
            X509_REQ_free(request)
            throw error
        }
    }

    /// Creates a request for `subject`, signed with `privateKey` (SHA-256).
    /// - Throws: `CryptographyError` (`malformedInput` for a bad name, `invalidKey` when signing fails).
    public convenience init(subject: DistinguishedName, privateKey: PrivateKey) throws {
        OpenSSLErrorQueue.clear()
        guard let request = X509_REQ_new() else {
            throw CryptographyError.openSSL(.internalError, "could not allocate a signing request")
        }
        do {
            let name = try subject.makeX509Name()
            defer { X509_NAME_free(name) }
            guard X509_REQ_set_version(request, 0) == 1, X509_REQ_set_subject_name(request, name) == 1,
                X509_REQ_set_pubkey(request, privateKey.pkey) == 1
            else {
                throw CryptographyError.openSSL(.internalError, "could not fill in the signing request")
            }
            guard X509_REQ_sign(request, privateKey.pkey, EVP_sha256()) > 0 else {
                throw CryptographyError.openSSL(.invalidKey, "could not sign the signing request")
            }
        } catch {
            X509_REQ_free(request)
            throw error
        }
        try self.init(takingOwnershipOf: request)
    }

    /// Parses a PEM request ("CERTIFICATE REQUEST" or "NEW CERTIFICATE REQUEST").
    /// - Throws: `CryptographyError` with code `malformedInput`.
    public convenience init(pem: String) throws {
        let parsed = try OpenSSLSupport.readPEM(
            pem, .malformedInput, "no readable \"CERTIFICATE REQUEST\" block in the PEM text"
        ) { bio in
            PEM_read_bio_X509_REQ(bio, nil, OpenSSLSupport.refusePassword, nil)
        }
        try self.init(takingOwnershipOf: parsed)
    }

    /// Parses a DER request; every byte must belong to it.
    /// - Throws: `CryptographyError` with code `malformedInput`.
    public convenience init(der: Data) throws {
        let parsed = try OpenSSLSupport.readDER(
            der, .malformedInput, "the bytes are not a DER certificate signing request"
        ) { cursor, length in
            d2i_X509_REQ(nil, cursor, length)
        }
        try self.init(takingOwnershipOf: parsed)
    }

    deinit { X509_REQ_free(request) }

    /// The request as PEM ("CERTIFICATE REQUEST"), the form Apple's portal uploads.
    public var pemRepresentation: String { OpenSSLSupport.pem(label: "CERTIFICATE REQUEST", der: derRepresentation) }

    /// Whether the request's signature verifies with its own public key (proof of possession).
    public var isSignatureValid: Bool {
        OpenSSLErrorQueue.clear()
        defer { OpenSSLErrorQueue.clear() }
        return X509_REQ_verify(request, publicKey.pkey) == 1
    }

    public var description: String { "CertificateSigningRequest(\(subject), \(publicKey.kind))" }
}
