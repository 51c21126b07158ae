import Foundation
import Foundations

/// A CMS (PKCS#7) SignedData with one signer, read for detached-signature verification.
///
/// Parsing is done in Swift over the BER/DER bytes (indefinite lengths accepted, as Apple Pay uses them): it
/// locates the embedded certificates, the signer's identifier, the signed attributes (content type, message
/// digest, signing time) and the signature, without building OpenSSL objects. That keeps per-message work to
/// hashing and one signature check, and lets a caller cache whatever it derives from the certificates (keyed by
/// `certificatesDigest`). Only SHA-256 digests and ECDSA-SHA256 / RSA-SHA256 (PKCS#1 v1.5) signers are accepted.
public struct CMSSignedData: Sendable {
    /// The message as given; the fields below are ranges of it (no copies).
    private let bytes: [UInt8]
    /// Where the `certificates` field is in `bytes` (empty when absent).
    private let certificatesFieldRange: Range<Int>
    /// Where each embedded certificate is in `bytes`, in order.
    private let certificateRanges: [Range<Int>]
    /// The whole `certificates` field, exactly as encoded: an exact cache key for whatever a caller derives from
    /// the embedded certificates (compare it byte for byte).
    public var certificatesField: [UInt8] { Array(bytes[certificatesFieldRange]) }
    /// The DER of each certificate embedded in the message, in order.
    public var certificates: [Data] { certificateRanges.map { Data(bytes[$0]) } }
    /// SHA-256 over the whole `certificates` field.
    public var certificatesDigest: Data { Digest.sha256(bytes[certificatesFieldRange]) }
    /// The signing-time signed attribute, if present.
    public let signingTime: Date?
    /// The message-digest signed attribute.
    public var messageDigest: Data { Data(bytes[messageDigestRange]) }
    private let messageDigestRange: Range<Int>
    /// Whether the signature algorithm is ECDSA (otherwise RSA PKCS#1 v1.5).
    public let isECDSA: Bool
    /// The signature value.
    public var signature: Data { Data(bytes[signatureRange]) }
    private let signatureRange: Range<Int>
    /// The signed attributes re-tagged as a SET are the bytes the signature covers: this header (the SET tag, and
    /// for an indefinite-length encoding a definite length) followed by `bytes[signedAttributesBody]`.
    private let signedAttributesHeader: [UInt8]
    private let signedAttributesBody: Range<Int>
    private enum SignerIdentifier: Sendable {
        /// Ranges of `bytes`: the issuer Name's whole encoding and the serial number's content.
        case issuerAndSerial(issuer: Range<Int>, serial: Range<Int>)
        /// The key identifier's content, a range of `bytes`.
        case subjectKeyIdentifier(Range<Int>)
    }
    private let signer: SignerIdentifier

    /// Parses a BER/DER-encoded ContentInfo holding a detached SignedData.
    /// - Throws: `CryptographyError` with code `malformedInput` when the structure is not one this reader accepts
    ///   (several signers, missing signed attributes, a digest other than SHA-256, embedded content...).
    public init(berEncoded input: some DataProtocol) throws {
        let bytes = input as? [UInt8] ?? Array(input)
        let reader = ASN1Reader(bytes)
        let contentInfo = try reader.children(of: try reader.root(), expecting: 0x30, "ContentInfo")
        guard contentInfo.count == 2, reader.isOID(contentInfo[0], OID.signedData), contentInfo[1].tag == 0xa0 else {
            throw ASN1Reader.malformed("not a CMS SignedData")
        }
        let explicit = try reader.children(of: contentInfo[1])
        guard explicit.count == 1 else { throw ASN1Reader.malformed("SignedData wrapper") }
        let fields = try reader.children(of: explicit[0], expecting: 0x30, "SignedData")
        guard fields.count >= 4, fields[0].tag == 0x02, fields[1].tag == 0x31, fields[2].tag == 0x30 else {
            throw ASN1Reader.malformed("SignedData fields")
        }
        // encapContentInfo: id-data with no content (detached).
        let encapsulated = try reader.children(of: fields[2])
        guard encapsulated.count == 1, reader.isOID(encapsulated[0], OID.data) else {
            throw ASN1Reader.malformed("the signature is not detached over id-data")
        }
        var index = 3
        var ranges: [Range<Int>] = []
        var field: Range<Int> = 0..<0
        if index < fields.count, fields[index].tag == 0xa0 {
            let embedded = try reader.children(of: fields[index])
            ranges.reserveCapacity(embedded.count)
            for certificate in embedded {
                guard certificate.tag == 0x30, !certificate.isIndefinite else {
                    throw ASN1Reader.malformed("an embedded certificate is not DER")
                }
                ranges.append(certificate.start..<certificate.end)
            }
            field = fields[index].start..<fields[index].end
            index += 1
        }
        if index < fields.count, fields[index].tag == 0xa1 { index += 1 }  // CRLs: not used.
        guard index == fields.count - 1, fields[index].tag == 0x31 else { throw ASN1Reader.malformed("SignerInfos") }
        let signerInfos = try reader.children(of: fields[index])
        guard signerInfos.count == 1 else {
            throw ASN1Reader.malformed("expected exactly one signer, found \(signerInfos.count)")
        }
        let info = try reader.children(of: signerInfos[0], expecting: 0x30, "SignerInfo")
        guard info.count >= 5, info[0].tag == 0x02 else { throw ASN1Reader.malformed("SignerInfo fields") }

        // sid
        switch info[1].tag {
        case 0x30:
            let parts = try reader.children(of: info[1])
            guard parts.count == 2, parts[0].tag == 0x30, parts[1].tag == 0x02, !parts[0].isIndefinite else {
                throw ASN1Reader.malformed("IssuerAndSerialNumber")
            }
            signer = .issuerAndSerial(
                issuer: parts[0].start..<parts[0].end, serial: parts[1].contentStart..<parts[1].contentEnd)
        case 0x80:
            signer = .subjectKeyIdentifier(info[1].contentStart..<info[1].contentEnd)
        default:
            throw ASN1Reader.malformed("signer identifier")
        }
        // digestAlgorithm
        let digestAlgorithm = try reader.children(of: info[2], expecting: 0x30, "digestAlgorithm")
        guard let digestOID = digestAlgorithm.first, reader.isOID(digestOID, OID.sha256) else {
            throw CryptographyError(.unsupportedAlgorithm, "the CMS signer's digest is not SHA-256")
        }
        // signedAttrs [0] IMPLICIT SET OF Attribute
        guard info[3].tag == 0xa0 else { throw ASN1Reader.malformed("the CMS signer has no signed attributes") }
        let attributes = try reader.children(of: info[3])
        var seen: [ArraySlice<UInt8>] = []
        seen.reserveCapacity(attributes.count)
        var contentTypeIsData = false
        var digest: Range<Int>? = nil
        var time: Date? = nil
        for attribute in attributes {
            let parts = try reader.children(of: attribute, expecting: 0x30, "Attribute")
            guard parts.count == 2, parts[0].tag == 0x06, parts[1].tag == 0x31 else {
                throw ASN1Reader.malformed("Attribute")
            }
            let type = reader.content(parts[0])
            guard !seen.contains(where: { $0.elementsEqual(type) }) else {
                throw ASN1Reader.malformed("a signed attribute appears twice")
            }
            seen.append(type)
            let values = try reader.children(of: parts[1])
            if reader.contentEquals(parts[0], OID.contentType) {
                guard values.count == 1, reader.isOID(values[0], OID.data) else {
                    throw ASN1Reader.malformed("content-type attribute is not id-data")
                }
                contentTypeIsData = true
            } else if reader.contentEquals(parts[0], OID.messageDigest) {
                guard values.count == 1, values[0].tag == 0x04 else {
                    throw ASN1Reader.malformed("message-digest attribute")
                }
                digest = values[0].contentStart..<values[0].contentEnd
            } else if reader.contentEquals(parts[0], OID.signingTime) {
                guard values.count == 1, let date = ASN1Time.parse(tag: values[0].tag, reader.content(values[0])) else {
                    throw ASN1Reader.malformed("signing-time attribute")
                }
                time = date
            }
        }
        guard contentTypeIsData, let digest else {
            throw ASN1Reader.malformed("the signed attributes lack content-type or message-digest")
        }
        // The signature covers the DER of the attributes as a SET (tag 0x31 instead of [0]).
        if info[3].isIndefinite {
            signedAttributesHeader = [0x31] + CMSSignedData.derLength(info[3].contentEnd - info[3].contentStart)
            signedAttributesBody = info[3].contentStart..<info[3].contentEnd
        } else {
            signedAttributesHeader = [0x31]
            signedAttributesBody = (info[3].start + 1)..<info[3].end
        }
        // signatureAlgorithm, signature
        let signatureAlgorithm = try reader.children(of: info[4], expecting: 0x30, "signatureAlgorithm")
        guard info.count >= 6, info[5].tag == 0x04, let algorithm = signatureAlgorithm.first else {
            throw ASN1Reader.malformed("SignerInfo signature")
        }
        if reader.isOID(algorithm, OID.ecdsaWithSHA256) || reader.isOID(algorithm, OID.ecPublicKey) {
            isECDSA = true
        } else if reader.isOID(algorithm, OID.rsaEncryption) || reader.isOID(algorithm, OID.sha256WithRSAEncryption) {
            isECDSA = false
        } else {
            throw CryptographyError(
                .unsupportedAlgorithm, "the CMS signature algorithm is neither ECDSA-SHA256 nor RSA-SHA256")
        }
        self.bytes = bytes
        self.certificatesFieldRange = field
        self.certificateRanges = ranges
        self.signingTime = time
        self.messageDigestRange = digest
        self.signatureRange = info[5].contentStart..<info[5].contentEnd
    }

    /// A DER length: short form below 128, long form (the count of length bytes, then big-endian bytes) above.
    package static func derLength(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var rest = count
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xff), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    /// Whether the signer identifier names this certificate (issuer and serial number, or subject key identifier).
    public func isSigner(_ certificate: Certificate) -> Bool {
        switch signer {
        case .issuerAndSerial(let issuer, let serial):
            return bytes[issuer].elementsEqual(certificate.issuerAndSerial.issuer)
                && bytes[serial].elementsEqual(certificate.issuerAndSerial.serial)
        case .subjectKeyIdentifier(let identifier):
            guard let value = certificate.extensionValue(oid: "2.5.29.14") else { return false }
            let reader = ASN1Reader(Array(value))
            guard let node = try? reader.root(), node.tag == 0x04 else { return false }
            return reader.content(node).elementsEqual(bytes[identifier])
        }
    }

    /// The DER bytes of the first embedded certificate whose issuer and serial number the signer identifier names,
    /// read from the encoding alone (no certificate is parsed by OpenSSL): a cheap, exact cache key for the
    /// signer. Nil when no embedded certificate matches, or when the signer is named by subject key identifier.
    public var signerCertificateBytes: ArraySlice<UInt8>? {
        guard case .issuerAndSerial(let issuer, let serial) = signer else { return nil }
        let reader = ASN1Reader(bytes)
        for range in certificateRanges {
            guard let certificate = try? reader.node(at: range.lowerBound, limit: range.upperBound),
                let tbs = try? reader.children(of: certificate, expecting: 0x30, "Certificate").first,
                let tbsFields = try? reader.children(of: tbs, expecting: 0x30, "TBSCertificate")
            else { continue }
            // After the optional [0] version: serialNumber, signature, issuer.
            let first = tbsFields.first?.tag == 0xa0 ? 1 : 0
            guard tbsFields.count >= first + 3, tbsFields[first].tag == 0x02, tbsFields[first + 2].tag == 0x30 else {
                continue
            }
            let serialNode = tbsFields[first]
            let issuerNode = tbsFields[first + 2]
            if sameBytes(serialNode.contentStart..<serialNode.contentEnd, serial),
                sameBytes(issuerNode.start..<issuerNode.end, issuer)
            {
                return bytes[range]
            }
        }
        return nil
    }

    /// Whether two ranges of the message hold the same bytes (`memcmp`).
    private func sameBytes(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        guard a.count == b.count else { return false }
        return bytes.withUnsafeBytes { all in
            guard let base = all.baseAddress else { return true }
            return memcmp(base + a.lowerBound, base + b.lowerBound, a.count) == 0
        }
    }

    /// Whether one of the embedded certificates is exactly these DER bytes.
    public func embedsCertificate(der: [UInt8]) -> Bool {
        der.withUnsafeBytes { wanted in
            bytes.withUnsafeBytes { field in
                guard let target = wanted.baseAddress, let base = field.baseAddress else { return false }
                return certificateRanges.contains { range in
                    range.count == wanted.count && memcmp(base + range.lowerBound, target, wanted.count) == 0
                }
            }
        }
    }

    /// The index, in `certificates`, of the signer's certificate.
    public func signerIndex(in certificates: [Certificate]) -> Int? { certificates.firstIndex(where: isSigner) }

    /// Checks the message-digest attribute against SHA-256(`content`) and the signature over the signed attributes.
    /// - Throws: `CryptographyError` with code `invalidSignature` naming which of the two failed, or when the key
    ///   kind does not match the signature algorithm.
    public func verify(content: some DataProtocol, verifier: SignatureVerifier) throws {
        try verify(contentDigest: Digest.sha256(content), verifier: verifier)
    }

    /// As `verify(content:verifier:)`, with the content's SHA-256 already computed.
    public func verify(contentDigest: Data, verifier: SignatureVerifier) throws {
        let keyIsEC = verifier.publicKey.kind == .p256 || verifier.publicKey.kind == .p384
        guard keyIsEC == isECDSA else {
            throw CryptographyError(.invalidSignature, "the signer's key type does not match the signature algorithm")
        }
        let digestMatches = contentDigest.withUnsafeBytes { digest in
            bytes.withUnsafeBytes { all in
                guard digest.count == messageDigestRange.count, let base = all.baseAddress,
                    let given = digest.baseAddress
                else { return false }
                return memcmp(base + messageDigestRange.lowerBound, given, digest.count) == 0
            }
        }
        guard digestMatches else {
            throw CryptographyError(.invalidSignature, "the message-digest attribute does not match the content")
        }
        guard verifier.verify(signature: bytes[signatureRange], sha256Digest: signedAttributesDigest()) else {
            throw CryptographyError(.invalidSignature, "the signature over the signed attributes does not verify")
        }
    }

    /// SHA-256 of the signed attributes as a SET (header ‖ body), hashed in place.
    private func signedAttributesDigest() -> Data {
        var output = Data(count: 32)
        let header = signedAttributesHeader
        let body = signedAttributesBody
        let ok = output.withUnsafeMutableBytes { out in
            bytes.withUnsafeBytes { all in
                Digest.streamSHA256(into: out.baseAddress?.assumingMemoryBound(to: UInt8.self), count: 2) {
                    index, update in
                    index == 0
                        ? header.withUnsafeBytes { update($0) }
                        : update(UnsafeRawBufferPointer(rebasing: all[body]))
                }
            }
        }
        // Only an allocation failure gets here: hash a concatenated copy instead.
        return ok ? output : Digest.sha256(header + bytes[body])
    }

    /// Parses, finds the signer among the embedded certificates and verifies; no certificate chain checks.
    /// - Returns: the embedded certificates, the signer's certificate and the signing time.
    /// - Throws: `CryptographyError` (`malformedInput`, `invalidCertificate`, `invalidSignature`).
    public static func verifyDetached(_ signature: some DataProtocol, content: some DataProtocol) throws
        -> (signer: Certificate, certificates: [Certificate], signingTime: Date?)
    {
        let message = try CMSSignedData(berEncoded: signature)
        let certificates = try message.certificates.map { try Certificate(der: $0) }
        guard let index = message.signerIndex(in: certificates) else {
            throw CryptographyError(.invalidSignature, "the signer's certificate is not embedded in the signature")
        }
        try message.verify(content: content, verifier: try SignatureVerifier(publicKey: certificates[index].publicKey))
        return (certificates[index], certificates, message.signingTime)
    }
}
