import Foundation
import Foundations
import TestSupport
import Testing

@testable import Cryptography

/// The signed bytes of a real Apple Pay token, assembled the way Apple's verification step 3 describes.
struct SignedToken {
    let signature: Data
    let content: Data
    let signingTime: Date

    init(_ folder: String) throws {
        let url = Repository.appleTokenVectors.appendingPathComponent(folder)
        var object = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: url.appendingPathComponent("token.json")))
                as? [String: Any])
        if let nested = object["paymentData"] as? [String: Any] { object = nested }
        let header = try #require(object["header"] as? [String: Any])
        let key = (header["ephemeralPublicKey"] ?? header["wrappedKey"]) as? String ?? ""
        var content = Data(base64Encoded: key) ?? Data()
        content += Data(base64Encoded: object["data"] as? String ?? "") ?? Data()
        content += Data(hexString: header["transactionId"] as? String ?? "")
        if let application = header["applicationData"] as? String { content += Data(hexString: application) }
        self.content = content
        signature = try #require(Data(base64Encoded: object["signature"] as? String ?? ""))
        let meta = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: url.appendingPathComponent("meta.json")))
                as? [String: Any])
        signingTime = try #require(ISO8601DateFormatter().date(from: meta["signingTime"] as? String ?? ""))
    }
}

@Suite("CMS detached signatures and chains on real Apple Pay tokens")
struct CMSAndChainTests {
    static let folders = [
        "gala-2021-ec", "gala-2014-ec", "payu-2018-sandbox-ec", "basistheory-2023a-ec", "basistheory-2023b-ec",
        "basistheory-2024-rsa", "processout-2017-ec", "processout-2017-rsa",
    ]

    @Test(
        "each token's CMS signature verifies, with its signing time and the leaf and intermediate", arguments: folders)
    func verifiesRealSignatures(folder: String) throws {
        let token = try SignedToken(folder)
        let verified = try CMSSignedData.verifyDetached(token.signature, content: token.content)
        #expect(verified.signingTime == token.signingTime)
        #expect(verified.certificates.count == 2)
        #expect(verified.signer.hasExtension(oid: "1.2.840.113635.100.6.29"))
        let root = try Certificate(
            pem: String(
                contentsOf: Repository.appleTokenVectors.appendingPathComponent("apple-root-ca-g3.pem"), encoding: .utf8
            ))
        let store = try TrustStore(roots: [root])
        let intermediates = verified.certificates.filter { $0 != verified.signer }
        let chain = try store.verify(verified.signer, intermediates: intermediates, at: token.signingTime)
        #expect(chain.certificates.count == 3)
        #expect(chain.certificates.last == root)
        #expect(chain.certificates[1].hasExtension(oid: "1.2.840.113635.100.6.2.14"))
        #expect(chain.isValid(at: token.signingTime))
        // Validity is checked at the time asked: after the leaf expired, the same chain is rejected.
        let afterExpiry = verified.signer.notAfter.addingTimeInterval(86_400)
        #expect(throws: CryptographyError(.untrustedCertificateChain, "")) {
            try store.verify(verified.signer, intermediates: intermediates, at: afterExpiry)
        }
        let timeless = try store.verify(verified.signer, intermediates: intermediates, at: nil)
        #expect(!timeless.isValid(at: afterExpiry))
        // Another root: untrusted.
        let foreign = try TrustStore(roots: [try PrivateKeyFreeRoot.other()])
        #expect(throws: CryptographyError(.untrustedCertificateChain, "")) {
            try foreign.verify(verified.signer, intermediates: intermediates, at: token.signingTime)
        }
    }

    @Test("a verification time that is not finite or beyond year 9999 is malformedInput, not a trap")
    func absurdTimes() throws {
        let token = try SignedToken("gala-2021-ec")
        let verified = try CMSSignedData.verifyDetached(token.signature, content: token.content)
        let root = try Certificate(
            pem: String(
                contentsOf: Repository.appleTokenVectors.appendingPathComponent("apple-root-ca-g3.pem"), encoding: .utf8
            ))
        let store = try TrustStore(roots: [root])
        let intermediates = verified.certificates.filter { $0 != verified.signer }
        for seconds in [Double.infinity, -Double.infinity, Double.nan, 1e15, -1e15] {
            #expect(throws: CryptographyError(.malformedInput, "")) {
                try store.verify(
                    verified.signer, intermediates: intermediates, at: Date(timeIntervalSince1970: seconds))
            }
        }
    }

    @Test("the fields read as ranges of the message: digest, signature, certificates, signer")
    func fieldsAsRanges() throws {
        for folder in ["gala-2021-ec", "basistheory-2024-rsa"] {
            let token = try SignedToken(folder)
            let message = try CMSSignedData(berEncoded: token.signature)
            #expect(message.messageDigest == Digest.sha256(token.content))
            #expect(token.signature.range(of: message.signature) != nil)
            #expect(message.certificates.count >= 2)
            #expect(message.certificatesField.first == 0xa0)
            for certificate in message.certificates {
                #expect(message.embedsCertificate(der: Array(certificate)))
                #expect(Data(message.certificatesField).range(of: certificate) != nil)
            }
            #expect(!message.embedsCertificate(der: Array(message.certificates[0].dropLast())))
            let signerBytes = try #require(message.signerCertificateBytes)
            let signer = try Certificate(der: Data(signerBytes))
            #expect(message.isSigner(signer))
            #expect(message.signerIndex(in: try message.certificates.map { try Certificate(der: $0) }) != nil)
            // Also read from [UInt8] (the path PaymentToken takes), not Data.
            let fromArray = try CMSSignedData(berEncoded: Array(token.signature))
            #expect(fromArray.signature == message.signature && fromArray.signingTime == message.signingTime)
        }
    }

    @Test("altered content or signature fails with invalidSignature; truncated BER is malformedInput")
    func rejectsTampering() throws {
        let token = try SignedToken("gala-2021-ec")
        var content = token.content
        content[content.count / 2] ^= 1
        #expect(throws: CryptographyError(.invalidSignature, "")) {
            try CMSSignedData.verifyDetached(token.signature, content: content)
        }
        let message = try CMSSignedData(berEncoded: token.signature)
        let signer = try #require(
            try message.certificates.map { try Certificate(der: $0) }.first { message.isSigner($0) })
        let verifier = try SignatureVerifier(publicKey: signer.publicKey)
        try message.verify(content: token.content, verifier: verifier)
        // Flip a byte inside the signature value (near the end of the BER, before the end-of-contents octets).
        var signature = token.signature
        let position = try #require(signature.range(of: message.signature)).lowerBound + message.signature.count - 3
        signature[position] ^= 0x01
        #expect(throws: CryptographyError(.invalidSignature, "")) {
            try CMSSignedData.verifyDetached(signature, content: token.content)
        }
        for cut in [0, 1, 10, 100, token.signature.count / 2, token.signature.count - 1] {
            #expect(throws: CryptographyError(.malformedInput, "")) {
                try CMSSignedData(berEncoded: token.signature.prefix(cut))
            }
        }
        #expect(throws: CryptographyError(.malformedInput, "")) {
            try CMSSignedData(berEncoded: Data(repeating: 0x30, count: 64))
        }
        #expect(throws: CryptographyError(.malformedInput, "")) {
            try CMSSignedData(berEncoded: Data([0x30, 0x80] + [UInt8](repeating: 0x30, count: 20) + [0x80]))
        }
    }
}

/// A root that is not Apple's: a merchant certificate from the fixtures, trusted as if it were a root.
enum PrivateKeyFreeRoot {
    static func other() throws -> Certificate {
        try Certificate(
            pem: String(
                contentsOf: Repository.appleTokenVectors.appendingPathComponent("gala-2021-ec/merchant-cert.pem"),
                encoding: .utf8))
    }
}
