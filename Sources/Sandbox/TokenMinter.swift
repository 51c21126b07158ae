import ApplePay
import Cryptography
import Foundation
import Foundations

/// The two payment token formats.
public enum TokenVersion: String, Sendable, Hashable, Codable, CaseIterable {
    /// ECDH on P-256 with an ephemeral key, AES-256-GCM, signed by an EC leaf.
    case ecV1 = "EC_v1"
    /// A random AES-128 key wrapped with RSA-OAEP (SHA-256), AES-128-GCM, signed by an RSA leaf.
    case rsaV1 = "RSA_v1"
}

/// The kind of card, as `paymentMethod.type` names it.
public enum CardType: String, Sendable, Hashable, Codable, CaseIterable {
    case debit, credit, prepaid, store, eMoney
}

/// A card in the sandbox wallet.
///
/// `description`, `dump` and debuggers show the network, type and last four digits only.
public struct SandboxCard: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// The network, as Apple Pay JS names it (`visa`, `masterCard`, `amex`, …).
    public var network: PaymentNetwork
    public var type: CardType
    /// The device account number (DPAN) placed in the token. Secret: never logged.
    public var devicePAN: String
    /// `applicationExpirationDate`: YYMMDD.
    public var expirationDate: String
    public var cardholderName: String?
    /// The last four digits shown to the user (`paymentMethod.displayName` is "<Network> <last four>").
    public var displayLastFour: String

    /// A card; the display digits default to the last four of the device PAN.
    /// - Throws: `SandboxError.Code.invalidCard` for a PAN that is not 12 to 19 digits passing the Luhn check, or an
    ///   expiration date that is not YYMMDD.
    public init(
        network: PaymentNetwork, type: CardType = .debit, devicePAN: String, expirationDate: String,
        cardholderName: String? = nil, displayLastFour: String? = nil
    ) throws {
        guard Self.isValidDevicePAN(devicePAN) else {
            throw SandboxError(
                .invalidCard, "the card number must be 12 to 19 digits and pass the Luhn check", field: "devicePAN")
        }
        guard Self.isValidExpirationDate(expirationDate) else {
            throw SandboxError(.invalidCard, "the expiration date must be YYMMDD", field: "expirationDate")
        }
        self.network = network
        self.type = type
        self.devicePAN = devicePAN
        self.expirationDate = expirationDate
        self.cardholderName = cardholderName
        self.displayLastFour = displayLastFour ?? String(devicePAN.suffix(4))
    }

    /// A test card for the network (the numbers third parties quote for Apple's sandbox), expiring at the end of
    /// the month three years after `now`; nil for networks without one.
    public static func testCard(network: PaymentNetwork, now: Date = Date()) -> SandboxCard? {
        let numbers: [PaymentNetwork: String] = [
            .visa: "4761120010000492", .masterCard: "5204247750001471", .amex: "349956959041362",
            .discover: "6011000991300009",
        ]
        guard let pan = numbers[network] else { return nil }
        return try? SandboxCard(
            network: network, type: network == .amex ? .credit : .debit, devicePAN: pan,
            expirationDate: defaultExpiration(now: now))
    }

    /// YYMMDD for the last day of the month three years after `now`.
    static func defaultExpiration(now: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        let later = calendar.date(byAdding: .year, value: 3, to: now) ?? now
        let parts = calendar.dateComponents([.year, .month], from: later)
        let days = calendar.range(of: .day, in: .month, for: later)?.count ?? 28
        return String(format: "%02d%02d%02d", (parts.year ?? 2000) % 100, parts.month ?? 1, days)
    }

    /// Whether `pan` can be a device account number: 12 to 19 ASCII digits passing the Luhn check.
    public static func isValidDevicePAN(_ pan: String) -> Bool {
        let bytes = Array(pan.utf8)
        guard (12...19).contains(bytes.count), bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return false }
        var sum = 0
        for (index, byte) in bytes.reversed().enumerated() {
            var digit = Int(byte) - 0x30
            if index % 2 == 1 {
                digit *= 2
                if digit > 9 { digit -= 9 }
            }
            sum += digit
        }
        return sum % 10 == 0
    }

    /// Whether `date` is an `applicationExpirationDate`: six ASCII digits `YYMMDD` with a month from 01 to 12.
    public static func isValidExpirationDate(_ date: String) -> Bool {
        let bytes = Array(date.utf8)
        guard bytes.count == 6, bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return false }
        let month = Int(bytes[2] - 0x30) * 10 + Int(bytes[3] - 0x30)
        return (1...12).contains(month)
    }

    /// `paymentMethod.network` as Apple writes it in tokens (`Visa`, `MasterCard`, `AmEx`, …).
    public var tokenNetworkName: String {
        let names: [PaymentNetwork: String] = [
            .visa: "Visa", .masterCard: "MasterCard", .amex: "AmEx", .discover: "Discover", .jcb: "JCB",
            .chinaUnionPay: "ChinaUnionPay", .interac: "Interac", .maestro: "Maestro", .electron: "Electron",
            .cartesBancaires: "CartesBancaires", .eftpos: "Eftpos", .mada: "mada",
        ]
        if let name = names[network] { return name }
        let raw = network.rawValue
        return raw.prefix(1).uppercased() + raw.dropFirst()
    }

    public var description: String { "SandboxCard(\(tokenNetworkName) …\(displayLastFour))" }

    /// What `dump` and debuggers see: no device PAN, no expiration date.
    public var customMirror: Mirror {
        Mirror(self, children: ["network": network, "type": type, "displayLastFour": displayLastFour])
    }
}

/// The request's `applicationData`: raw bytes (native apps) or the base64 text Apple Pay JS sends.
public enum ApplicationData: Sendable, Hashable {
    case bytes(Data)
    case base64(String)

    /// The bytes whose SHA-256 goes into the token header.
    /// - Throws: `SandboxError.Code.invalidApplicationData` for text that is not base64.
    public func decoded() throws -> Data {
        switch self {
        case .bytes(let data): return data
        case .base64(let text):
            guard let data = Data(base64Encoded: text) else {
                throw SandboxError(
                    .invalidApplicationData,
                    "applicationData is not valid base64 (Apple Pay JS sends it base64-encoded)")
            }
            return data
        }
    }
}

/// What the token's `paymentData` carries.
public enum PaymentDataType: String, Sendable, Hashable, Codable {
    /// `onlinePaymentCryptogram` (random, 20 bytes) and an `eciIndicator`.
    case threeDSecure = "3DSecure"
    /// `emvData` and `encryptedPINData` (random bytes).
    case emv = "EMV"
}

/// Everything a minted token says about the payment.
public struct MintRequest: Sendable {
    public var card: SandboxCard
    /// The amount in the request's currency, e.g. `10.75`.
    public var amount: Decimal
    /// ISO 4217 alphabetic code, e.g. `USD`; the token carries the numeric code.
    public var currencyCode: String
    public var applicationData: ApplicationData?
    public var paymentDataType: PaymentDataType
    /// The CMS signing time (whole seconds are kept).
    public var signingTime: Date
    /// 32 bytes; random when nil.
    public var transactionIdentifier: Data?
    /// A merchant token to issue in place of the device token: its MPAN replaces the device PAN and the payload
    /// carries `merchantTokenIdentifier` and `merchantTokenMetadata`.
    public var merchantToken: MerchantTokenIssue?

    public init(
        card: SandboxCard, amount: Decimal, currencyCode: String, applicationData: ApplicationData? = nil,
        paymentDataType: PaymentDataType = .threeDSecure, signingTime: Date = Date(),
        transactionIdentifier: Data? = nil,
        merchantToken: MerchantTokenIssue? = nil
    ) {
        self.merchantToken = merchantToken
        self.card = card
        self.amount = amount
        self.currencyCode = currencyCode
        self.applicationData = applicationData
        self.paymentDataType = paymentDataType
        self.signingTime = signingTime
        self.transactionIdentifier = transactionIdentifier
    }
}

/// A PKPaymentToken as Apple delivers it: `paymentData`, `paymentMethod`, `transactionIdentifier`.
///
/// `description`, `dump` and debuggers name the version, transaction and payment method only: the encrypted data,
/// signature and header are not printed.
public struct MintedToken: Sendable, Codable, Hashable, CustomStringConvertible, CustomReflectable {
    public struct Header: Sendable, Codable, Hashable {
        public var ephemeralPublicKey: String?
        public var wrappedKey: String?
        public var publicKeyHash: String
        public var transactionId: String
        public var applicationData: String?
    }

    public struct PaymentData: Sendable, Codable, Hashable {
        public var version: String
        public var data: String
        public var signature: String
        public var header: Header
    }

    public struct PaymentMethod: Sendable, Codable, Hashable {
        public var displayName: String
        public var network: String
        public var type: String
    }

    public var paymentData: PaymentData
    public var paymentMethod: PaymentMethod
    public var transactionIdentifier: String

    /// The whole token as JSON (keys sorted, slashes not escaped).
    public func jsonData(pretty: Bool = false) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// Only the `paymentData` object as JSON: what a payment processor receives.
    public func paymentDataJSON() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(paymentData)
    }

    public var description: String {
        "MintedToken(\(paymentData.version), transaction \(transactionIdentifier.prefix(16))…)"
    }

    /// What `dump` and debuggers see: no payment data.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "version": paymentData.version, "transactionIdentifier": transactionIdentifier,
                "paymentMethod": paymentMethod,
            ])
    }
}

/// A merchant's Payment Processing certificate, prepared for minting: the token version its key gives, the
/// `publicKeyHash` and the merchant identifier hash, computed once.
public struct PaymentProcessingRecipient: Sendable {
    public let certificate: Certificate
    public let version: TokenVersion
    /// Base64 SHA-256 of the certificate's SubjectPublicKeyInfo: the header's `publicKeyHash`.
    public let publicKeyHash: String
    /// The 32 bytes of OID 1.2.840.113635.100.6.32 (or, when absent, SHA-256 of the subject UID).
    public let merchantIdentifierHash: Data

    /// - Throws: `SandboxError.Code.notAPaymentProcessingCertificate` when the key is neither EC P-256 nor RSA, or the
    ///   certificate names no merchant identifier.
    public init(certificate: Certificate) throws {
        switch certificate.publicKey.kind {
        case .p256: version = .ecV1
        case .rsa: version = .rsaV1
        case .p384:
            throw SandboxError(
                .notAPaymentProcessingCertificate,
                "a Payment Processing certificate has an EC P-256 or RSA key, not EC P-384")
        }
        guard
            let hash = MerchantIdentifier.hash(in: certificate)
                ?? certificate.subjectUID.map({ MerchantIdentifier.hash($0) })
        else {
            throw SandboxError(
                .notAPaymentProcessingCertificate,
                "the certificate carries no merchant identifier (OID 1.2.840.113635.100.6.32 or subject UID)")
        }
        self.certificate = certificate
        self.merchantIdentifierHash = hash
        self.publicKeyHash = Digest.sha256(certificate.publicKey.subjectPublicKeyInfoDER).base64EncodedString()
    }
}

/// Mints real Apple Pay tokens: encrypted for a merchant's Payment Processing certificate and signed by the sandbox's
/// EC or RSA leaf, exactly in Apple's format.
///
/// Keys and certificates are loaded once, when the minter is made; `mint` only generates per-token randomness, so
/// a minter can be shared by many tasks (it is immutable and `Sendable`).
public final class TokenMinter: Sendable {
    private let ecSigner: CMSSigner
    private let rsaSigner: CMSSigner
    /// `deviceManufacturerIdentifier` in every token.
    public static let deviceManufacturerIdentifier = "040010030273"

    /// A minter signing with the authority's leaves, the intermediate included in each signature.
    /// - Throws: `CryptographyError` when a leaf key does not match its certificate.
    public init(authority: SandboxAuthority) throws {
        ecSigner = try CMSSigner(
            certificate: authority.ecLeaf.certificate, privateKey: authority.ecLeaf.privateKey,
            additionalCertificates: [authority.intermediate.certificate])
        rsaSigner = try CMSSigner(
            certificate: authority.rsaLeaf.certificate, privateKey: authority.rsaLeaf.privateKey,
            additionalCertificates: [authority.intermediate.certificate])
    }

    /// Mints a token for `recipient`; its version follows the certificate's key (EC P-256 → EC_v1, RSA → RSA_v1).
    /// - Throws: `SandboxError.Code.unknownCurrency`, `.amountPrecision`, `.invalidAmount` (negative or too large),
    ///   `.invalidApplicationData`; `CryptographyError` when OpenSSL fails.
    public func mint(_ request: MintRequest, for recipient: PaymentProcessingRecipient) throws -> MintedToken {
        let payload = try Self.payload(for: request)
        let transactionId = request.transactionIdentifier ?? SecureRandom.bytes(32)
        let applicationDataHash = try request.applicationData.map { Digest.sha256(try $0.decoded()) }

        let keyBytes: Data
        let ciphertext: Data
        var header = MintedToken.Header(
            publicKeyHash: recipient.publicKeyHash, transactionId: hex(transactionId),
            applicationData: applicationDataHash.map { hex($0) })
        switch recipient.version {
        case .ecV1:
            let ephemeral = try PrivateKey.generate(.p256)
            let shared = try ECDH.sharedSecret(privateKey: ephemeral, publicKey: recipient.certificate.publicKey)
            var kdf = Data([0, 0, 0, 1])
            kdf.append(shared)
            kdf.append(0x0D)
            kdf.append(contentsOf: Array("id-aes256-GCM".utf8))
            kdf.append(contentsOf: Array("Apple".utf8))
            kdf.append(recipient.merchantIdentifierHash)
            let key = Digest.sha256(kdf)
            ciphertext = try AESGCM.seal(payload, key: key, iv: Data(count: 16))
            keyBytes = ephemeral.publicKey.subjectPublicKeyInfoDER
            header.ephemeralPublicKey = keyBytes.base64EncodedString()
        case .rsaV1:
            let key = SecureRandom.bytes(16)
            ciphertext = try AESGCM.seal(payload, key: key, iv: Data(count: 16))
            keyBytes = try RSAOAEP.encrypt(key, publicKey: recipient.certificate.publicKey)
            header.wrappedKey = keyBytes.base64EncodedString()
        }

        var signed = keyBytes
        signed.append(ciphertext)
        signed.append(transactionId)
        if let applicationDataHash { signed.append(applicationDataHash) }
        let signer = recipient.version == .ecV1 ? ecSigner : rsaSigner
        let signature = try signer.signDetached(signed, signingTime: request.signingTime)

        return MintedToken(
            paymentData: MintedToken.PaymentData(
                version: recipient.version.rawValue, data: ciphertext.base64EncodedString(),
                signature: signature.base64EncodedString(), header: header),
            paymentMethod: MintedToken.PaymentMethod(
                displayName: "\(request.card.tokenNetworkName) \(request.card.displayLastFour)",
                network: request.card.tokenNetworkName, type: request.card.type.rawValue),
            transactionIdentifier: hex(transactionId, uppercase: true))
    }

    /// Mints a token for a Payment Processing certificate; see `mint(_:for:)` taking a recipient, which is faster
    /// when minting many tokens for one certificate.
    public func mint(_ request: MintRequest, for certificate: Certificate) throws -> MintedToken {
        try mint(request, for: PaymentProcessingRecipient(certificate: certificate))
    }

    /// The decrypted payload, in Apple's field order.
    struct Payload: Encodable {
        struct Content: Encodable {
            var onlinePaymentCryptogram: String?
            var eciIndicator: String?
            var emvData: String?
            var encryptedPINData: String?
        }
        var applicationPrimaryAccountNumber: String
        var applicationExpirationDate: String
        var currencyCode: String
        var transactionAmount: Int64
        var cardholderName: String?
        var deviceManufacturerIdentifier: String
        var paymentDataType: String
        var paymentData: Content
        var merchantTokenIdentifier: String?
        var merchantTokenMetadata: MerchantTokenMetadata?
    }

    /// The plaintext JSON for a request.
    static func payload(for request: MintRequest) throws -> Data {
        let minorUnits = try minorUnits(request.amount, currencyCode: request.currencyCode)
        let content: Payload.Content
        switch request.paymentDataType {
        case .threeDSecure:
            content = Payload.Content(
                onlinePaymentCryptogram: SecureRandom.bytes(20).base64EncodedString(),
                eciIndicator: request.card.network == .masterCard ? nil : "7")
        case .emv:
            content = Payload.Content(
                emvData: SecureRandom.bytes(64).base64EncodedString(), encryptedPINData: hex(SecureRandom.bytes(16)))
        }
        let payload = Payload(
            applicationPrimaryAccountNumber: request.merchantToken?.primaryAccountNumber ?? request.card.devicePAN,
            applicationExpirationDate: request.card.expirationDate,
            currencyCode: try currency(request.currencyCode).numericCode,
            transactionAmount: minorUnits, cardholderName: request.card.cardholderName,
            deviceManufacturerIdentifier: deviceManufacturerIdentifier,
            paymentDataType: request.paymentDataType.rawValue, paymentData: content,
            merchantTokenIdentifier: request.merchantToken?.identifier,
            merchantTokenMetadata: request.merchantToken?.metadata)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return try encoder.encode(payload)
    }

    /// The currency for an ISO 4217 alphabetic code.
    /// - Throws: `SandboxError.Code.unknownCurrency`.
    public static func currency(_ code: String) throws -> Currency {
        guard let currency = Currency(code: code) else {
            throw SandboxError(
                .unknownCurrency,
                "'\(code.prefix(12))' is not an ISO 4217 currency code (e.g. USD, EUR, JPY)")
        }
        return currency
    }

    /// The amount in the currency's minor units.
    /// - Throws: `SandboxError.Code.unknownCurrency`, `.amountPrecision`, `.invalidAmount`.
    public static func minorUnits(_ amount: Decimal, currencyCode: String) throws -> Int64 {
        let currency = try currency(currencyCode)
        guard amount >= 0 else {
            throw SandboxError(.invalidAmount, "the amount must not be negative")
        }
        do {
            return try currency.minorUnits(of: amount)
        } catch let error where error.code == .tooManyDecimals {
            throw SandboxError(
                .amountPrecision,
                "\(amount) has more decimals than \(currency.code) allows (\(currency.minorUnits))")
        } catch {
            throw SandboxError(.invalidAmount, error.message)
        }
    }
}
