import Cryptography
import Foundation
import Foundations
import TestSupport
import Testing

@Suite("CMS signing")
struct CMSSigningTests {
    /// Signs with a fresh leaf of `kind` and checks the result with `openssl cms -verify` against the test root.
    @Test(
        "detached signatures verify with openssl cms -verify and carry the chosen signing time",
        arguments: [KeyKind.p256, .rsa(bits: 2048)])
    func opensslVerifies(kind: KeyKind) async throws {
        let authority = try TestAuthority()
        // RSA key generation takes a while on a busy machine: on a thread of its own, not Swift's cooperative pool.
        let key = try await blocking { try PrivateKey.generate(kind) }
        let leaf = try authority.leaf(key: key, name: DistinguishedName(commonName: "signer", country: "US")) {
            $0.keyUsage = [.digitalSignature]
        }
        let signer = try CMSSigner(certificate: leaf, privateKey: key, additionalCertificates: [authority.intermediate])
        let content = Data((0..<300).map { UInt8(truncatingIfNeeded: $0 * 7) })  // binary, with CR and LF bytes
        // Ten minutes ago, in whole seconds: inside the leaf's validity (it starts an hour ago).
        let signingTime = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 600).rounded(.down))
        let signature = try signer.signDetached(content, signingTime: signingTime)

        // This module's own reader agrees: signer found, digest and signature good, the time as chosen.
        let verified = try CMSSignedData.verifyDetached(signature, content: content)
        #expect(verified.signer == leaf)
        #expect(verified.signingTime == signingTime)
        #expect(verified.certificates.contains(authority.intermediate))

        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try signature.write(to: folder.url.appendingPathComponent("sig.der"))
        try content.write(to: folder.url.appendingPathComponent("content.bin"))
        try authority.root.pemRepresentation.write(toFile: folder.path("root.pem"), atomically: true, encoding: .utf8)
        let opensslVerified = try await OpenSSLTool.run([
            "cms", "-verify", "-binary", "-inform", "DER", "-in", folder.path("sig.der"), "-content",
            folder.path("content.bin"), "-CAfile", folder.path("root.pem"), "-purpose", "any", "-attime",
            String(Int(signingTime.timeIntervalSince1970)),
            "-out", "/dev/null",
        ])
        #expect(opensslVerified.status == 0, "\(opensslVerified.error)")

        let printed = try await OpenSSLTool.run([
            "cms", "-cmsout", "-print", "-inform", "DER", "-in", folder.path("sig.der"),
        ])
        #expect(printed.status == 0)
        #expect(printed.output.contains("UTCTIME:\(Self.openSSLTime(signingTime))"))
        #expect(printed.output.contains("eContent: <ABSENT>"))
        #expect(printed.output.contains("CN=Test Intermediate CA"))  // the extra certificate is included
        #expect(!printed.output.contains("SMIMECapabilities"))

        // The signature covers exactly the content: one changed byte fails.
        var changed = content
        changed[0] ^= 1
        try changed.write(to: folder.url.appendingPathComponent("changed.bin"))
        let refused = try await OpenSSLTool.run([
            "cms", "-verify", "-binary", "-inform", "DER", "-in", folder.path("sig.der"), "-content",
            folder.path("changed.bin"), "-CAfile", folder.path("root.pem"), "-purpose", "any", "-out", "/dev/null",
        ])
        #expect(refused.status != 0)
    }

    /// A date as `openssl cms -print` shows a UTCTime: `Nov  4 16:00:00 2025 GMT`.
    static func openSSLTime(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        let day = String(format: "%2d", parts.day ?? 0)
        return
            "\(months[(parts.month ?? 1) - 1]) \(day) \(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) \(parts.year ?? 0) GMT"
    }

    @Test("a key that does not match the signer certificate is refused")
    func mismatchedKey() throws {
        let authority = try TestAuthority()
        let key = try PrivateKey.generate(.p256)
        let leaf = try authority.leaf(key: key, name: DistinguishedName(commonName: "signer"))
        #expect(throws: CryptographyError(.invalidKey, "")) {
            try CMSSigner(certificate: leaf, privateKey: authority.intermediateKey)
        }
    }

    @Test("a signing time no certificate time can hold is refused, not a crash")
    func unrepresentableSigningTime() throws {
        let authority = try TestAuthority()
        let key = try PrivateKey.generate(.p256)
        let signer = try CMSSigner(
            certificate: try authority.leaf(key: key, name: DistinguishedName(commonName: "signer")), privateKey: key)
        for seconds in [1e30, -Double.infinity] {
            #expect(throws: CryptographyError(.malformedInput, ""), "\(seconds)") {
                try signer.signDetached(Data("content".utf8), signingTime: Date(timeIntervalSince1970: seconds))
            }
        }
    }
}
