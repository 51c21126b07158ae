internal import COpenSSL
import Foundation
import Foundations

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An X.509 certificate, parsed once and held in memory.
///
/// `@unchecked Sendable`: the wrapped `X509` is never mutated after `init` (its lazily cached extension data is
/// computed under OpenSSL's own lock, and `init` forces it), so reading it from several threads is safe.
public final class Certificate: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// The owned `X509 *`.
    let x509: OpaquePointer
    /// The certificate's DER encoding.
    public let derRepresentation: Data
    /// The subject's public key.
    public let publicKey: PublicKey
    /// The subject as one line, e.g. `C=US, O=Apple Inc., CN=Apple Root CA - G3`.
    public let subject: String
    /// The issuer as one line.
    public let issuer: String
    /// Start of the validity period.
    public let notBefore: Date
    /// End of the validity period.
    public let notAfter: Date
    /// The serial number in uppercase hexadecimal, no separators.
    public let serialNumber: String
    /// The issuer Name's DER and the serial number's INTEGER content bytes, as a CMS signer identifier names them.
    let issuerAndSerial: (issuer: [UInt8], serial: [UInt8])

    /// Takes ownership of an `X509`; frees it and throws when a part of it cannot be read.
    init(takingOwnershipOf x509: OpaquePointer) throws(CryptographyError) {
        do throws(CryptographyError) {
            guard let der = OpenSSLSupport.der({ i2d_X509(x509, $0) }) else {
                throw CryptographyError.openSSL(.invalidCertificate, "could not encode the certificate")
            }
            guard let key = X509_get_pubkey(x509) else {
                throw CryptographyError.openSSL(.invalidCertificate, "the certificate's public key cannot be read")
            }
            let publicKey = try PublicKey(takingOwnershipOf: key)
            guard let notBefore = Certificate.date(X509_get0_notBefore(x509)),
                let notAfter = Certificate.date(X509_get0_notAfter(x509))
            else {
                throw CryptographyError.openSSL(.invalidCertificate, "the certificate's validity dates cannot be read")
            }
            // Forces OpenSSL's lazy extension cache now, while only this thread sees the certificate.
            _ = X509_get_extension_flags(x509)
            self.derRepresentation = der
            self.publicKey = publicKey
            self.subject = Certificate.oneLine(X509_get_subject_name(x509))
            self.issuer = Certificate.oneLine(X509_get_issuer_name(x509))
            self.notBefore = notBefore
            self.notAfter = notAfter
            self.serialNumber = Certificate.serialHex(x509)
            self.issuerAndSerial = Certificate.issuerAndSerial(der: Array(der))
            self.x509 = x509
        } catch {
            X509_free(x509)
            throw error
        }
    }

    /// Parses one PEM certificate (the first "CERTIFICATE" block).
    /// - Throws: `CryptographyError` with code `invalidCertificate`.
    public convenience init(pem: String) throws {
        let parsed = try OpenSSLSupport.readPEM(
            pem, .invalidCertificate, "no readable \"CERTIFICATE\" block in the PEM text"
        ) { bio in
            PEM_read_bio_X509(bio, nil, OpenSSLSupport.refusePassword, nil)
        }
        try self.init(takingOwnershipOf: parsed)
    }

    /// Parses a DER certificate; every byte must belong to it.
    /// - Throws: `CryptographyError` with code `invalidCertificate`.
    public convenience init(der: Data) throws {
        let parsed = try OpenSSLSupport.readDER(der, .invalidCertificate, "the bytes are not a DER X.509 certificate") {
            cursor, length in
            d2i_X509(nil, cursor, length)
        }
        try self.init(takingOwnershipOf: parsed)
    }

    /// Every "CERTIFICATE" block in a PEM text, in order.
    /// - Throws: `CryptographyError` with code `invalidCertificate` when there is none or one is unreadable.
    public static func chain(fromPEM pem: String) throws -> [Certificate] {
        OpenSSLErrorQueue.clear()
        let parsed: [OpaquePointer] = try OpenSSLSupport.withReadBIO(Array(pem.utf8)) { bio in
            var list: [OpaquePointer] = []
            while let next = PEM_read_bio_X509(bio, nil, OpenSSLSupport.refusePassword, nil) { list.append(next) }
            return list
        }
        // Reading stops with "no start line" at the end of the text: that is not an error.
        let queue = OpenSSLErrorQueue.drain()
        var certificates: [Certificate] = []
        var failure: (any Error)? = nil
        for pointer in parsed {
            if failure != nil {
                X509_free(pointer)
                continue
            }
            do { certificates.append(try Certificate(takingOwnershipOf: pointer)) } catch { failure = error }
        }
        if let failure { throw failure }
        guard !certificates.isEmpty else {
            throw CryptographyError(
                .invalidCertificate,
                "no readable \"CERTIFICATE\" block in the PEM text" + (queue.isEmpty ? "" : " (OpenSSL: \(queue))"))
        }
        return certificates
    }

    deinit { X509_free(x509) }

    /// The certificate as PEM ("CERTIFICATE").
    public var pemRepresentation: String { OpenSSLSupport.pem(label: "CERTIFICATE", der: derRepresentation) }

    /// SHA-256 of the DER encoding.
    public var sha256Fingerprint: Data { Digest.sha256(derRepresentation) }

    /// The subject's UID attribute (0.9.2342.19200300.100.1.1): for Apple merchant certificates, the merchant
    /// identifier.
    public var subjectUID: String? {
        guard let name = X509_get_subject_name(x509) else { return nil }
        let index = X509_NAME_get_index_by_NID(name, NID_userId, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry)
        else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>? = nil
        let length = ASN1_STRING_to_UTF8(&utf8, data)
        guard length >= 0, let utf8 else { return nil }
        defer { COpenSSL_free(utf8) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }

    /// The contents of the extension's OCTET STRING (`extnValue`), or nil when absent or the OID is malformed.
    public func extensionValue(oid: String) -> Data? {
        guard let object = OBJ_txt2obj(oid, 1) else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { ASN1_OBJECT_free(object) }
        let index = X509_get_ext_by_OBJ(x509, object, -1)
        guard index >= 0, let ext = X509_get_ext(x509, index), let value = X509_EXTENSION_get_data(ext) else {
            return nil
        }
        let length = Int(ASN1_STRING_length(value))
        guard length > 0, let bytes = ASN1_STRING_get0_data(value) else { return Data() }
        return Data(bytes: bytes, count: length)
    }

    /// Whether the certificate carries an extension with this OID (dotted decimal).
    public func hasExtension(oid: String) -> Bool { extensionValue(oid: oid) != nil }

    /// Whether the certificate is within its validity period at `date` (inclusive at both ends).
    public func isValid(at date: Date) -> Bool { notBefore <= date && date <= notAfter }

    public static func == (lhs: Certificate, rhs: Certificate) -> Bool {
        lhs.derRepresentation == rhs.derRepresentation
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(derRepresentation) }

    public var description: String { "Certificate(\(subject), serial \(serialNumber))" }

    // MARK: - Reading parts

    static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    static func oneLine(_ name: OpaquePointer?) -> String {
        guard let name else { return "" }
        let flags =
            UInt(ASN1_STRFLGS_ESC_2253) | UInt(ASN1_STRFLGS_ESC_CTRL) | UInt(ASN1_STRFLGS_UTF8_CONVERT)
            | UInt(ASN1_STRFLGS_DUMP_UNKNOWN) | UInt(ASN1_STRFLGS_DUMP_DER) | UInt(XN_FLAG_SEP_CPLUS_SPC)
            | UInt(XN_FLAG_FN_SN)
        let bytes = try? OpenSSLSupport.writtenBytes(
            { X509_NAME_print_ex($0, name, 0, flags) >= 0 },
            failure: CryptographyError.openSSL(.invalidCertificate, "could not print a name"))
        return String(decoding: bytes ?? Data(), as: UTF8.self)
    }

    /// Reads the issuer Name and serial number straight from the DER (empty when unreadable).
    static func issuerAndSerial(der: [UInt8]) -> (issuer: [UInt8], serial: [UInt8]) {
        let reader = ASN1Reader(der)
        guard let certificate = try? reader.children(of: try reader.root(), expecting: 0x30, "Certificate"),
            let tbsNode = certificate.first,
            let tbsFields = try? reader.children(of: tbsNode, expecting: 0x30, "TBSCertificate")
        else { return ([], []) }
        let fields = Array(tbsFields.first?.tag == 0xa0 ? tbsFields.dropFirst() : tbsFields[...])
        guard fields.count >= 3, fields[0].tag == 0x02, fields[2].tag == 0x30 else { return ([], []) }
        return (Array(reader.whole(fields[2])), Array(reader.content(fields[0])))
    }

    static func serialHex(_ x509: OpaquePointer) -> String {
        guard let serial = X509_get0_serialNumber(x509), let number = ASN1_INTEGER_to_BN(serial, nil) else {
            return ""
        }
        defer { BN_free(number) }
        guard let hex = BN_bn2hex(number) else { return "" }
        defer { COpenSSL_free(hex) }
        return String(cString: hex)
    }
}
