internal import COpenSSL
import Foundation
import Foundations

/// An X.509 distinguished name: its attributes in the order they appear in the certificate.
///
/// Apple's merchant certificates read `UID=merchant.com.example, CN=Apple Pay Payment Processing:merchant.com.example,
/// OU=TEAMID1234, O=Example Inc., C=US`; build that with `init(userID:commonName:organizationalUnit:organization:country:)`.
public struct DistinguishedName: Sendable, Hashable, CustomStringConvertible {
    /// The type of one attribute of a name.
    public enum AttributeType: String, Sendable, Hashable, CaseIterable {
        /// `UID` (0.9.2342.19200300.100.1.1): Apple puts the merchant identifier here.
        case userID = "UID"
        case commonName = "CN"
        case organizationalUnit = "OU"
        case organization = "O"
        case country = "C"
        case locality = "L"
        case stateOrProvince = "ST"
        case emailAddress = "emailAddress"

        var nid: Int32 {
            switch self {
            case .userID: NID_userId
            case .commonName: NID_commonName
            case .organizationalUnit: NID_organizationalUnitName
            case .organization: NID_organizationName
            case .country: NID_countryName
            case .locality: NID_localityName
            case .stateOrProvince: NID_stateOrProvinceName
            case .emailAddress: NID_pkcs9_emailAddress
            }
        }

        init?(nid: Int32) {
            guard let match = AttributeType.allCases.first(where: { $0.nid == nid }) else { return nil }
            self = match
        }
    }

    /// One attribute: a type and its text.
    public struct Attribute: Sendable, Hashable {
        public var type: AttributeType
        public var value: String
        public init(_ type: AttributeType, _ value: String) {
            self.type = type
            self.value = value
        }
    }

    /// The attributes, in certificate order.
    public var attributes: [Attribute]

    /// A name made of these attributes, in this order.
    public init(_ attributes: [Attribute]) { self.attributes = attributes }

    /// A name in Apple's order: UID, CN, OU, O, C; nil parts are left out.
    public init(
        userID: String? = nil, commonName: String? = nil, organizationalUnit: String? = nil,
        organization: String? = nil, country: String? = nil
    ) {
        var attributes: [Attribute] = []
        if let userID { attributes.append(Attribute(.userID, userID)) }
        if let commonName { attributes.append(Attribute(.commonName, commonName)) }
        if let organizationalUnit { attributes.append(Attribute(.organizationalUnit, organizationalUnit)) }
        if let organization { attributes.append(Attribute(.organization, organization)) }
        if let country { attributes.append(Attribute(.country, country)) }
        self.attributes = attributes
    }

    /// The first value of an attribute type, if present.
    public func value(of type: AttributeType) -> String? { attributes.first { $0.type == type }?.value }

    /// `UID=…, CN=…` in certificate order.
    public var description: String { attributes.map { "\($0.type.rawValue)=\($0.value)" }.joined(separator: ", ") }

    /// Builds an owned `X509_NAME *`; the caller frees it with `X509_NAME_free`.
    func makeX509Name() throws(CryptographyError) -> OpaquePointer {
        guard let name = X509_NAME_new() else {
            throw CryptographyError.openSSL(.internalError, "could not allocate a name")
        }
        for attribute in attributes {
            let bytes = Array(attribute.value.utf8)
            // A length past Int32 cannot be passed; OpenSSL refuses long values anyway (CN ≤ 64 characters).
            let added = bytes.withUnsafeBufferPointer { buffer in
                Int32(exactly: buffer.count).map { length in
                    X509_NAME_add_entry_by_NID(
                        name, attribute.type.nid, MBSTRING_UTF8, buffer.baseAddress, length, -1, 0)
                } ?? 0
            }
            guard added == 1 else {
                X509_NAME_free(name)
                throw CryptographyError.openSSL(
                    .malformedInput, "the value of \(attribute.type.rawValue) is not valid (length or character set)")
            }
        }
        return name
    }

    /// Reads the attributes of an `X509_NAME *` it does not own. Attribute types it does not know are skipped.
    init(x509Name name: OpaquePointer) {
        var attributes: [Attribute] = []
        let count = X509_NAME_entry_count(name)
        for index in 0..<count {
            guard let entry = X509_NAME_get_entry(name, index),
                let object = X509_NAME_ENTRY_get_object(entry),
                let type = AttributeType(nid: OBJ_obj2nid(object)),
                let data = X509_NAME_ENTRY_get_data(entry)
            else { continue }
            var utf8: UnsafeMutablePointer<UInt8>? = nil
            let length = ASN1_STRING_to_UTF8(&utf8, data)
            guard length >= 0, let utf8 else { continue }
            attributes.append(
                Attribute(type, String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)))
            COpenSSL_free(utf8)
        }
        self.attributes = attributes
    }
}

/// The key usage bits of a certificate (RFC 5280 §4.2.1.3).
public struct KeyUsage: OptionSet, Sendable, Hashable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let digitalSignature = KeyUsage(rawValue: 1 << 0)
    public static let nonRepudiation = KeyUsage(rawValue: 1 << 1)
    public static let keyEncipherment = KeyUsage(rawValue: 1 << 2)
    public static let dataEncipherment = KeyUsage(rawValue: 1 << 3)
    public static let keyAgreement = KeyUsage(rawValue: 1 << 4)
    public static let keyCertSign = KeyUsage(rawValue: 1 << 5)
    public static let cRLSign = KeyUsage(rawValue: 1 << 6)

    /// OpenSSL's configuration names, in bit order.
    var configurationNames: [String] {
        let names = [
            "digitalSignature", "nonRepudiation", "keyEncipherment", "dataEncipherment", "keyAgreement", "keyCertSign",
            "cRLSign",
        ]
        return names.indices.filter { rawValue & (1 << $0) != 0 }.map { names[$0] }
    }
}

/// An extended key usage purpose (RFC 5280 §4.2.1.12).
public enum ExtendedKeyUsage: String, Sendable, Hashable {
    /// TLS client authentication: the Merchant Identity certificate.
    case clientAuth
    case serverAuth
    case codeSigning
    case emailProtection
}

/// Whether a certificate may issue others.
public enum BasicConstraints: Sendable, Hashable {
    /// A certificate authority, with an optional limit on the number of intermediates below it.
    case certificateAuthority(pathLength: Int?)
    /// An end entity (`CA:FALSE`).
    case endEntity
}

/// A certificate extension given as raw DER, for extensions the builder has no typed property for
/// (Apple's marker OIDs, the merchant identifier hash, certificate policies).
public struct CertificateExtension: Sendable, Hashable {
    /// The dotted object identifier, e.g. `1.2.840.113635.100.6.29`.
    public var oid: String
    public var isCritical: Bool
    /// The DER encoding placed inside the extension's OCTET STRING, e.g. `05 00` for NULL.
    public var value: Data

    public init(oid: String, isCritical: Bool = false, value: Data) {
        self.oid = oid
        self.isCritical = isCritical
        self.value = value
    }

    /// An extension whose value is ASN.1 NULL (`05 00`): how Apple marks its intermediate and leaf certificates.
    public static func marker(oid: String) -> CertificateExtension {
        CertificateExtension(oid: oid, value: Data([0x05, 0x00]))
    }

    /// An extension whose value is a DER UTF8String (how Apple stores the merchant identifier hash).
    /// - Throws: `CryptographyError` with code `malformedInput` for a text longer than 65535 bytes.
    public static func utf8String(oid: String, _ text: String) throws -> CertificateExtension {
        let bytes = Array(text.utf8)
        var der: [UInt8] = [0x0C]
        switch bytes.count {
        case 0..<0x80: der.append(UInt8(bytes.count))
        case 0x80..<0x100: der += [0x81, UInt8(bytes.count)]
        case 0x100..<0x10000: der += [0x82, UInt8(bytes.count >> 8), UInt8(bytes.count & 0xff)]
        default: throw CryptographyError(.malformedInput, "extension text is too long")
        }
        return CertificateExtension(oid: oid, value: Data(der + bytes))
    }
}

/// The digest a certificate or CMS signature is made with.
public enum SignatureDigest: Sendable, Hashable {
    case sha256
    case sha384

    var evp: OpaquePointer? {
        switch self {
        case .sha256: EVP_sha256()
        case .sha384: EVP_sha384()
        }
    }
}

/// Describes an X.509 v3 certificate to be signed: subject, key, validity and extensions.
///
/// ```swift
/// var builder = CertificateBuilder(subject: name, publicKey: key.publicKey, notBefore: start, notAfter: end)
/// builder.basicConstraints = .certificateAuthority(pathLength: 0)
/// builder.keyUsage = [.keyCertSign, .cRLSign]
/// let certificate = try builder.signed(by: issuerCertificate, key: issuerKey)
/// ```
/// Extensions are written in this order: basic constraints, authority key identifier, subject key identifier,
/// key usage, extended key usage, then `extensions` as given.
public struct CertificateBuilder: Sendable {
    /// The serial number as an unsigned big-endian integer; by default 8 random bytes (positive, non-zero).
    public var serialNumber: Data
    public var subject: DistinguishedName
    public var publicKey: PublicKey
    public var notBefore: Date
    public var notAfter: Date
    /// `nil` leaves the extension out.
    public var basicConstraints: BasicConstraints? = .endEntity
    /// `nil` or empty leaves the extension out. Always written as critical.
    public var keyUsage: KeyUsage? = nil
    /// Empty leaves the extension out. Written as non-critical.
    public var extendedKeyUsage: [ExtendedKeyUsage] = []
    /// Adds a subject key identifier (SHA-1 of the public key, RFC 5280 method 1).
    public var includesSubjectKeyIdentifier = true
    /// Adds an authority key identifier taken from the issuer (left out when self-signing).
    public var includesAuthorityKeyIdentifier = true
    /// Extra extensions, written after the typed ones, in order.
    public var extensions: [CertificateExtension] = []

    /// A builder with a random serial number and the given subject, key and validity.
    public init(subject: DistinguishedName, publicKey: PublicKey, notBefore: Date, notAfter: Date) {
        var serial = [UInt8](repeating: 0, count: 8)
        for index in serial.indices { serial[index] = UInt8.random(in: 0...255) }
        serial[0] = (serial[0] & 0x7f) | 0x10  // positive, and never a short or zero serial
        self.serialNumber = Data(serial)
        self.subject = subject
        self.publicKey = publicKey
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// Signs the certificate with its own key: the issuer is the subject.
    /// - Parameters:
    ///   - key: the private key matching `publicKey`.
    ///   - digest: the signature's digest (Apple's P-384 root uses SHA-384).
    /// - Throws: `CryptographyError` (`invalidKey` when `key` does not match `publicKey`, `malformedInput` for a bad
    ///   name, serial, validity or extension).
    public func selfSigned(with key: PrivateKey, digest: SignatureDigest = .sha256) throws -> Certificate {
        guard key.publicKey == publicKey else {
            throw CryptographyError(.invalidKey, "the signing key does not match the certificate's public key")
        }
        return try build(issuerName: subject, issuer: nil, key: key, digest: digest)
    }

    /// Signs the certificate as `issuer`, with the issuer's private key.
    /// - Throws: `CryptographyError` (`invalidKey` when `key` does not match the issuer's certificate).
    public func signed(by issuer: Certificate, key: PrivateKey, digest: SignatureDigest = .sha256) throws -> Certificate
    {
        guard key.publicKey == issuer.publicKey else {
            throw CryptographyError(.invalidKey, "the signing key does not match the issuer's certificate")
        }
        return try build(issuerName: nil, issuer: issuer, key: key, digest: digest)
    }

    private func build(issuerName: DistinguishedName?, issuer: Certificate?, key: PrivateKey, digest: SignatureDigest)
        throws -> Certificate
    {
        OpenSSLErrorQueue.clear()
        guard notBefore <= notAfter else {
            throw CryptographyError(.malformedInput, "the validity ends before it starts")
        }
        guard !serialNumber.isEmpty, serialNumber.count <= 20 else {
            throw CryptographyError(.malformedInput, "the serial number must be 1 to 20 bytes")
        }
        guard let x509 = X509_new() else {
            throw CryptographyError.openSSL(.internalError, "could not allocate a certificate")
        }
        defer { X509_free(x509) }
        guard X509_set_version(x509, 2) == 1 else {
            throw CryptographyError.openSSL(.internalError, "could not set the version")
        }

        // Serial number.
        let serial = serialNumber.withUnsafeBytes { raw in  // 1 to 20 bytes, checked above
            BN_bin2bn(raw.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(raw.count), nil)
        }
        guard let serial else { throw CryptographyError.openSSL(.internalError, "could not read the serial number") }
        defer { BN_free(serial) }
        guard let serialInteger = BN_to_ASN1_INTEGER(serial, nil) else {
            throw CryptographyError.openSSL(.internalError, "could not encode the serial number")
        }
        defer { ASN1_INTEGER_free(serialInteger) }
        guard X509_set_serialNumber(x509, serialInteger) == 1 else {
            throw CryptographyError.openSSL(.internalError, "could not set the serial number")
        }

        // Names.
        let subjectName = try subject.makeX509Name()
        defer { X509_NAME_free(subjectName) }
        guard X509_set_subject_name(x509, subjectName) == 1 else {
            throw CryptographyError.openSSL(.internalError, "could not set the subject")
        }
        if let issuer {
            guard X509_set_issuer_name(x509, X509_get_subject_name(issuer.x509)) == 1 else {
                throw CryptographyError.openSSL(.internalError, "could not set the issuer")
            }
        } else if let issuerName {
            let name = try issuerName.makeX509Name()
            defer { X509_NAME_free(name) }
            guard X509_set_issuer_name(x509, name) == 1 else {
                throw CryptographyError.openSSL(.internalError, "could not set the issuer")
            }
        }

        // Validity (UTCTime before 2050, GeneralizedTime after, as RFC 5280 asks).
        guard let start = notBefore.certificateTime, let end = notAfter.certificateTime else {
            throw CryptographyError(.malformedInput, "the validity dates must lie between the years 0 and 9999")
        }
        guard ASN1_TIME_set(X509_getm_notBefore(x509), start) != nil,
            ASN1_TIME_set(X509_getm_notAfter(x509), end) != nil
        else { throw CryptographyError.openSSL(.malformedInput, "could not set the validity dates") }

        guard X509_set_pubkey(x509, publicKey.pkey) == 1 else {
            throw CryptographyError.openSSL(.invalidKey, "could not set the public key")
        }

        // Typed extensions through OpenSSL's configuration syntax; the context knows subject and issuer.
        var context = X509V3_CTX()
        let addTyped: (Int32, String) throws -> Void = { nid, value in
            guard let ext = X509V3_EXT_nconf_nid(nil, &context, nid, value) else {
                throw CryptographyError.openSSL(.malformedInput, "could not build extension \(value)")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x509, ext, -1) == 1 else {
                throw CryptographyError.openSSL(.internalError, "could not add extension \(value)")
            }
        }
        // The context points at the issuer's X509 (or, self-signing, at the new certificate): `issuer` is kept alive
        // by `withExtendedLifetime` below until the last extension is built.
        X509V3_set_ctx(&context, issuer?.x509 ?? x509, x509, nil, nil, 0)
        if let basicConstraints {
            switch basicConstraints {
            case .certificateAuthority(let pathLength?):
                try addTyped(NID_basic_constraints, "critical,CA:TRUE,pathlen:\(pathLength)")
            case .certificateAuthority(nil):
                try addTyped(NID_basic_constraints, "critical,CA:TRUE")
            case .endEntity:
                try addTyped(NID_basic_constraints, "critical,CA:FALSE")
            }
        }
        if includesAuthorityKeyIdentifier, issuer != nil {
            try addTyped(NID_authority_key_identifier, "keyid:always")
        }
        if includesSubjectKeyIdentifier { try addTyped(NID_subject_key_identifier, "hash") }
        if let keyUsage, !keyUsage.isEmpty {
            try addTyped(NID_key_usage, "critical," + keyUsage.configurationNames.joined(separator: ","))
        }
        if !extendedKeyUsage.isEmpty {
            try addTyped(NID_ext_key_usage, extendedKeyUsage.map(\.rawValue).joined(separator: ","))
        }
        for custom in extensions { try Self.add(custom, to: x509) }
        withExtendedLifetime(issuer) {}

        guard X509_sign(x509, key.pkey, digest.evp) > 0 else {
            throw CryptographyError.openSSL(.invalidKey, "could not sign the certificate")
        }
        // `Certificate` takes its own reference; the `defer` above releases ours.
        guard X509_up_ref(x509) == 1 else {
            throw CryptographyError.openSSL(.internalError, "could not share the certificate")
        }
        return try Certificate(takingOwnershipOf: x509)
    }

    /// Adds one raw extension to an `X509 *`.
    static func add(_ custom: CertificateExtension, to x509: OpaquePointer) throws(CryptographyError) {
        guard let object = OBJ_txt2obj(custom.oid, 1) else {
            throw CryptographyError.openSSL(.malformedInput, "\(custom.oid) is not a dotted object identifier")
        }
        defer { ASN1_OBJECT_free(object) }
        guard let octets = ASN1_OCTET_STRING_new() else {
            throw CryptographyError.openSSL(.internalError, "could not allocate an extension value")
        }
        defer { ASN1_OCTET_STRING_free(octets) }
        let set = custom.value.withUnsafeBytes { raw in
            Int32(exactly: raw.count).map { length in
                ASN1_OCTET_STRING_set(octets, raw.baseAddress?.assumingMemoryBound(to: UInt8.self), length)
            } ?? 0
        }
        guard set == 1, let ext = X509_EXTENSION_create_by_OBJ(nil, object, custom.isCritical ? 1 : 0, octets) else {
            throw CryptographyError.openSSL(.internalError, "could not build extension \(custom.oid)")
        }
        defer { X509_EXTENSION_free(ext) }
        guard X509_add_ext(x509, ext, -1) == 1 else {
            throw CryptographyError.openSSL(.internalError, "could not add extension \(custom.oid)")
        }
    }
}

extension Date {
    /// Whole seconds since 1970 for `ASN1_TIME_set`, or nil for a date an ASN.1 time cannot hold (before the year 0,
    /// after 9999, or not a number), which would otherwise trap in the conversion to `time_t`.
    var certificateTime: time_t? {
        let seconds = timeIntervalSince1970.rounded(.down)
        guard seconds >= -62_167_219_200, seconds <= 253_402_300_799 else { return nil }
        return time_t(seconds)
    }
}

extension Certificate {
    /// The subject as a structured name (attribute types `DistinguishedName` knows; others are skipped).
    public var subjectName: DistinguishedName {
        guard let name = X509_get_subject_name(x509) else { return DistinguishedName([]) }
        return DistinguishedName(x509Name: name)
    }

    /// The issuer as a structured name.
    public var issuerName: DistinguishedName {
        guard let name = X509_get_issuer_name(x509) else { return DistinguishedName([]) }
        return DistinguishedName(x509Name: name)
    }

    /// Whether the certificate's extended key usage lists `usage`.
    public func hasExtendedKeyUsage(_ usage: ExtendedKeyUsage) -> Bool {
        let flags = X509_get_extended_key_usage(x509)
        let bit: UInt32
        switch usage {
        case .clientAuth: bit = UInt32(XKU_SSL_CLIENT)
        case .serverAuth: bit = UInt32(XKU_SSL_SERVER)
        case .codeSigning: bit = UInt32(XKU_CODE_SIGN)
        case .emailProtection: bit = UInt32(XKU_SMIME)
        }
        return X509_get_extension_flags(x509) & UInt32(EXFLAG_XKUSAGE) != 0 && flags & bit != 0
    }

    /// Whether the certificate says it is a certificate authority (basic constraints `CA:TRUE`).
    public var isCertificateAuthority: Bool { X509_check_ca(x509) >= 1 }

    /// The key usage bits, or nil when the certificate has no key usage extension.
    public var keyUsage: KeyUsage? {
        guard X509_get_extension_flags(x509) & UInt32(EXFLAG_KUSAGE) != 0 else { return nil }
        // OpenSSL's KU_* values put digitalSignature at 0x80 and decipherOnly at 0x8000 (the DER bit order).
        let bits = X509_get_key_usage(x509)
        var usage = KeyUsage()
        let table: [(UInt32, KeyUsage)] = [
            (UInt32(KU_DIGITAL_SIGNATURE), .digitalSignature), (UInt32(KU_NON_REPUDIATION), .nonRepudiation),
            (UInt32(KU_KEY_ENCIPHERMENT), .keyEncipherment), (UInt32(KU_DATA_ENCIPHERMENT), .dataEncipherment),
            (UInt32(KU_KEY_AGREEMENT), .keyAgreement), (UInt32(KU_KEY_CERT_SIGN), .keyCertSign),
            (UInt32(KU_CRL_SIGN), .cRLSign),
        ]
        for (bit, flag) in table where bits & bit != 0 { usage.insert(flag) }
        return usage
    }

    /// Whether `issuer`'s public key verifies this certificate's signature (the names are not compared).
    public func isSigned(by issuer: Certificate) -> Bool {
        OpenSSLErrorQueue.clear()
        defer { OpenSSLErrorQueue.clear() }
        return X509_verify(x509, issuer.publicKey.pkey) == 1
    }
}
