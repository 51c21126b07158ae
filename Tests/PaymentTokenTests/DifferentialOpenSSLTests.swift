import Cryptography
import Foundation
import PaymentToken
import TestSupport
import Testing

/// The Swift CMS reader and chain checks against OpenSSL's own command-line verifier, case by case.
///
/// Signature only: `CMSSignedData.verifyDetached` against `openssl cms -verify -binary -inform DER -noverify`.
/// Chain only: `TrustStore.verify(_:intermediates:at:)` against `openssl verify -attime T -CAfile ROOT -untrusted`.
@Suite("Differential: the Swift verifier's verdicts match openssl cms / openssl verify")
struct DifferentialOpenSSLTests {
    /// One signature to judge.
    struct Case: Sendable {
        let name: String
        let signature: Data
        let content: Data
    }

    /// The signature and signed bytes of a token JSON (bare paymentData or a whole PKPaymentToken).
    static func signedParts(_ json: Data) throws -> (signature: Data, content: Data) {
        let top = try #require(JSONSerialization.jsonObject(with: json) as? [String: Any])
        let paymentData = (top["paymentData"] as? [String: Any]) ?? top
        let header = try #require(paymentData["header"] as? [String: Any])
        func base64(_ value: Any?) throws -> Data { try #require(Data(base64Encoded: value as? String ?? "")) }
        func hex(_ value: Any?) throws -> Data {
            let text = Array((value as? String ?? "").utf8)
            var out = Data()
            var index = 0
            while index + 1 < text.count {
                out.append(try #require(UInt8(String(decoding: text[index...index + 1], as: UTF8.self), radix: 16)))
                index += 2
            }
            return out
        }
        var content = try base64(header["ephemeralPublicKey"] ?? header["wrappedKey"])
        content += try base64(paymentData["data"])
        content += try hex(header["transactionId"])
        if let application = header["applicationData"] as? String { content += try hex(application) }
        return (try base64(paymentData["signature"]), content)
    }

    static func swiftAcceptsSignature(_ item: Case) -> Bool {
        (try? CMSSignedData.verifyDetached(item.signature, content: item.content)) != nil
    }

    static func opensslAcceptsSignature(_ item: Case, in directory: TemporaryDirectory) async throws -> (Bool, String) {
        let signatureFile = directory.url.appendingPathComponent("\(item.name).sig.der")
        let contentFile = directory.url.appendingPathComponent("\(item.name).content")
        try item.signature.write(to: signatureFile)
        try item.content.write(to: contentFile)
        let result = try await Subprocess.run(
            "openssl",
            [
                "cms", "-verify", "-binary", "-inform", "DER", "-in", signatureFile.path, "-content", contentFile.path,
                "-noverify", "-purpose", "any", "-out", "/dev/null",
            ], timeout: 60)
        return (result.status == 0, result.standardError)
    }

    static func realCases() throws -> [Case] {
        var cases: [Case] = []
        for folder in TokenFixture.all {
            let fixture = try TokenFixture(folder)
            let (signature, content) = try signedParts(fixture.tokenJSON)
            cases.append(Case(name: folder, signature: signature, content: content))
            var data = content
            data[data.count / 2] ^= 0x01
            cases.append(Case(name: "\(folder)-content-flipped", signature: signature, content: data))
            cases.append(Case(name: "\(folder)-content-shorter", signature: signature, content: content.dropLast()))
            // A bit of the signature value itself (found by its bytes in the encoding) flipped.
            let value = try CMSSignedData(berEncoded: signature).signature
            let range = try #require(signature.range(of: value))
            var flipped = signature
            flipped[range.lowerBound + value.count / 2] ^= 0x01
            cases.append(Case(name: "\(folder)-signature-flipped", signature: flipped, content: content))
        }
        return cases
    }

    static func craftedCases() async throws -> [Case] {
        let authority = try CraftAuthority()
        let token = try CraftedToken()
        let content = token.signedContent
        let base = CraftedSignature(authority: authority, content: content)
        let (contentType, signingTime, messageDigest) = (base.attributes[0], base.attributes[1], base.attributes[2])
        var variants: [(String, CraftedSignature, PrivateKey)] = [("crafted", base, authority.leafKey)]
        func variant(_ name: String, key: PrivateKey? = nil, _ change: (inout CraftedSignature) -> Void) {
            var craft = base
            change(&craft)
            variants.append((name, craft, key ?? authority.leafKey))
        }
        variant("no-message-digest") { $0.attributes = [contentType, signingTime] }
        variant("two-message-digests") { $0.attributes = [contentType, signingTime, messageDigest, messageDigest] }
        variant("short-message-digest") {
            $0.attributes[2] = CraftedSignature.attribute(
                OIDs.messageDigest, DER.octets(Digest.sha256(content).prefix(31)))
        }
        variant("no-signing-time") { $0.attributes = [contentType, messageDigest] }
        variant("unsorted-attributes") { $0.attributes = [messageDigest, signingTime, contentType] }
        variant("sha384-claimed") { $0.digestAlgorithm = DER.algorithm(OIDs.sha384) }
        variant("ecdsa-sha384-claimed") { $0.signatureAlgorithm = DER.algorithm(OIDs.ecdsaSHA384) }
        variant("signature-trailing-byte") { $0.alterSignature = { $0 + [0] } }
        variant("other-key", key: try PrivateKey.generate(.p256)) { _ in }
        variant("sid-names-intermediate", key: authority.intermediateKey) {
            $0.signerIdentifier = issuerAndSerial(of: authority.intermediate)
        }
        variant("two-signers") { $0.signerInfoCount = 2 }
        variant("high-s") { $0.alterSignature = highS }
        variant("indefinite-signed-attributes") { $0.indefiniteSignedAttributes = true }
        // The content-type attribute's SEQUENCE with a long-form length: BER, not the DER that was signed.
        variant("non-minimal-attribute-length") {
            $0.alterEncodedAttributes = { bytes in [0x30, 0x81] + bytes.dropFirst() }
        }
        var cases: [Case] = []
        for (name, craft, key) in variants {
            cases.append(Case(name: name, signature: try await craft.encode(signingKey: key), content: content))
        }
        return cases
    }

    /// Cases where the Swift reader is deliberately stricter than OpenSSL (Swift refuses, `openssl cms` accepts), with
    /// the reason. Every other verdict must be equal.
    static let swiftStricter: [String: String] = [
        // RFC 5652 allows several SignerInfos (OpenSSL then needs all to verify); Apple uses exactly one, and
        // accepting more would only widen what is parsed.
        "two-signers": "exactly one signer",
        // OpenSSL takes the digest from the signature algorithm's key type and the SignerInfo's digestAlgorithm;
        // Apple always signs ECDSA-SHA256, so any other claimed algorithm is refused before any arithmetic.
        "ecdsa-sha384-claimed": "ECDSA-SHA256 only",
        // OpenSSL re-encodes received signed attributes as DER before hashing; the Swift reader hashes the bytes it
        // read (after re-tagging [0] as SET, and re-wrapping an indefinite outer length), so BER inside an attribute
        // fails. What is hashed is exactly what is parsed, and Apple signs DER.
        "non-minimal-attribute-length": "signed attributes must be DER inside",
    ]

    @Test("signature verdicts: real tokens, tampered tokens and crafted signatures")
    func signatureVerdicts() async throws {
        let directory = try TemporaryDirectory(prefix: "differential-cms")
        defer { directory.remove() }
        let cases = try Self.realCases() + (try await Self.craftedCases())
        var realAccepted = 0
        for item in cases {
            let swift = Self.swiftAcceptsSignature(item)
            let (openssl, message) = try await Self.opensslAcceptsSignature(item, in: directory)
            if TokenFixture.all.contains(item.name) {
                #expect(swift, "\(item.name): a real token's signature must verify")
                if swift { realAccepted += 1 }
            }
            if let reason = Self.swiftStricter[item.name] {
                #expect(!swift && openssl, "\(item.name): Swift should refuse (\(reason)) what openssl accepts")
            } else {
                #expect(
                    swift == openssl,
                    "\(item.name): Swift \(swift ? "accepts" : "rejects"), openssl \(openssl ? "accepts" : "rejects") \(message.prefix(300))"
                )
            }
        }
        #expect(realAccepted == TokenFixture.all.count)
    }

    @Test("chain verdicts at the signing time, before the leaf's start and after its end")
    func chainVerdicts() async throws {
        let directory = try TemporaryDirectory(prefix: "differential-chain")
        defer { directory.remove() }
        let root = try AppleRootCertificateAuthority.g3
        let rootFile = directory.url.appendingPathComponent("root.pem")
        try Data(root.pemRepresentation.utf8).write(to: rootFile)
        let store = try TrustStore(roots: [root])
        for folder in TokenFixture.all {
            let fixture = try TokenFixture(folder)
            let (signature, _) = try Self.signedParts(fixture.tokenJSON)
            let message = try CMSSignedData(berEncoded: signature)
            let certificates = try message.certificates.map { try Certificate(der: $0) }
            let index = try #require(message.signerIndex(in: certificates))
            let leaf = certificates[index]
            var intermediates = certificates
            intermediates.remove(at: index)
            let leafFile = directory.url.appendingPathComponent("\(folder)-leaf.pem")
            let untrustedFile = directory.url.appendingPathComponent("\(folder)-untrusted.pem")
            try Data(leaf.pemRepresentation.utf8).write(to: leafFile)
            try Data(intermediates.map(\.pemRepresentation).joined().utf8).write(to: untrustedFile)
            let times: [(String, Date, Bool)] = [
                ("signing time", fixture.signingTime, true),
                ("a day before the leaf", leaf.notBefore - 86_400, false),
                ("a day after the leaf", leaf.notAfter + 86_400, false),
            ]
            for (label, time, expected) in times {
                let swift = (try? store.verify(leaf, intermediates: intermediates, at: time)) != nil
                let result = try await Subprocess.run(
                    "openssl",
                    [
                        "verify", "-attime", String(Int(time.timeIntervalSince1970)), "-CAfile", rootFile.path,
                        "-untrusted", untrustedFile.path, leafFile.path,
                    ], timeout: 60)
                let openssl = result.status == 0
                #expect(swift == expected, "\(folder) at \(label): Swift \(swift)")
                #expect(
                    swift == openssl,
                    "\(folder) at \(label): Swift \(swift), openssl \(openssl): \(result.standardOutput) \(result.standardError)"
                )
            }
        }
    }

    /// `openssl cms -verify` with the chain checked at `time` against `root`.
    static func opensslAcceptsFully(
        signature: Data, content: Data, root: Certificate, at time: Date, in directory: TemporaryDirectory, name: String
    ) async throws -> Bool {
        let signatureFile = directory.url.appendingPathComponent("\(name).sig.der")
        let contentFile = directory.url.appendingPathComponent("\(name).content")
        let rootFile = directory.url.appendingPathComponent("\(name).root.pem")
        try signature.write(to: signatureFile)
        try content.write(to: contentFile)
        try Data(root.pemRepresentation.utf8).write(to: rootFile)
        let result = try await Subprocess.run(
            "openssl",
            [
                "cms", "-verify", "-binary", "-inform", "DER", "-in", signatureFile.path, "-content", contentFile.path,
                "-CAfile", rootFile.path, "-purpose", "any", "-attime", String(Int(time.timeIntervalSince1970)),
                "-out", "/dev/null",
            ], timeout: 60)
        return result.status == 0
    }

    @Test("whole verdicts (signature and chain at the signing time): PaymentTokenVerifier against openssl cms")
    func wholeVerdicts() async throws {
        let directory = try TemporaryDirectory(prefix: "differential-whole")
        defer { directory.remove() }
        let apple = try AppleRootCertificateAuthority.g3
        let authority = try CraftAuthority()
        var checked = 0
        for folder in TokenFixture.all {
            let fixture = try TokenFixture(folder)
            let (signature, content) = try Self.signedParts(fixture.tokenJSON)
            for (label, root) in [("apple", apple), ("other-root", authority.root)] {
                let swift =
                    (try? PaymentTokenVerifier(roots: [root], now: { fixture.signingTime }).verify(
                        jsonData: fixture.tokenJSON)) != nil
                let openssl = try await Self.opensslAcceptsFully(
                    signature: signature, content: content, root: root, at: fixture.signingTime, in: directory,
                    name: "\(folder)-\(label)")
                #expect(swift == (label == "apple"), "\(folder) under \(label)")
                #expect(swift == openssl, "\(folder) under \(label): Swift \(swift), openssl \(openssl)")
                checked += 1
            }
        }
        // Crafted tokens from the test authority, signed inside and after the leaf's validity.
        let token = try CraftedToken()
        for (label, time) in [
            ("inside", CraftAuthority.epoch), ("after", authority.leaf.notAfter + 86_400),
            ("before", authority.leaf.notBefore - 86_400),
        ] {
            let craft = CraftedSignature(authority: authority, content: token.signedContent, signingTime: time)
            let signature = try await craft.encode(signingKey: authority.leafKey)
            let swift =
                (try? PaymentTokenVerifier(roots: [authority.root], now: { time }).verify(
                    jsonData: token.json(signature: signature))) != nil
            let openssl = try await Self.opensslAcceptsFully(
                signature: signature, content: token.signedContent, root: authority.root, at: time, in: directory,
                name: "crafted-\(label)")
            #expect(swift == (label == "inside"), "crafted \(label)")
            #expect(swift == openssl, "crafted \(label): Swift \(swift), openssl \(openssl)")
        }
        #expect(checked == 2 * TokenFixture.all.count)
    }
}
