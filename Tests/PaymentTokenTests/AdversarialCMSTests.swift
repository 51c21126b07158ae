import Cryptography
import Foundation
import Foundations
import PaymentToken
import TestSupport
import Testing

/// DER encoding for hand-built CMS structures (definite lengths unless a test writes its own bytes).
enum DER {
    static func length(_ count: Int) -> [UInt8] { CMSSignedData.derLength(count) }
    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { [tag] + length(content.count) + content }
    static func sequence(_ parts: [UInt8]...) -> [UInt8] { tlv(0x30, parts.flatMap { $0 }) }
    static func set(_ parts: [[UInt8]]) -> [UInt8] { tlv(0x31, parts.flatMap { $0 }) }
    static func octets(_ bytes: some Sequence<UInt8>) -> [UInt8] { tlv(0x04, Array(bytes)) }
    static func integer(_ value: UInt8) -> [UInt8] { [0x02, 0x01, value] }
    static func oid(_ dotted: String) -> [UInt8] { tlv(0x06, OID.encode(dotted)!) }
    static func utcTime(_ date: Date) -> [UInt8] {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyMMddHHmmss'Z'"
        return tlv(0x17, Array(formatter.string(from: date).utf8))
    }
    static func algorithm(_ dotted: String) -> [UInt8] { sequence(oid(dotted)) }

    /// The elements inside a definite-length constructed element (for reading certificates in tests).
    static func children(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var result: [ArraySlice<UInt8>] = []
        let start = bytes.startIndex
        var cursor = start + 1
        func readLength(_ at: inout Int) -> Int {
            let first = Int(bytes[at])
            at += 1
            if first < 0x80 { return first }
            var value = 0
            for _ in 0..<(first & 0x7f) {
                value = value << 8 | Int(bytes[at])
                at += 1
            }
            return value
        }
        let total = readLength(&cursor)
        let end = cursor + total
        while cursor < end {
            let elementStart = cursor
            cursor += 1
            let count = readLength(&cursor)
            cursor += count
            result.append(bytes[elementStart..<cursor])
        }
        return result
    }

    static func content(_ element: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var at = element.startIndex + 1
        let first = Int(element[at])
        at += 1 + (first < 0x80 ? 0 : first & 0x7f)
        return element[at...]
    }
}

enum OIDs {
    static let data = "1.2.840.113549.1.7.1"
    static let signedData = "1.2.840.113549.1.7.2"
    static let contentType = "1.2.840.113549.1.9.3"
    static let messageDigest = "1.2.840.113549.1.9.4"
    static let signingTime = "1.2.840.113549.1.9.5"
    static let sha256 = "2.16.840.1.101.3.4.2.1"
    static let sha384 = "2.16.840.1.101.3.4.2.2"
    static let ecdsaSHA256 = "1.2.840.10045.4.3.2"
    static let ecdsaSHA384 = "1.2.840.10045.4.3.3"
    static let rsaPSS = "1.2.840.113549.1.1.10"
    static let sha256RSA = "1.2.840.113549.1.1.11"
}

/// A test authority that keeps every private key, so tests can sign with any certificate and issue more.
struct CraftAuthority: Sendable {
    static let epoch = Date(timeIntervalSince1970: 1_700_000_000)
    static let year: TimeInterval = 365 * 86_400

    let root: Certificate
    let rootKey: PrivateKey
    let intermediate: Certificate
    let intermediateKey: PrivateKey
    let leaf: Certificate
    let leafKey: PrivateKey

    init() throws {
        rootKey = try PrivateKey.generate(.p256)
        root = try Self.selfSignedRoot(key: rootKey, name: "Craft Root CA")
        intermediateKey = try PrivateKey.generate(.p256)
        intermediate = try Self.issue(
            "Craft Integration CA", key: intermediateKey, by: root, issuerKey: rootKey,
            constraints: .certificateAuthority(pathLength: 0), markers: [ApplePayOID.intermediateMarker])
        leafKey = try PrivateKey.generate(.p256)
        leaf = try Self.issue(
            "craft-smp-broker-sign", key: leafKey, by: intermediate, issuerKey: intermediateKey,
            markers: [ApplePayOID.leafMarker])
    }

    static func selfSignedRoot(key: PrivateKey, name: String) throws -> Certificate {
        var builder = CertificateBuilder(
            subject: DistinguishedName(commonName: name, organization: "Tests", country: "US"),
            publicKey: key.publicKey, notBefore: epoch - 10 * year, notAfter: epoch + 10 * year)
        builder.basicConstraints = .certificateAuthority(pathLength: nil)
        builder.keyUsage = [.keyCertSign, .cRLSign]
        return try builder.selfSigned(with: key)
    }

    static func issue(
        _ name: String, key: PrivateKey, by issuer: Certificate, issuerKey: PrivateKey,
        constraints: BasicConstraints? = .endEntity, markers: [String] = [], notBefore: Date = epoch - year,
        notAfter: Date = epoch + year
    ) throws -> Certificate {
        var builder = CertificateBuilder(
            subject: DistinguishedName(commonName: name, organization: "Tests", country: "US"),
            publicKey: key.publicKey, notBefore: notBefore, notAfter: notAfter)
        builder.basicConstraints = constraints
        if case .certificateAuthority = constraints {
            builder.keyUsage = [.keyCertSign, .cRLSign]
        } else {
            builder.keyUsage = [.digitalSignature]
        }
        builder.extensions = markers.map { .marker(oid: $0) }
        return try builder.signed(by: issuer, key: issuerKey)
    }

    func verifier(now: Date = CraftAuthority.epoch, maximumAge: TimeInterval = 300) throws -> PaymentTokenVerifier {
        try PaymentTokenVerifier(roots: [root], maximumAge: maximumAge, now: { now })
    }
}

/// The signer identifier (IssuerAndSerialNumber) naming `certificate`.
func issuerAndSerial(of certificate: Certificate) -> [UInt8] {
    let der = Array(certificate.derRepresentation)
    let tbs = DER.children(der[...])[0]
    var fields = DER.children(tbs)
    if fields[0].first == 0xa0 { fields.removeFirst() }
    return DER.sequence(Array(fields[2]), Array(fields[0]))
}

/// A detached CMS SignedData built field by field, so a test can get any part wrong on purpose; the signed
/// attributes are really signed (by `openssl dgst`), with whichever key the test names.
struct CraftedSignature {
    /// A new authority, a new token, and the signature its leaf would make over the token, to change and encode.
    static func fresh() throws -> (CraftAuthority, CraftedToken, CraftedSignature) {
        let authority = try CraftAuthority()
        let token = try CraftedToken()
        return (authority, token, CraftedSignature(authority: authority, content: token.signedContent))
    }

    var certificates: [Certificate]
    var signerIdentifier: [UInt8]
    var digestAlgorithm = DER.algorithm(OIDs.sha256)
    var signatureAlgorithm = DER.algorithm(OIDs.ecdsaSHA256)
    var attributes: [[UInt8]]
    var unsignedAttributes: [[UInt8]]? = nil
    /// `eContent` inside encapContentInfo (nil: detached, as Apple signs).
    var embeddedContent: [UInt8]? = nil
    var signerInfoCount = 1
    /// Applied to the signature value after signing.
    var alterSignature: @Sendable ([UInt8]) -> [UInt8] = { $0 }
    /// Applied to the encoded attributes after signing (the signature still covers the DER).
    var alterEncodedAttributes: @Sendable ([UInt8]) -> [UInt8] = { $0 }
    /// Writes the signed attributes' [0] with an indefinite length (BER), after signing the DER.
    var indefiniteSignedAttributes = false

    static func attribute(_ type: String, _ values: [UInt8]...) -> [UInt8] {
        DER.sequence(DER.oid(type), DER.set(values))
    }

    /// content-type id-data, signing time, message digest of `content`: what Apple's signed attributes hold.
    static func standardAttributes(content: Data, signingTime: Date) -> [[UInt8]] {
        [
            attribute(OIDs.contentType, DER.oid(OIDs.data)),
            attribute(OIDs.signingTime, DER.utcTime(signingTime)),
            attribute(OIDs.messageDigest, DER.octets(Digest.sha256(content))),
        ]
    }

    init(authority: CraftAuthority, content: Data, signingTime: Date = CraftAuthority.epoch) {
        certificates = [authority.leaf, authority.intermediate]
        signerIdentifier = issuerAndSerial(of: authority.leaf)
        attributes = Self.standardAttributes(content: content, signingTime: signingTime)
    }

    /// A signature of `content` by a new leaf (carrying the leaf marker) that `issuer` issues, with the leaf and then
    /// `chain` embedded.
    static func byNewLeaf(
        _ name: String, issuer: Certificate, issuerKey: PrivateKey, chain: [Certificate], authority: CraftAuthority,
        content: Data
    ) async throws -> Data {
        let leafKey = try PrivateKey.generate(.p256)
        let leaf = try CraftAuthority.issue(
            name, key: leafKey, by: issuer, issuerKey: issuerKey, markers: [ApplePayOID.leafMarker])
        return try await by(leaf, key: leafKey, certificates: [leaf] + chain, authority: authority, content: content)
    }

    /// A signature of `content` by `signer` with `key`, embedding `certificates` (in that order).
    static func by(
        _ signer: Certificate, key: PrivateKey, certificates: [Certificate], authority: CraftAuthority, content: Data
    ) async throws -> Data {
        var crafted = CraftedSignature(authority: authority, content: content)
        crafted.certificates = certificates
        crafted.signerIdentifier = issuerAndSerial(of: signer)
        return try await crafted.encode(signingKey: key)
    }

    /// The signed attributes as the signature covers them (tag SET).
    var signedAttributesDER: [UInt8] { DER.set(attributes) }

    func encode(signingKey: PrivateKey) async throws -> Data {
        let signature = alterSignature(try await sign(signedAttributesDER, with: signingKey))
        let encodedAttributes = alterEncodedAttributes(attributes.flatMap { $0 })
        let signedAttributes =
            indefiniteSignedAttributes ? [0xa0, 0x80] + encodedAttributes + [0, 0] : DER.tlv(0xa0, encodedAttributes)
        var signerInfo =
            DER.integer(1) + signerIdentifier + digestAlgorithm + signedAttributes + signatureAlgorithm
            + DER.octets(signature)
        if let unsignedAttributes { signerInfo += DER.tlv(0xa1, unsignedAttributes.flatMap { $0 }) }
        let oneSigner = DER.tlv(0x30, signerInfo)
        var encapsulated = DER.oid(OIDs.data)
        if let embeddedContent { encapsulated += DER.tlv(0xa0, DER.octets(embeddedContent)) }
        let signedData = DER.sequence(
            DER.integer(1), DER.set([digestAlgorithm]), DER.tlv(0x30, encapsulated),
            DER.tlv(0xa0, certificates.flatMap { Array($0.derRepresentation) }),
            DER.set(Array(repeating: oneSigner, count: signerInfoCount)))
        return Data(DER.sequence(DER.oid(OIDs.signedData), DER.tlv(0xa0, signedData)))
    }
}

/// Signs SHA-256(`message`) with `key` through `openssl dgst` (ECDSA DER, or RSA PKCS#1 v1.5).
func sign(_ message: [UInt8], with key: PrivateKey) async throws -> [UInt8] {
    let directory = try TemporaryDirectory(prefix: "adversarial-sign")
    defer { directory.remove() }
    let keyFile = directory.url.appendingPathComponent("key.pem")
    try Data(key.pemRepresentation.utf8).write(to: keyFile)
    let outFile = directory.url.appendingPathComponent("signature.der")
    let result = try await Subprocess.run(
        "openssl", ["dgst", "-sha256", "-binary", "-sign", keyFile.path, "-out", outFile.path], input: Data(message),
        timeout: 30)
    try #require(result.status == 0, "openssl dgst -sign failed: \(result.standardError)")
    return Array(try Data(contentsOf: outFile))
}

/// An EC_v1 token (verification only: the ciphertext is random) whose signature a test supplies.
struct CraftedToken {
    let ephemeralPublicKey: Data
    let data: Data
    let transactionId: Data
    let applicationData: Data?

    init(applicationData: Data? = nil) throws {
        ephemeralPublicKey = try PrivateKey.generate(.p256).publicKey.subjectPublicKeyInfoDER
        data = SecureRandom.bytes(80)
        transactionId = SecureRandom.bytes(32)
        self.applicationData = applicationData
    }

    /// The bytes Apple signs: key ‖ data ‖ transactionId ‖ applicationData.
    var signedContent: Data { ephemeralPublicKey + data + transactionId + (applicationData ?? Data()) }

    func json(signature: Data, version: String = "EC_v1") throws -> Data {
        var header: [String: Any] = [
            "ephemeralPublicKey": ephemeralPublicKey.base64EncodedString(),
            "publicKeyHash": Data(count: 32).base64EncodedString(),
            "transactionId": transactionId.map { String(format: "%02x", $0) }.joined(),
        ]
        if let applicationData {
            header["applicationData"] = applicationData.map { String(format: "%02x", $0) }.joined()
        }
        return try JSONSerialization.data(withJSONObject: [
            "version": version, "data": data.base64EncodedString(), "signature": signature.base64EncodedString(),
            "header": header,
        ])
    }
}

/// Expects `body` to throw a `PaymentTokenError` with exactly `code` (async bodies).
func expectCode<R>(
    _ code: PaymentTokenError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> R
) async {
    do {
        _ = try await body()
        Issue.record("expected \(code), but it succeeded", sourceLocation: sourceLocation)
    } catch let error as PaymentTokenError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected PaymentTokenError \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

@Suite("Adversarial CMS signatures: who signed, with which chain, over which attributes")
struct AdversarialCMSTests {
    /// Verifies `signature` over a fresh token with the authority's root trusted, at the authority's epoch.
    static func verify(_ authority: CraftAuthority, _ token: CraftedToken, _ signature: Data) throws
        -> PaymentTokenVerification
    {
        try authority.verifier().verify(jsonData: token.json(signature: signature))
    }

    /// Expects `code` from verifying `base` with `change` applied, signed by the authority's leaf key.
    static func expectRefusal(
        _ code: PaymentTokenError.Code, _ base: CraftedSignature, changedBy change: (inout CraftedSignature) -> Void,
        _ authority: CraftAuthority, _ token: CraftedToken, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        var craft = base
        change(&craft)
        let signed = craft
        await expectCode(code, sourceLocation: sourceLocation) {
            try verify(authority, token, try await signed.encode(signingKey: authority.leafKey))
        }
    }

    @Test("the crafted signature itself is accepted (the baseline every other test alters one thing of)")
    func baseline() async throws {
        let authority = try CraftAuthority()
        let token = try CraftedToken()
        let craft = CraftedSignature(authority: authority, content: token.signedContent)
        let verification = try Self.verify(authority, token, try await craft.encode(signingKey: authority.leafKey))
        #expect(verification.signer == authority.leaf)
        #expect(verification.signingTime == CraftAuthority.epoch)
        // Certificates in another order, and an unrelated extra certificate: still Apple's leaf, still valid.
        var shuffled = craft
        let strangerKey = try PrivateKey.generate(.p256)
        shuffled.certificates = [
            authority.intermediate, try CraftAuthority.selfSignedRoot(key: strangerKey, name: "Stranger"),
            authority.leaf,
        ]
        _ = try Self.verify(authority, token, try await shuffled.encode(signingKey: authority.leafKey))
    }

    @Test("the signer identifier must name Apple's leaf: not the intermediate, not another certificate of the chain")
    func signerIsTheLeaf() async throws {
        let authority = try CraftAuthority()
        let token = try CraftedToken()
        // sid names the intermediate, signed with the intermediate's key: it lacks the leaf marker.
        var byIntermediate = CraftedSignature(authority: authority, content: token.signedContent)
        byIntermediate.signerIdentifier = issuerAndSerial(of: authority.intermediate)
        await expectCode(.missingAppleExtension) {
            try Self.verify(authority, token, try await byIntermediate.encode(signingKey: authority.intermediateKey))
        }
        // An extra certificate issued by the real intermediate (so it chains to the root) but without .29.
        let otherKey = try PrivateKey.generate(.p256)
        let other = try CraftAuthority.issue(
            "other", key: otherKey, by: authority.intermediate, issuerKey: authority.intermediateKey)
        var byOther = CraftedSignature(authority: authority, content: token.signedContent)
        byOther.certificates.append(other)
        byOther.signerIdentifier = issuerAndSerial(of: other)
        await expectCode(.missingAppleExtension) {
            try Self.verify(authority, token, try await byOther.encode(signingKey: otherKey))
        }
        // sid names the real leaf but another key signed: the leaf's key is the one checked.
        var wrongKey = CraftedSignature(authority: authority, content: token.signedContent)
        wrongKey.certificates.append(other)
        await expectCode(.signatureInvalid) {
            try Self.verify(authority, token, try await wrongKey.encode(signingKey: otherKey))
        }
        // sid as a subject key identifier: the leaf's is accepted, the intermediate's is not a leaf.
        func keyIdentifier(_ certificate: Certificate) throws -> [UInt8] {
            let value = try #require(certificate.extensionValue(oid: "2.5.29.14"))
            return DER.tlv(0x80, Array(DER.content(Array(value)[...])))
        }
        var byLeafKeyIdentifier = CraftedSignature(authority: authority, content: token.signedContent)
        byLeafKeyIdentifier.signerIdentifier = try keyIdentifier(authority.leaf)
        #expect(
            try Self.verify(authority, token, try await byLeafKeyIdentifier.encode(signingKey: authority.leafKey))
                .signer
                == authority.leaf)
        var byIntermediateKeyIdentifier = byLeafKeyIdentifier
        byIntermediateKeyIdentifier.signerIdentifier = try keyIdentifier(authority.intermediate)
        await expectCode(.missingAppleExtension) {
            try Self.verify(
                authority, token, try await byIntermediateKeyIdentifier.encode(signingKey: authority.intermediateKey))
        }
        // sid names no embedded certificate.
        var nobody = CraftedSignature(authority: authority, content: token.signedContent)
        let leafIdentifier = DER.children(issuerAndSerial(of: authority.leaf)[...])
        nobody.signerIdentifier = DER.sequence(Array(leafIdentifier[0]), DER.integer(7))
        await expectCode(.malformedSignature) {
            try Self.verify(authority, token, try await nobody.encode(signingKey: authority.leafKey))
        }
    }

    @Test("a cache hit never changes the verdict: another signer, another key, another time")
    func cacheCannotBeSteered() async throws {
        let authority = try CraftAuthority()
        let verifier = try authority.verifier(maximumAge: 10 * CraftAuthority.year)
        let token = try CraftedToken()
        let good = CraftedSignature(authority: authority, content: token.signedContent)
        _ = try verifier.verify(jsonData: token.json(signature: try await good.encode(signingKey: authority.leafKey)))
        // Same certificates field (a cache hit by bytes), sid now naming the intermediate: the same code as on a
        // fresh verifier.
        var byIntermediate = good
        byIntermediate.signerIdentifier = issuerAndSerial(of: authority.intermediate)
        let forged = try token.json(signature: try await byIntermediate.encode(signingKey: authority.intermediateKey))
        expectCode(.missingAppleExtension) { try authority.verifier().verify(jsonData: forged) }
        expectCode(.missingAppleExtension) { try verifier.verify(jsonData: forged) }
        // Same certificates, a different key: the cached leaf key rejects it.
        let otherKey = try PrivateKey.generate(.p256)
        await expectCode(.signatureInvalid) {
            try verifier.verify(jsonData: token.json(signature: try await good.encode(signingKey: otherKey)))
        }
        // Same certificates, signed two years after the leaf expired: the cached chain is checked at that time.
        let late = CraftedSignature(
            authority: authority, content: token.signedContent,
            signingTime: CraftAuthority.epoch + 2 * CraftAuthority.year)
        await expectCode(.untrustedCertificateChain) {
            try verifier.verify(jsonData: token.json(signature: try await late.encode(signingKey: authority.leafKey)))
        }
    }

    @Test("the cache is keyed by the signer's certificate: extra certificates hit it, a missing intermediate does not")
    func cacheKeyedBySigner() async throws {
        let authority = try CraftAuthority()
        let warm = try authority.verifier()
        let token = try CraftedToken()
        let good = CraftedSignature(authority: authority, content: token.signedContent)
        _ = try warm.verify(jsonData: token.json(signature: try await good.encode(signingKey: authority.leafKey)))
        // Unrelated certificates appended (the certificates field is not signed): accepted, cold or warm.
        var padded = good
        padded.certificates.append(try CraftAuthority.selfSignedRoot(key: PrivateKey.generate(.p256), name: "pad"))
        let paddedJSON = try token.json(signature: try await padded.encode(signingKey: authority.leafKey))
        #expect(try warm.verify(jsonData: paddedJSON).signer == authority.leaf)
        #expect(try authority.verifier().verify(jsonData: paddedJSON).signer == authority.leaf)
        // Only the leaf embedded: the intermediate must be in the signature, also when the chain is cached.
        var leafOnly = good
        leafOnly.certificates = [authority.leaf]
        let leafOnlyJSON = try token.json(signature: try await leafOnly.encode(signingKey: authority.leafKey))
        expectCode(.missingAppleExtension) { try authority.verifier().verify(jsonData: leafOnlyJSON) }
        expectCode(.missingAppleExtension) { try warm.verify(jsonData: leafOnlyJSON) }
        // A look-alike placed before the leaf with the leaf's issuer name and serial number: the signer identifier
        // names it first, so it is the signer (and lacks the marker), cold or warm.
        let twinCAKey = try PrivateKey.generate(.p256)
        let twinCA = try CraftAuthority.issue(
            "Craft Integration CA", key: twinCAKey, by: authority.root, issuerKey: authority.rootKey,
            constraints: .certificateAuthority(pathLength: 0))
        #expect(twinCA.subject == authority.intermediate.subject)
        let twinKey = try PrivateKey.generate(.p256)
        var twinBuilder = CertificateBuilder(
            subject: DistinguishedName(commonName: "twin", organization: "Tests", country: "US"),
            publicKey: twinKey.publicKey, notBefore: CraftAuthority.epoch - CraftAuthority.year,
            notAfter: CraftAuthority.epoch + CraftAuthority.year)
        twinBuilder.serialNumber = Data(DER.content(DER.children(issuerAndSerial(of: authority.leaf)[...])[1]))
        let twin = try twinBuilder.signed(by: twinCA, key: twinCAKey)
        #expect(issuerAndSerial(of: twin) == issuerAndSerial(of: authority.leaf))
        var twinFirst = good
        twinFirst.certificates = [twin, authority.leaf, authority.intermediate]
        let twinJSON = try token.json(signature: try await twinFirst.encode(signingKey: authority.leafKey))
        expectCode(.missingAppleExtension) { try authority.verifier().verify(jsonData: twinJSON) }
        expectCode(.missingAppleExtension) { try warm.verify(jsonData: twinJSON) }
    }

    @Test("chains: the leaf's issuer must carry .2.14 and be a CA; roots are trusted by key, not by name")
    func chains() async throws {
        let authority = try CraftAuthority()
        let token = try CraftedToken()
        // The leaf is issued by an intermediate without .2.14, while an unrelated embedded CA carries it.
        let plainKey = try PrivateKey.generate(.p256)
        let plain = try CraftAuthority.issue(
            "plain CA", key: plainKey, by: authority.root, issuerKey: authority.rootKey,
            constraints: .certificateAuthority(pathLength: 0))
        let underPlain = try await CraftedSignature.byNewLeaf(
            "leaf under plain", issuer: plain, issuerKey: plainKey, chain: [plain, authority.intermediate],
            authority: authority, content: token.signedContent)
        expectCode(.missingAppleExtension) { try Self.verify(authority, token, underPlain) }
        // An intermediate with .2.14 that is not a CA.
        let notCAKey = try PrivateKey.generate(.p256)
        let notCA = try CraftAuthority.issue(
            "not a CA", key: notCAKey, by: authority.root, issuerKey: authority.rootKey, constraints: .endEntity,
            markers: [ApplePayOID.intermediateMarker])
        let underNotCA = try await CraftedSignature.byNewLeaf(
            "leaf under not-CA", issuer: notCA, issuerKey: notCAKey, chain: [notCA], authority: authority,
            content: token.signedContent)
        expectCode(.untrustedCertificateChain) { try Self.verify(authority, token, underNotCA) }
        // pathLength 0 on the intermediate, and a second CA under it that issues the leaf.
        let subKey = try PrivateKey.generate(.p256)
        let sub = try CraftAuthority.issue(
            "sub CA", key: subKey, by: authority.intermediate, issuerKey: authority.intermediateKey,
            constraints: .certificateAuthority(pathLength: nil), markers: [ApplePayOID.intermediateMarker])
        let tooDeep = try await CraftedSignature.byNewLeaf(
            "leaf under sub", issuer: sub, issuerKey: subKey, chain: [sub, authority.intermediate],
            authority: authority, content: token.signedContent)
        expectCode(.untrustedCertificateChain) { try Self.verify(authority, token, tooDeep) }
        // A look-alike root (same name, another key) with its own intermediate and leaf, all embedded.
        let fakeRootKey = try PrivateKey.generate(.p256)
        let fakeRoot = try CraftAuthority.selfSignedRoot(key: fakeRootKey, name: "Craft Root CA")
        #expect(fakeRoot.subject == authority.root.subject)
        let fakeIntermediateKey = try PrivateKey.generate(.p256)
        let fakeIntermediate = try CraftAuthority.issue(
            "Craft Integration CA", key: fakeIntermediateKey, by: fakeRoot, issuerKey: fakeRootKey,
            constraints: .certificateAuthority(pathLength: 0), markers: [ApplePayOID.intermediateMarker])
        let lookAlike = try await CraftedSignature.byNewLeaf(
            "craft-smp-broker-sign", issuer: fakeIntermediate, issuerKey: fakeIntermediateKey,
            chain: [fakeIntermediate, fakeRoot], authority: authority, content: token.signedContent)
        expectCode(.untrustedCertificateChain) { try Self.verify(authority, token, lookAlike) }
        // A self-signed certificate carrying both markers, even when the caller trusts it as a root.
        let selfKey = try PrivateKey.generate(.p256)
        var selfBuilder = CertificateBuilder(
            subject: DistinguishedName(commonName: "both markers", organization: "Tests", country: "US"),
            publicKey: selfKey.publicKey, notBefore: CraftAuthority.epoch - CraftAuthority.year,
            notAfter: CraftAuthority.epoch + CraftAuthority.year)
        selfBuilder.basicConstraints = .certificateAuthority(pathLength: nil)
        selfBuilder.extensions = [.marker(oid: ApplePayOID.leafMarker), .marker(oid: ApplePayOID.intermediateMarker)]
        let both = try selfBuilder.selfSigned(with: selfKey)
        var selfSigned = CraftedSignature(authority: authority, content: token.signedContent)
        selfSigned.certificates = [both]
        selfSigned.signerIdentifier = issuerAndSerial(of: both)
        let selfSignature = try await selfSigned.encode(signingKey: selfKey)
        expectCode(.missingAppleExtension) {
            try PaymentTokenVerifier(roots: [both], now: { CraftAuthority.epoch }).verify(
                jsonData: token.json(signature: selfSignature))
        }
        selfSigned.certificates = [both, both]
        let twice = try await selfSigned.encode(signingKey: selfKey)
        expectCode(.missingAppleExtension) {
            try PaymentTokenVerifier(roots: [both], now: { CraftAuthority.epoch }).verify(
                jsonData: token.json(signature: twice))
        }
    }

    @Test("signed attributes: each one missing, doubled, misplaced or of the wrong kind")
    func signedAttributes() async throws {
        let (authority, token, base) = try CraftedSignature.fresh()
        let (contentType, signingTime, messageDigest) = (base.attributes[0], base.attributes[1], base.attributes[2])
        func check(_ code: PaymentTokenError.Code, _ change: (inout CraftedSignature) -> Void) async {
            await Self.expectRefusal(code, base, changedBy: change, authority, token)
        }
        await check(.malformedSignature) { $0.attributes = [contentType, signingTime] }
        await check(.malformedSignature) { $0.attributes = [contentType, signingTime, messageDigest, messageDigest] }
        await check(.malformedSignature) {
            $0.attributes[2] = CraftedSignature.attribute(
                OIDs.messageDigest, DER.octets(Digest.sha256(token.signedContent)), DER.octets(Data(count: 32)))
        }
        await check(.signatureInvalid) {
            $0.attributes[2] = CraftedSignature.attribute(
                OIDs.messageDigest, DER.octets(Digest.sha256(token.signedContent).prefix(31)))
        }
        await check(.signatureInvalid) {
            $0.attributes[2] = CraftedSignature.attribute(
                OIDs.messageDigest, DER.octets(Digest.sha256(token.signedContent) + Data([0])))
        }
        await check(.malformedSignature) { $0.attributes = [contentType, messageDigest] }
        await check(.malformedSignature) { $0.attributes = [contentType, signingTime, signingTime, messageDigest] }
        await check(.malformedSignature) {
            $0.attributes = [contentType, messageDigest]
            $0.unsignedAttributes = [signingTime]
        }
        await check(.malformedSignature) {
            $0.attributes[0] = CraftedSignature.attribute(OIDs.contentType, DER.oid(OIDs.signedData))
        }
        await check(.malformedSignature) { $0.attributes = [signingTime, messageDigest] }
        // A second signing time in the unsigned attributes does not replace the signed one.
        var unsignedTime = base
        unsignedTime.unsignedAttributes = [
            CraftedSignature.attribute(OIDs.signingTime, DER.utcTime(CraftAuthority.epoch + 3 * 86_400))
        ]
        let verification = try Self.verify(
            authority, token, try await unsignedTime.encode(signingKey: authority.leafKey))
        #expect(verification.signingTime == CraftAuthority.epoch)
        // Not DER-sorted (OpenSSL keeps the received order when verifying, so do we): accepted, as signed.
        var unsorted = base
        unsorted.attributes = [messageDigest, signingTime, contentType]
        _ = try Self.verify(authority, token, try await unsorted.encode(signingKey: authority.leafKey))
    }

    @Test("a root with Apple Root CA - G3's exact name but another key, embedded or not: untrustedCertificateChain")
    func appleNamedRoot() async throws {
        let apple = try AppleRootCertificateAuthority.g3
        let rootKey = try PrivateKey.generate(.p384)
        var rootBuilder = CertificateBuilder(
            subject: DistinguishedName([
                .init(.commonName, "Apple Root CA - G3"), .init(.organizationalUnit, "Apple Certification Authority"),
                .init(.organization, "Apple Inc."), .init(.country, "US"),
            ]), publicKey: rootKey.publicKey, notBefore: CraftAuthority.epoch - 10 * CraftAuthority.year,
            notAfter: CraftAuthority.epoch + 10 * CraftAuthority.year)
        rootBuilder.basicConstraints = .certificateAuthority(pathLength: nil)
        rootBuilder.keyUsage = [.keyCertSign, .cRLSign]
        let fakeRoot = try rootBuilder.selfSigned(with: rootKey, digest: .sha384)
        #expect(fakeRoot.subject == apple.subject)
        let intermediateKey = try PrivateKey.generate(.p256)
        let intermediate = try CraftAuthority.issue(
            "Apple Application Integration CA - G3", key: intermediateKey, by: fakeRoot, issuerKey: rootKey,
            constraints: .certificateAuthority(pathLength: 0), markers: [ApplePayOID.intermediateMarker])
        let leafKey = try PrivateKey.generate(.p256)
        let leaf = try CraftAuthority.issue(
            "ecc-smp-broker-sign_UC4-PROD", key: leafKey, by: intermediate, issuerKey: intermediateKey,
            markers: [ApplePayOID.leafMarker])
        let token = try CraftedToken()
        let verifier = try PaymentTokenVerifier(now: { CraftAuthority.epoch })
        for certificates in [[leaf, intermediate], [leaf, intermediate, fakeRoot], [fakeRoot, intermediate, leaf]] {
            let signature = try await CraftedSignature.by(
                leaf, key: leafKey, certificates: certificates, authority: try CraftAuthority(),
                content: token.signedContent)
            let json = try token.json(signature: signature)
            expectCode(.untrustedCertificateChain) { try verifier.verify(jsonData: json) }
        }
    }

    @Test("signing times at the edges of what ASN.1 can say: a clear code, no trap in parsing or in messages")
    func extremeSigningTimes() async throws {
        let (authority, token, base) = try CraftedSignature.fresh()
        func signed(_ time: [UInt8]) async throws -> Data {
            var craft = base
            craft.attributes[1] = CraftedSignature.attribute(OIDs.signingTime, time)
            return try token.json(signature: try await craft.encode(signingKey: authority.leafKey))
        }
        let wide = try authority.verifier(maximumAge: .infinity)
        for text in ["00000101000000Z", "99991231235959Z", "18500101000000Z"] {
            let json = try await signed(DER.tlv(0x18, Array(text.utf8)))
            expectCode(.untrustedCertificateChain) { try wide.verify(jsonData: json) }
        }
        let json1950 = try await signed(DER.tlv(0x17, Array("500101000000Z".utf8)))
        expectCode(.untrustedCertificateChain) { try wide.verify(jsonData: json1950) }
        // Not a time: month 13, a local offset, fractions, letters, empty.
        for (tag, text) in [
            (UInt8(0x17), "231314000000Z"), (0x17, "2311142213+0100"), (0x18, "20231114221320.5Z"),
            (0x17, "23111422132aZ"),
            (0x17, ""), (0x04, "231114221320Z"),
        ] {
            let json = try await signed(DER.tlv(tag, Array(text.utf8)))
            expectCode(.malformedSignature) { try wide.verify(jsonData: json) }
        }
        // Inside the chain's validity but far from now: signingTimeOutOfRange, in the past and in the future.
        let verifier = try authority.verifier(now: CraftAuthority.epoch)
        for offset in [-301.0, 301] {
            let time = CraftAuthority.epoch + offset
            let json = try await signed(DER.utcTime(time))
            expectCode(.signingTimeOutOfRange) { try verifier.verify(jsonData: json) }
        }
    }

    @Test("algorithms: only SHA-256 with ECDSA (EC_v1); SHA-1, SHA-384 and RSA-PSS claims are refused")
    func algorithms() async throws {
        let (authority, token, base) = try CraftedSignature.fresh()
        func check(_ code: PaymentTokenError.Code, _ change: (inout CraftedSignature) -> Void) async {
            await Self.expectRefusal(code, base, changedBy: change, authority, token)
        }
        await check(.malformedSignature) { $0.digestAlgorithm = DER.algorithm(OIDs.sha384) }
        await check(.malformedSignature) { $0.digestAlgorithm = DER.algorithm("1.3.14.3.2.26") }
        await check(.malformedSignature) { $0.signatureAlgorithm = DER.algorithm(OIDs.ecdsaSHA384) }
        await check(.malformedSignature) { $0.signatureAlgorithm = DER.algorithm(OIDs.rsaPSS) }
        await check(.malformedSignature) { $0.signatureAlgorithm = DER.algorithm(OIDs.sha256RSA) }
        // ECDSA signature with bytes after the DER SEQUENCE, or cut short.
        await check(.signatureInvalid) { $0.alterSignature = { $0 + [0] } }
        await check(.signatureInvalid) { $0.alterSignature = { Array($0.dropLast()) } }
        await check(.signatureInvalid) { $0.alterSignature = { _ in [] } }
        // An RSA_v1 token with an ECDSA signature.
        let signature = try await base.encode(signingKey: authority.leafKey)
        expectCode(.malformedSignature) {
            try authority.verifier().verify(
                jsonData: token.json(signature: signature, version: "RSA_v1").replacing(
                    Data("ephemeralPublicKey".utf8), with: Data("wrappedKey".utf8)))
        }
    }

    @Test("structure: embedded content, two signers, BER nesting, lengths past the end or overflowing")
    func structure() async throws {
        let (authority, token, base) = try CraftedSignature.fresh()
        var embedded = base
        embedded.embeddedContent = Array(token.signedContent)
        await expectCode(.malformedSignature) {
            try Self.verify(authority, token, try await embedded.encode(signingKey: authority.leafKey))
        }
        var two = base
        two.signerInfoCount = 2
        await expectCode(.malformedSignature) {
            try Self.verify(authority, token, try await two.encode(signingKey: authority.leafKey))
        }
        let good = Array(try await base.encode(signingKey: authority.leafKey))
        let verifier = try authority.verifier()
        func rejects(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
            expectCode(.malformedSignature, sourceLocation: sourceLocation) {
                try verifier.verify(jsonData: token.json(signature: Data(bytes)))
            }
        }
        // Deep BER: 10,000 nested indefinite-length SEQUENCEs, and 30 (past the reader's depth limit).
        rejects(Array(repeating: [0x30, 0x80], count: 10_000).flatMap { $0 } + Array(repeating: 0, count: 20_000))
        rejects(Array(repeating: [0x30, 0x80], count: 30).flatMap { $0 } + Array(repeating: 0, count: 60))
        // The outer length claims more than there is, 4 GB, 2^64-1 (8 length bytes), or zero.
        rejects([0x30, 0x84, 0xff, 0xff, 0xff, 0xff] + good.dropFirst(4))
        rejects([0x30, 0x88, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff] + good.dropFirst(4))
        rejects([0x30, 0x82, 0xff, 0xff] + good.dropFirst(4))
        rejects([0x30, 0x00])
        rejects([0x30, 0x80, 0x00, 0x00])
        rejects(good + [0x00])
        // Every truncation of the real structure: an error, never a crash.
        for length in stride(from: 1, to: good.count, by: 7) { rejects(Array(good.prefix(length))) }
        // The outer SEQUENCE re-encoded with an indefinite length (BER, as Apple's own tokens are): accepted.
        let inner = Array(DER.content(good[...]))
        _ = try verifier.verify(jsonData: token.json(signature: Data([0x30, 0x80] + inner + [0, 0])))
    }
}

/// The same ECDSA signature with s replaced by n − s (P-256): equally valid, a different encoding.
func highS(_ signature: [UInt8]) -> [UInt8] {
    let order: [UInt8] = [
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6,
        0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
    ]
    let parts = DER.children(signature[...])
    let r = Array(parts[0])
    var s = Array(DER.content(parts[1]).drop { $0 == 0 })
    s = Array(repeating: 0, count: 32 - s.count) + s
    var difference = [UInt8](repeating: 0, count: 32)
    var borrow = 0
    for index in stride(from: 31, through: 0, by: -1) {
        var value = Int(order[index]) - Int(s[index]) - borrow
        borrow = value < 0 ? 1 : 0
        if value < 0 { value += 256 }
        difference[index] = UInt8(value)
    }
    var content = Array(difference.drop { $0 == 0 })
    if let first = content.first, first & 0x80 != 0 { content.insert(0, at: 0) }
    return DER.tlv(0x30, r + DER.tlv(0x02, content))
}
