internal import COpenSSL
import Foundation
import Foundations

/// A chain that verified: leaf first, trusted root last, with the time span in which every certificate is valid.
public struct VerifiedCertificateChain: Sendable {
    /// Leaf, intermediates, root.
    public let certificates: [Certificate]
    /// The latest `notBefore` in the chain.
    public let validFrom: Date
    /// The earliest `notAfter` in the chain.
    public let validUntil: Date

    /// Whether every certificate of the chain is within its validity period at `date`.
    public func isValid(at date: Date) -> Bool { validFrom <= date && date <= validUntil }
}

/// A set of trusted root certificates and X.509 path validation against them, at a time the caller gives
/// (never the wall clock implicitly).
///
/// `@unchecked Sendable`: the `X509_STORE` is filled in `init` and only read afterwards; OpenSSL locks it
/// internally and each verification uses its own `X509_STORE_CTX`.
public final class TrustStore: @unchecked Sendable {
    private let store: OpaquePointer
    /// The trusted roots.
    public let roots: [Certificate]

    /// Trusts exactly these roots.
    /// - Throws: `CryptographyError` with code `invalidCertificate` when there are none or one cannot be added.
    public init(roots: [Certificate]) throws {
        guard !roots.isEmpty else {
            throw CryptographyError(.invalidCertificate, "a trust store needs at least one root")
        }
        OpenSSLErrorQueue.clear()
        guard let store = X509_STORE_new() else {
            throw CryptographyError.openSSL(.internalError, "could not create a certificate store")
        }
        for root in roots {
            guard X509_STORE_add_cert(store, root.x509) == 1 else {
                X509_STORE_free(store)
                throw CryptographyError.openSSL(.invalidCertificate, "could not trust \(root.subject)")
            }
        }
        self.store = store
        self.roots = roots
    }

    deinit { X509_STORE_free(store) }

    /// Builds and checks the path leaf → intermediates → a trusted root.
    /// - Parameters:
    ///   - leaf: the end-entity certificate.
    ///   - intermediates: untrusted certificates that may complete the path.
    ///   - date: the time at which every certificate must be valid; nil skips validity-period checks (then use
    ///     `VerifiedCertificateChain.isValid(at:)` for each time of interest).
    /// - Throws: `CryptographyError` with code `untrustedCertificateChain`, saying what OpenSSL rejected.
    public func verify(_ leaf: Certificate, intermediates: [Certificate], at date: Date?) throws
        -> VerifiedCertificateChain
    {
        OpenSSLErrorQueue.clear()
        guard let context = X509_STORE_CTX_new(), let untrusted = OPENSSL_sk_new_null() else {
            throw CryptographyError.openSSL(.internalError, "could not create a verification context")
        }
        defer {
            X509_STORE_CTX_free(context)
            OPENSSL_sk_free(untrusted)
        }
        for certificate in intermediates {
            guard OPENSSL_sk_push(untrusted, UnsafeRawPointer(certificate.x509)) > 0 else {
                throw CryptographyError.openSSL(.internalError, "could not list the intermediates")
            }
        }
        guard X509_STORE_CTX_init(context, store, leaf.x509, untrusted) == 1,
            let parameters = X509_STORE_CTX_get0_param(context)
        else {
            throw CryptographyError.openSSL(.internalError, "could not start chain verification")
        }
        if let date {
            // Years 0 to 9999 only: anything else (or a non-finite time) is a caller's mistake, not a trap.
            let seconds = date.timeIntervalSince1970.rounded(.down)
            guard seconds.isFinite, seconds >= -62_167_219_200, seconds <= 253_402_300_799 else {
                throw CryptographyError(.malformedInput, "the verification time is outside the years 0 to 9999")
            }
            X509_VERIFY_PARAM_set_time(parameters, time_t(seconds))
        } else {
            X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_NO_CHECK_TIME))
        }
        guard X509_verify_cert(context) == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            let reason = String(cString: X509_verify_cert_error_string(Int(code)))
            let depth = X509_STORE_CTX_get_error_depth(context)
            OpenSSLErrorQueue.clear()
            throw CryptographyError(
                .untrustedCertificateChain,
                "certificate chain rejected at depth \(depth): \(reason)" + (date.map { " (checked at \($0))" } ?? ""))
        }
        guard let chain = X509_STORE_CTX_get0_chain(context) else {
            throw CryptographyError.openSSL(.internalError, "no chain after verification")
        }
        let known = [leaf] + intermediates + roots
        var certificates: [Certificate] = []
        for position in 0..<OPENSSL_sk_num(chain) {
            guard let raw = OPENSSL_sk_value(chain, position), case let pointer = OpaquePointer(raw),
                let match = known.first(where: { $0.x509 == pointer }) ?? (try? Certificate.copying(pointer))
            else {
                throw CryptographyError(.internalError, "could not read the verified chain")
            }
            certificates.append(match)
        }
        let from = certificates.map(\.notBefore).max() ?? leaf.notBefore
        let until = certificates.map(\.notAfter).min() ?? leaf.notAfter
        return VerifiedCertificateChain(certificates: certificates, validFrom: from, validUntil: until)
    }
}

extension Certificate {
    /// A new owner of one more reference to an `X509` the caller does not own.
    static func copying(_ pointer: OpaquePointer) throws -> Certificate {
        guard X509_up_ref(pointer) == 1 else {
            throw CryptographyError.openSSL(.internalError, "could not reference a certificate")
        }
        return try Certificate(takingOwnershipOf: pointer)
    }
}
