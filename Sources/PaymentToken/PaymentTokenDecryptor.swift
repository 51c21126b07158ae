import ApplePay
import Cryptography
import Foundation
import Foundations

/// Checks the caller may ask for after decryption.
public struct PaymentTokenExpectations: Sendable {
    /// The application data the merchant passed to the payment request.
    public enum ApplicationData: Sendable, Hashable {
        /// Its SHA-256 as hex (what the token's header carries).
        case sha256Hex(String)
        /// The original bytes, which are hashed.
        case bytes(Data)
        /// Any of several original byte strings: for a request whose application data may have been hashed in
        /// more than one encoding (Apple Pay JS's base64 text or the bytes it decodes to).
        case anyOfBytes([Data])
    }

    /// The application data the token's header must carry (as its SHA-256).
    public var applicationData: ApplicationData?
    /// The amount in minor units.
    public var amount: Int64?
    /// The currency: numeric ("840") or alphabetic ("USD") ISO 4217.
    public var currencyCode: String?

    /// Checks to make; nil ones are skipped.
    public init(applicationData: ApplicationData? = nil, amount: Int64? = nil, currencyCode: String? = nil) {
        self.applicationData = applicationData
        self.amount = amount
        self.currencyCode = currencyCode
    }
}

/// A verified and decrypted token.
public struct DecryptedPaymentToken: Sendable, CustomStringConvertible {
    /// What verification established (signing time, transaction id, signer).
    public let verification: PaymentTokenVerification
    /// The decrypted contents.
    public let payload: PaymentTokenPayload
    /// The identity whose key opened the token.
    public let merchant: MerchantIdentity

    public var description: String { "DecryptedPaymentToken(\(verification.version.rawValue), \(payload))" }
}

/// A token whose signature, chain and merchant key are checked, and its application data when one was expected, but
/// not yet its age: made by ``PaymentTokenDecryptor/verifyIgnoringAge(_:applicationData:)``, opened by
/// ``PaymentTokenDecryptor/decrypt(_:expecting:)-(VerifiedPaymentToken,_)``.
public struct VerifiedPaymentToken: Sendable, CustomStringConvertible {
    /// The parsed token (its data still encrypted).
    public let token: PaymentToken
    /// What verification established.
    public let verification: PaymentTokenVerification
    /// The identity whose key the token names.
    public let merchant: MerchantIdentity

    public var description: String { "VerifiedPaymentToken(\(verification.version.rawValue))" }
}

/// Verifies and decrypts Apple Pay tokens (EC_v1 and RSA_v1) for one or more merchant identities.
///
/// Configure once (keys and certificates are parsed and prepared here, the chain cache lives in `verifier`) and
/// share across threads: every method may be called concurrently. Several identities may be active at once
/// (certificate rotation); each token is matched to one by its `publicKeyHash`.
public final class PaymentTokenDecryptor: Sendable {
    /// Signature, chain and time checks.
    public let verifier: PaymentTokenVerifier
    /// One identity per `publicKeyHash` (the last given wins), with the hash as bytes: a few identities are
    /// compared faster than a `Data` key is hashed.
    private let identities: [(publicKeyHash: [UInt8], merchant: MerchantIdentity)]

    /// - Parameters:
    ///   - merchants: the identities whose tokens this decryptor opens.
    ///   - verifier: the verification policy (roots, clock, window).
    /// - Throws: `PaymentTokenError.merchantKeyMismatch` when no identity is given.
    public init(merchants: [MerchantIdentity], verifier: PaymentTokenVerifier) throws(PaymentTokenError) {
        guard !merchants.isEmpty else {
            throw PaymentTokenError(.merchantKeyMismatch, "no merchant identity configured: give at least one key")
        }
        var byHash: [Data: MerchantIdentity] = [:]
        for merchant in merchants { byHash[merchant.publicKeyHash] = merchant }
        identities = byHash.map { (Array($0.key), $0.value) }
        self.verifier = verifier
    }

    /// A decryptor with its own verifier; see `PaymentTokenVerifier.init` for the parameters.
    public convenience init(
        merchants: [MerchantIdentity], roots: [Certificate]? = nil, maximumAge: TimeInterval = 300,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(PaymentTokenError) {
        try self.init(
            merchants: merchants, verifier: PaymentTokenVerifier(roots: roots, maximumAge: maximumAge, now: now))
    }

    /// Parses, verifies and decrypts a token's JSON.
    public func decrypt(jsonData: some DataProtocol, expecting expectations: PaymentTokenExpectations = .init())
        throws(PaymentTokenError) -> DecryptedPaymentToken
    {
        try decrypt(try PaymentToken(jsonData: jsonData), expecting: expectations)
    }

    /// Verifies, checks the merchant and the expected application data, decrypts, then checks amount and currency.
    /// - Throws: `PaymentTokenError` with the code of the first check that failed.
    public func decrypt(_ token: PaymentToken, expecting expectations: PaymentTokenExpectations = .init())
        throws(PaymentTokenError) -> DecryptedPaymentToken
    {
        let verified = try authenticate(
            token, try verifier.verify(token), applicationData: expectations.applicationData)
        return try decryptAuthenticated(verified, expecting: expectations)
    }

    /// Every check that needs no decryption but the token's age: the signature, chain and markers, the merchant key
    /// by `publicKeyHash`, and the application data when one is expected. Its transaction id is then bound to the
    /// signed data if `applicationData` was given (see ``PaymentTokenVerification/transactionId``): a caller may
    /// look it up to recognise a retry, even a late one, before it spends a decryption.
    /// ``decrypt(_:expecting:)-(VerifiedPaymentToken,_)`` checks the age before it decrypts.
    /// - Throws: `PaymentTokenError` with the code of the first check that failed.
    public func verifyIgnoringAge(
        _ token: PaymentToken, applicationData: PaymentTokenExpectations.ApplicationData?
    ) throws(PaymentTokenError) -> VerifiedPaymentToken {
        try authenticate(token, try verifier.verifyIgnoringAge(token), applicationData: applicationData)
    }

    /// Checks a token verified by ``verifyIgnoringAge(_:applicationData:)`` for its age, decrypts it, then checks the
    /// expectations (the application data again, if given, then amount and currency).
    /// - Throws: `PaymentTokenError` with the code of the first check that failed.
    public func decrypt(_ verified: VerifiedPaymentToken, expecting expectations: PaymentTokenExpectations = .init())
        throws(PaymentTokenError) -> DecryptedPaymentToken
    {
        try verifier.checkAge(of: verified.verification)
        if let expected = expectations.applicationData {
            try Self.check(verified.token, applicationData: expected)
        }
        return try decryptAuthenticated(verified, expecting: expectations)
    }

    /// The merchant whose key the token names, and the application data check.
    private func authenticate(
        _ token: PaymentToken, _ verification: PaymentTokenVerification,
        applicationData: PaymentTokenExpectations.ApplicationData?
    ) throws(PaymentTokenError) -> VerifiedPaymentToken {
        guard let merchant = identities.first(where: { $0.publicKeyHash == token.publicKeyHash })?.merchant else {
            throw PaymentTokenError(
                .merchantKeyMismatch,
                "the token is for the key with publicKeyHash \(verification.publicKeyHash.base64EncodedString()); no configured merchant key has it (check which Payment Processing certificate the payment request used)"
            )
        }
        if let applicationData { try Self.check(token, applicationData: applicationData) }
        return VerifiedPaymentToken(token: token, verification: verification, merchant: merchant)
    }

    /// Checks that the token's header carries the SHA-256 of the expected application data.
    private static func check(_ token: PaymentToken, applicationData expected: PaymentTokenExpectations.ApplicationData)
        throws(PaymentTokenError)
    {
        let hashes: [[UInt8]]
        switch expected {
        case .bytes(let bytes): hashes = [Array(Digest.sha256(bytes))]
        case .anyOfBytes(let candidates): hashes = candidates.map { Array(Digest.sha256($0)) }
        case .sha256Hex(let text): hashes = HexCoding.decode(text).map { [$0] } ?? []
        }
        guard let actual = token.applicationData, hashes.contains(actual) else {
            throw PaymentTokenError(
                .applicationDataMismatch,
                token.applicationData == nil
                    ? "the token carries no applicationData, but the caller expected some"
                    : "the token's applicationData hash differs from the expected one")
        }
    }

    /// Decrypts a verified token (its application data already checked), then checks amount and currency.
    private func decryptAuthenticated(
        _ verified: VerifiedPaymentToken, expecting expectations: PaymentTokenExpectations
    )
        throws(PaymentTokenError) -> DecryptedPaymentToken
    {
        let token = verified.token
        let verification = verified.verification
        let merchant = verified.merchant
        var plaintext = try open(token, with: merchant)
        defer { plaintext.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        let payload: PaymentTokenPayload
        if let read = plaintext.withUnsafeBytes(PaymentTokenPayload.reading) {
            payload = read
        } else {
            let json: TokenJSON
            do {
                json = try TokenJSON.parse(plaintext)
            } catch {
                throw PaymentTokenError(.malformedPayload, "the decrypted payload is not JSON: \(error.message)")
            }
            payload = try PaymentTokenPayload(json: json)
        }
        if let amount = expectations.amount, amount != payload.transactionAmount {
            throw PaymentTokenError(
                .amountMismatch,
                "the token is for \(payload.transactionAmount) minor units, the caller expected \(amount)")
        }
        if let currency = expectations.currencyCode {
            let numeric =
                currency.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
                ? currency : (Currency(code: currency.uppercased())?.numericCode ?? currency)
            guard Int(numeric) == Int(payload.currencyCode) else {
                throw PaymentTokenError(
                    .amountMismatch, "the token is in currency \(payload.currencyCode), the caller expected \(currency)"
                )
            }
        }
        return DecryptedPaymentToken(verification: verification, payload: payload, merchant: merchant)
    }

    /// The KDF's algorithm identifier (length-prefixed "id-aes256-GCM") and party U info ("Apple"), after Z.
    private static let kdfInfo: [UInt8] = [0x0d] + Array("id-aes256-GCM".utf8) + Array("Apple".utf8)
    /// Apple Pay's AES-GCM IV: 16 zero bytes.
    private static let zeroIV = [UInt8](repeating: 0, count: 16)

    /// Recovers the symmetric key and decrypts `data`.
    private func open(_ token: PaymentToken, with merchant: MerchantIdentity) throws(PaymentTokenError) -> [UInt8] {
        var key: Data
        switch token.version {
        case .ecV1:
            guard let agreement = merchant.agreement else {
                throw PaymentTokenError(
                    .merchantKeyMismatch,
                    "an EC_v1 token needs an EC P-256 merchant key, the matching key is \(merchant.privateKey.kind)")
            }
            var shared: Data
            do {
                shared = try agreement.sharedSecret(peerSubjectPublicKeyInfoDER: token.keyMaterial)
            } catch {
                throw PaymentTokenError(
                    .malformedToken, "header.ephemeralPublicKey is not a usable P-256 public key: \(error)")
            }
            // NIST SP 800-56A single-step KDF, one round: counter ‖ Z ‖ algorithm id ‖ "Apple" ‖ merchant hash.
            var kdf: [UInt8] = []
            kdf.reserveCapacity(4 + 32 + 1 + 13 + 5 + 32)
            kdf.append(contentsOf: [0, 0, 0, 1])
            shared.withUnsafeBytes { kdf.append(contentsOf: $0) }
            kdf.append(contentsOf: PaymentTokenDecryptor.kdfInfo)
            merchant.merchantIdentifierHash.withUnsafeBytes { kdf.append(contentsOf: $0) }
            key = Digest.sha256(kdf)
            shared.resetBytes(in: 0..<shared.count)
            kdf.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
        case .rsaV1:
            guard case .rsa = merchant.privateKey.kind, let unwrapper = merchant.unwrapper else {
                throw PaymentTokenError(
                    .merchantKeyMismatch,
                    "an RSA_v1 token needs an RSA merchant key, the matching key is \(merchant.privateKey.kind)")
            }
            do {
                key = try unwrapper.decrypt(token.keyMaterial)
            } catch {
                throw PaymentTokenError(
                    .decryptionFailed,
                    "header.wrappedKey cannot be unwrapped with the merchant's RSA key (RSA-OAEP SHA-256)")
            }
            guard key.count == 16 || key.count == 32 else {
                throw PaymentTokenError(.decryptionFailed, "the unwrapped key is \(key.count) bytes, not an AES key")
            }
        }
        defer { key.resetBytes(in: 0..<key.count) }
        do {
            return try AESGCM.open(bytes: token.data, key: key, iv: PaymentTokenDecryptor.zeroIV)
        } catch {
            throw PaymentTokenError(
                .decryptionFailed,
                "the token's data does not decrypt with the merchant key (AES-GCM tag mismatch): check the merchant identifier and key"
            )
        }
    }
}
