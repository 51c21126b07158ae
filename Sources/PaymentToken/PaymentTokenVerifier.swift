import Cryptography
import Foundation
import Foundations
import Synchronization

/// What verification established about a token.
public struct PaymentTokenVerification: Sendable {
    /// EC_v1 or RSA_v1.
    public let version: PaymentToken.Version
    /// The CMS signing time (certificate validity was checked at this time).
    public let signingTime: Date
    /// `header.transactionId` in lowercase hex: the identifier to use for replay detection.
    ///
    /// Apple signs key ‖ data ‖ transactionId ‖ applicationData with no lengths, and `data` is authenticated only
    /// by decryption. Verification alone therefore cannot stop bytes moving between the end of `data` and
    /// transactionId when applicationData is added or removed at the same time: use this as a replay key only
    /// after `PaymentTokenDecryptor` opened the token, or when the caller knows whether applicationData is present.
    public let transactionId: String
    /// `header.publicKeyHash`: not covered by Apple's signature (decryption with the matching key is what binds it).
    public let publicKeyHash: Data
    /// `header.applicationData` (a SHA-256), when present.
    public let applicationData: Data?
    /// Apple's leaf certificate that signed the token.
    public let signer: Certificate
    /// The trusted root the signer's chain ended at.
    public let root: Certificate
}

/// Checks Apple Pay tokens without decrypting them: the CMS signature, Apple's marker extensions, the chain to a
/// trusted root at the signing time, and the signing time against "now".
///
/// Configure once and share: it holds the trust store and caches, per distinct set of embedded certificates, the
/// verified chain and a prepared verifier for the leaf key (keyed by the signer certificate's DER bytes; a hit also
/// needs the chain's intermediates among the embedded certificates, so unsigned extra certificates neither miss the
/// cache nor evict the entries of genuine tokens).
/// Per token it then costs two SHA-256 passes, one signature verification and a date comparison. Validity is
/// still checked for each token at its own signing time. Safe to call from many threads at once.
public final class PaymentTokenVerifier: Sendable {
    /// The roots tokens must chain to.
    public let trustStore: TrustStore
    /// How far the signing time may be from "now", either way (seconds).
    public let maximumAge: TimeInterval
    private let now: @Sendable () -> Date
    private let cache = Mutex<[CachedSigner]>([])
    private static let cacheLimit = 16

    struct CachedSigner: Sendable {
        /// The signer's certificate, byte for byte.
        let leafDER: [UInt8]
        /// The certificates of the chain between the leaf and the root, byte for byte.
        let intermediatesDER: [[UInt8]]
        let leaf: Certificate
        let verifier: SignatureVerifier
        let chain: VerifiedCertificateChain
    }

    /// - Parameters:
    ///   - roots: trusted roots; nil (the default) trusts only Apple Root CA - G3, bundled.
    ///   - maximumAge: the window around "now" the signing time must fall in; Apple recommends 5 minutes.
    ///   - now: the clock; inject a fixed time to check old tokens (and in tests).
    /// - Throws: `PaymentTokenError.untrustedCertificateChain` when the roots cannot be used.
    public init(
        roots: [Certificate]? = nil, maximumAge: TimeInterval = 300, now: @escaping @Sendable () -> Date = { Date() }
    ) throws(PaymentTokenError) {
        do {
            trustStore = try TrustStore(roots: roots ?? [AppleRootCertificateAuthority.g3])
        } catch {
            throw PaymentTokenError(.untrustedCertificateChain, "the trusted roots cannot be used: \(error)")
        }
        self.maximumAge = max(0, maximumAge)
        self.now = now
    }

    /// Parses and verifies a token's JSON.
    public func verify(jsonData: some DataProtocol) throws(PaymentTokenError) -> PaymentTokenVerification {
        try verify(try PaymentToken(jsonData: jsonData))
    }

    /// Verifies a parsed token, in Apple's order: marker extensions, chain at the signing time, signature, freshness.
    /// - Throws: `PaymentTokenError` with the code of the first check that failed.
    public func verify(_ token: PaymentToken) throws(PaymentTokenError) -> PaymentTokenVerification {
        let verification = try verifyIgnoringAge(token)
        try checkAge(of: verification)
        return verification
    }

    /// Every check of ``verify(_:)`` but the last: the signing time is not compared with "now". For a caller that
    /// must recognise an old token (a late retry of a payment already made) and calls ``checkAge(of:)`` before
    /// acting on a new one.
    public func verifyIgnoringAge(_ token: PaymentToken) throws(PaymentTokenError) -> PaymentTokenVerification {
        let message: CMSSignedData
        do {
            message = try CMSSignedData(berEncoded: token.signature)
        } catch {
            throw PaymentTokenError(
                .malformedSignature, "paymentData.signature is not a CMS signature Apple would produce: \(error)")
        }
        guard message.isECDSA == (token.version == .ecV1) else {
            throw PaymentTokenError(
                .malformedSignature,
                "\(token.version.rawValue) tokens are signed with \(token.version == .ecV1 ? "ECDSA" : "RSA"), this one is not"
            )
        }
        guard let signingTime = message.signingTime else {
            throw PaymentTokenError(.malformedSignature, "the signature has no signing time")
        }
        let signer = try cachedSigner(for: message)
        guard signer.chain.isValid(at: signingTime) else {
            throw PaymentTokenError(
                .untrustedCertificateChain,
                "a certificate of the chain is not valid at the signing time \(Self.format(signingTime)) (chain valid \(Self.format(signer.chain.validFrom)) to \(Self.format(signer.chain.validUntil)))"
            )
        }
        do {
            try message.verify(contentDigest: token.signedContentDigest, verifier: signer.verifier)
        } catch {
            throw PaymentTokenError(
                .signatureInvalid,
                "the signature does not match the token's key, data, transactionId and applicationData: \((error as? CryptographyError)?.message ?? "\(error)")"
            )
        }
        return PaymentTokenVerification(
            version: token.version, signingTime: signingTime, transactionId: token.transactionIdHex,
            publicKeyHash: Data(token.publicKeyHash), applicationData: token.applicationData.map { Data($0) },
            signer: signer.leaf, root: signer.chain.certificates.last ?? signer.leaf)
    }

    /// Checks that the verified token was signed within ``maximumAge`` of "now", either way.
    /// - Throws: `PaymentTokenError.signingTimeOutOfRange` otherwise.
    public func checkAge(of verification: PaymentTokenVerification) throws(PaymentTokenError) {
        let current = now()
        let signingTime = verification.signingTime
        guard abs(current.timeIntervalSince(signingTime)) <= maximumAge else {
            throw PaymentTokenError(
                .signingTimeOutOfRange,
                "the token was signed at \(Self.format(signingTime)), more than \(maximumAge) s from now (\(Self.format(current))): a replay, or a wrong clock"
            )
        }
    }

    /// The verified chain and leaf verifier for the message's certificates, from the cache or checked now.
    private func cachedSigner(for message: CMSSignedData) throws(PaymentTokenError) -> CachedSigner {
        // A hit needs the certificate the signer identifier names (the first match, as below) to be a cached leaf,
        // and that leaf's chain to be embedded too: then the full checks below would build the same chain, so the
        // verdict and its code never depend on what was verified before. Few distinct Apple leaves are live at
        // once: a short list compared byte for byte beats hashing.
        let signerBytes = message.signerCertificateBytes
        if let signerBytes {
            let found = cache.withLock { entries in
                entries.first { entry in
                    PaymentTokenVerifier.equalBytes(entry.leafDER, signerBytes)
                        && entry.intermediatesDER.allSatisfy { message.embedsCertificate(der: $0) }
                }
            }
            if let found { return found }
        }
        let certificates: [Certificate]
        do {
            certificates = try message.certificates.map { try Certificate(der: $0) }
        } catch {
            throw PaymentTokenError(.malformedSignature, "an embedded certificate cannot be read: \(error)")
        }
        guard let index = message.signerIndex(in: certificates) else {
            throw PaymentTokenError(
                .malformedSignature, "the signer's certificate is not among the embedded certificates")
        }
        let leaf = certificates[index]
        var intermediates = certificates
        intermediates.remove(at: index)
        guard leaf.hasExtension(oid: ApplePayOID.leafMarker) else {
            throw PaymentTokenError(
                .missingAppleExtension,
                "the signing certificate (\(leaf.subject)) lacks Apple's Apple Pay leaf marker 1.2.840.113635.100.6.29")
        }
        guard intermediates.contains(where: { $0.hasExtension(oid: ApplePayOID.intermediateMarker) }) else {
            throw PaymentTokenError(
                .missingAppleExtension, "no embedded intermediate carries Apple's marker 1.2.840.113635.100.6.2.14")
        }
        let chain: VerifiedCertificateChain
        do {
            chain = try trustStore.verify(leaf, intermediates: intermediates, at: nil)
        } catch {
            throw PaymentTokenError(
                .untrustedCertificateChain, "the signing certificate does not chain to a trusted root: \(error)")
        }
        guard chain.certificates.count >= 3, chain.certificates[1].hasExtension(oid: ApplePayOID.intermediateMarker)
        else {
            throw PaymentTokenError(
                .missingAppleExtension,
                "the certificate that issued the leaf lacks Apple's marker 1.2.840.113635.100.6.2.14")
        }
        let verifier: SignatureVerifier
        do {
            verifier = try SignatureVerifier(publicKey: leaf.publicKey)
        } catch {
            throw PaymentTokenError(.malformedSignature, "the signing certificate's key cannot verify: \(error)")
        }
        let entry = CachedSigner(
            leafDER: Array(leaf.derRepresentation),
            intermediatesDER: chain.certificates.dropFirst().dropLast().map { Array($0.derRepresentation) },
            leaf: leaf, verifier: verifier, chain: chain)
        // Only a signer named by issuer and serial number can be looked up by its bytes.
        guard signerBytes != nil else { return entry }
        cache.withLock { entries in
            // Another thread may have verified the same chain meanwhile: keep one entry.
            guard
                !entries.contains(where: {
                    $0.leafDER == entry.leafDER && $0.intermediatesDER == entry.intermediatesDER
                })
            else { return }
            if entries.count >= PaymentTokenVerifier.cacheLimit { entries.removeFirst() }
            entries.append(entry)
        }
        return entry
    }

    /// Byte-for-byte equality with `memcmp`.
    static func equalBytes(_ a: [UInt8], _ b: ArraySlice<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in
                guard let p = x.baseAddress, let q = y.baseAddress else { return x.count == y.count }
                return memcmp(p, q, x.count) == 0
            }
        }
    }

    static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
