import Cryptography
import Foundation
import Foundations
import Sandbox

/// The gateway's HTTPS certificate: a P-256 leaf issued by the sandbox root for the given host names and IP
/// addresses, so that a client trusting the sandbox's `root.pem` reaches the gateway and nothing else does.
public enum GatewayCertificate {
    /// Issues a new TLS server certificate (valid a day either side of `now`, then 30 days).
    /// - Throws: `CryptographyError` when a host is neither an IPv4 literal nor a DNS name, or issuing fails.
    public static func issue(
        by authority: SandboxAuthority, hosts: [String] = ["localhost", "127.0.0.1"], now: Date = Date()
    ) throws -> SandboxAuthority.Credential {
        let key = try PrivateKey.generate(.p256)
        let day: TimeInterval = 86_400
        var builder = CertificateBuilder(
            subject: DistinguishedName(
                commonName: hosts.first ?? "localhost", organization: "Apple Pay Sandbox Gateway"),
            publicKey: key.publicKey, notBefore: now - day, notAfter: now + 30 * day)
        builder.basicConstraints = .endEntity
        builder.keyUsage = [.digitalSignature]
        builder.extendedKeyUsage = [.serverAuth]
        builder.extensions = [try subjectAlternativeNames(hosts)]
        let certificate = try builder.signed(by: authority.root.certificate, key: authority.root.privateKey)
        return try SandboxAuthority.Credential(certificate: certificate, privateKey: key)
    }

    /// subjectAltName (2.5.29.17): `dNSName [2]` for names, `iPAddress [7]` for IPv4 literals.
    static func subjectAlternativeNames(_ hosts: [String]) throws -> CertificateExtension {
        var names: [UInt8] = []
        for host in hosts {
            let octets = host.split(separator: ".", omittingEmptySubsequences: false).compactMap { UInt8($0) }
            if octets.count == 4, host.split(separator: ".").count == 4 {
                names += [0x87, 4] + octets
            } else {
                let bytes = Array(host.utf8)
                guard !bytes.isEmpty, bytes.count < 128,
                    bytes.allSatisfy({
                        $0 == 0x2E || $0 == 0x2D || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0)
                    })
                else {
                    throw CryptographyError(.malformedInput, "'\(host)' is not a lowercase DNS name or IPv4 address")
                }
                names += [0x82, UInt8(bytes.count)] + bytes
            }
        }
        guard names.count < 0x10000 else { throw CryptographyError(.malformedInput, "too many host names") }
        let length: [UInt8] =
            names.count < 0x80
            ? [UInt8(names.count)]
            : names.count < 0x100
                ? [0x81, UInt8(names.count)] : [0x82, UInt8(names.count >> 8), UInt8(names.count & 0xff)]
        return CertificateExtension(oid: "2.5.29.17", value: Data([0x30] + length + names))
    }
}
