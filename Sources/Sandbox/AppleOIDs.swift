import Cryptography
import Foundation
import Foundations

/// Apple's object identifiers for Apple Pay certificates.
public enum AppleOID {
    /// On the intermediate CAs of the token-signing chain (Apple Application Integration CA - G3 and
    /// Apple Worldwide Developer Relations CA - G2).
    public static let intermediateMarker = "1.2.840.113635.100.6.2.14"
    /// On the leaf certificates that sign payment tokens.
    public static let leafMarker = "1.2.840.113635.100.6.29"
    /// In merchant certificates: the merchant identifier hash, a UTF8String of 64 uppercase hex characters.
    public static let merchantIdentifierHash = "1.2.840.113635.100.6.32"
    /// On Apple Worldwide Developer Relations CA certificates, the issuers of Wallet (pass and order) certificates.
    public static let walletIntermediateMarker = "1.2.840.113635.100.6.2.1"
}

/// The merchant identifier (`merchant.com.example`) and its hash, as Apple uses them.
public enum MerchantIdentifier {
    /// SHA-256 of the identifier's UTF-8 bytes: the last input of the EC_v1 key derivation.
    public static func hash(_ identifier: String) -> Data { Digest.sha256(Data(identifier.utf8)) }

    /// The hash as 64 uppercase hexadecimal characters, as Apple writes it into OID 1.2.840.113635.100.6.32.
    public static func hexHash(_ identifier: String) -> String { hex(hash(identifier), uppercase: true) }

    /// Checks an identifier the way Apple's developer portal does: `merchant.` followed by a reverse-DNS style
    /// name of letters, digits, `.` and `-`, at most 255 characters.
    /// - Throws: `SandboxError.Code.invalidMerchantIdentifier` saying what is wrong.
    public static func validate(_ identifier: String) throws {
        guard isReverseDNSIdentifier(identifier, prefix: "merchant.") else {
            throw SandboxError(
                .invalidMerchantIdentifier,
                "'\(identifier.prefix(80))' is not a merchant identifier: use 'merchant.' and a reverse-DNS name of letters, digits, '.' and '-', e.g. merchant.com.example.shop"
            )
        }
    }

    /// Reads the merchant identifier hash from a merchant certificate's OID 1.2.840.113635.100.6.32
    /// (lowercase hex), or nil when it is absent or not a 64-character hex UTF8String.
    public static func hash(in certificate: Certificate) -> Data? {
        guard let value = certificate.extensionValue(oid: AppleOID.merchantIdentifierHash), value.count == 66,
            value[value.startIndex] == 0x0C, value[value.startIndex + 1] == 0x40
        else { return nil }
        return bytes(fromHex: String(decoding: value.dropFirst(2), as: UTF8.self))
    }
}

/// Hexadecimal text of bytes.
func hex(_ data: Data, uppercase: Bool = false) -> String {
    uppercase ? lowercaseHex(data).uppercased() : lowercaseHex(data)
}

/// Whether `identifier` is `prefix` followed by a reverse-DNS style name of letters, digits, `.` and `-` (no empty
/// part), at most 255 bytes in all: the form Apple's developer portal accepts for merchant and order type identifiers.
func isReverseDNSIdentifier(_ identifier: String, prefix: String) -> Bool {
    let allowed = identifier.utf8.allSatisfy { byte in
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == 0x2E || byte == 0x2D
    }
    return identifier.hasPrefix(prefix) && identifier.count > prefix.count && identifier.utf8.count <= 255 && allowed
        && !identifier.hasSuffix(".") && !identifier.contains("..")
}
