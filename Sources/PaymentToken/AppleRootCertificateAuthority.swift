import Cryptography
import Foundation
import Foundations

/// Apple Root CA - G3, the root every Apple Pay token signature chains to. Bundled so that nothing is read from disk.
/// SHA-256 fingerprint 63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79.
public enum AppleRootCertificateAuthority {
    /// The certificate in PEM form.
    public static let g3PEM = """
        -----BEGIN CERTIFICATE-----
        MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwS
        QXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9u
        IEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcN
        MTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBS
        b290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9y
        aXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49
        AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtf
        TjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517
        IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySr
        MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gA
        MGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4
        at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM
        6BgD56KyKA==
        -----END CERTIFICATE-----
        """

    /// The expected SHA-256 fingerprint of the DER.
    static let g3Fingerprint: [UInt8] = [
        0x63, 0x34, 0x3a, 0xbf, 0xb8, 0x9a, 0x6a, 0x03, 0xeb, 0xb5, 0x7e, 0x9b, 0x3f, 0x5f, 0xa7, 0xbe,
        0x7c, 0x4f, 0x5c, 0x75, 0x6f, 0x30, 0x17, 0xb3, 0xa8, 0xc4, 0x88, 0xc3, 0x65, 0x3e, 0x91, 0x79,
    ]

    /// Apple Root CA - G3, parsed and checked against its fingerprint (parse once and keep it).
    public static var g3: Certificate {
        get throws {
            let certificate = try Certificate(pem: g3PEM)
            guard Array(certificate.sha256Fingerprint) == g3Fingerprint else {
                throw PaymentTokenError(
                    .untrustedCertificateChain, "the bundled Apple Root CA - G3 does not match its fingerprint")
            }
            return certificate
        }
    }
}

/// Apple's marker extensions (OIDs) for Apple Pay.
public enum ApplePayOID {
    /// On the leaf certificate that signs payment tokens.
    public static let leafMarker = "1.2.840.113635.100.6.29"
    /// On Apple's Application Integration CA (the intermediate).
    public static let intermediateMarker = "1.2.840.113635.100.6.2.14"
    /// On a merchant's Payment Processing certificate: the merchant identifier hash.
    public static let merchantIdentifierHash = "1.2.840.113635.100.6.32"
}
