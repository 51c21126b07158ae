import ApplePay
import Cryptography
import Foundation

/// A merchant token (MPAN) issued with a sandbox token, as Apple issues one when the payment request carries a
/// recurring, automatic-reload or deferred request (APPLE-PAY.md §7).
///
/// ``primaryAccountNumber`` is the merchant PAN: it keeps the device PAN's first six and last four digits (so the
/// sandbox processor's test triggers still apply) and differs in between; it is Luhn-valid. `description` and
/// `dump` show the identifier and last four digits only.
public struct MerchantTokenIssue: Sendable, Hashable, Codable, CustomStringConvertible, CustomReflectable {
    /// `merchantTokenIdentifier`: `DNITHE` followed by 18 digits, as Apple's look.
    public var identifier: String
    /// The MPAN that replaces the device PAN in the payload.
    public var primaryAccountNumber: String
    /// `merchantTokenMetadata`: card art and card metadata (the card's `fpanSuffix`, expiry, country, descriptions).
    public var metadata: MerchantTokenMetadata

    /// A new merchant token for a card: a fresh identifier and an MPAN derived from the device PAN.
    public static func issue(for card: SandboxCard) -> MerchantTokenIssue {
        let digits = (0..<18).map { _ in String(Int.random(in: 0...9)) }.joined()
        return MerchantTokenIssue(
            identifier: "DNITHE" + digits, primaryAccountNumber: merchantPAN(for: card.devicePAN),
            metadata: MerchantTokenMetadata(
                cardArt: MerchantTokenMetadata.freshCardArt(),
                cardMetadata: .init(
                    expirationDate: formattedExpiry(card.expirationDate), fpanSuffix: card.displayLastFour,
                    cardCountry: "US", shortDescription: "\(card.network.rawValue) \(card.type.rawValue)",
                    longDescription: "Sandbox Bank \(card.network.rawValue) \(card.type.rawValue) card")))
    }

    /// A Luhn-valid PAN with the same length, first six and last four digits as `devicePAN`, random in between.
    public static func merchantPAN(for devicePAN: String) -> String {
        let digits = Array(devicePAN)
        guard digits.count >= 12 else { return devicePAN }
        let middleCount = digits.count - 11
        let middle = (0..<middleCount).map { _ in Character(String(Int.random(in: 0...9))) }
        for check in 0...9 {
            let candidate = String(digits.prefix(6)) + String(middle) + String(check) + String(digits.suffix(4))
            if SandboxCard.isValidDevicePAN(candidate) { return candidate }
        }
        return devicePAN
    }

    /// `YYMMDD` → `MM/YY`, the way card metadata shows an expiry.
    static func formattedExpiry(_ date: String) -> String {
        let characters = Array(date)
        guard characters.count == 6 else { return date }
        return String(characters[2...3]) + "/" + String(characters[0...1])
    }

    public var description: String { "MerchantTokenIssue(\(identifier), …\(primaryAccountNumber.suffix(4)))" }
    public var customMirror: Mirror {
        Mirror(self, children: ["identifier": identifier, "lastFour": String(primaryAccountNumber.suffix(4))])
    }
}

/// Apple's `merchantTokenMetadata`: `{"cardArt": [{name, type, url}], "cardMetadata": {cardCountry, expirationDate,
/// fpanSuffix, longDescription, shortDescription}}` (merchant-tokens.md §4).
public struct MerchantTokenMetadata: Sendable, Hashable, Codable {
    public struct CardArt: Sendable, Hashable, Codable {
        public var name: String
        public var type: String
        public var url: String
    }
    public struct CardMetadata: Sendable, Hashable, Codable {
        /// At most 8 characters (Apple documents no format; the sandbox writes `MM/YY`).
        public var expirationDate: String?
        /// The last four digits of the card (the funding PAN) as the customer knows it: neither the device
        /// account's nor the merchant token's.
        public var fpanSuffix: String?
        /// ISO 3166 alpha-2.
        public var cardCountry: String?
        /// At most 64 characters.
        public var shortDescription: String?
        /// At most 128 characters.
        public var longDescription: String?
    }
    public var cardArt: [CardArt]?
    public var cardMetadata: CardMetadata?

    /// Card art as the issuer sends it, at issue and with `UPDATED_CARD_ART`: one background image at a fresh
    /// sandbox URL.
    public static func freshCardArt() -> [CardArt] {
        [
            CardArt(
                name: "background", type: "image/png",
                url: "https://sandbox.applepay.invalid/cardart/\(hex(SecureRandom.bytes(8))).png")
        ]
    }

    /// The metadata after the issuer renewed the card (`UPDATED_METADATA`): a new expiry (December, four years
    /// on) and funding PAN suffix; the country (US when none) and descriptions kept.
    public func renewingCard(now: Date = Date()) -> MerchantTokenMetadata {
        var renewed = self
        let year = Calendar(identifier: .gregorian).component(.year, from: now) % 100 + 4
        renewed.cardMetadata = CardMetadata(
            expirationDate: String(format: "12/%02d", year),
            fpanSuffix: String(format: "%04d", Int.random(in: 0...9999)),
            cardCountry: cardMetadata?.cardCountry ?? "US", shortDescription: cardMetadata?.shortDescription,
            longDescription: cardMetadata?.longDescription)
        return renewed
    }
}

/// The sandbox's record of the merchant tokens it issued and the life-cycle events it emitted, kept as JSON files
/// under `FOLDER/merchant-tokens/` so that `applepay sandbox mint`, the headless sheet, `applepay sandbox gateway`
/// and `applepay sandbox gateway emit` (separate processes) share them.
///
/// - `tokens/ID.json`: ``Record`` (identifier, merchant, notification URL, unlinked or not; never the MPAN).
/// - `events/EVENTID.json`: ``Event``, kept as Apple keeps them (Apple: about 7 days; the sandbox: until deleted).
public struct MerchantTokenRegistry: Sendable {
    /// What the sandbox remembers about a token it issued.
    public struct Record: Sendable, Codable, Equatable {
        public var merchantTokenIdentifier: String
        public var merchantIdentifier: String
        /// The request's `tokenNotificationURL`, where the gateway sends notifications.
        public var tokenNotificationURL: String?
        public var metadata: MerchantTokenMetadata
        /// Set when the token was unlinked (by the merchant through the gateway, or by an `UNLINK` event).
        public var unlinkedAt: Date?
        public var issuedAt: Date
    }

    /// Apple's `MerchantTokenEventResponse`, as the gateway answers it.
    public struct Event: Sendable, Codable, Equatable {
        public var eventId: String
        /// `UNLINK`, `UPDATED_METADATA`, `UPDATED_CARD_ART` or `UPDATED_MERCHANT_TOKEN_PUBLIC_KEY`.
        public var eventType: String
        public var merchantTokenIdentifier: String
        /// Who originated it: `user` or `issuer` (Apple requires it on every event).
        public var reason: String
        public var merchantTokenMetadata: MerchantTokenMetadata?
        /// The merchant the token belongs to (not in Apple's answer: the gateway checks it against the path).
        public var merchantIdentifier: String
        public var createdAt: Date

        public init(
            eventId: String, eventType: String, merchantTokenIdentifier: String, reason: String,
            merchantTokenMetadata: MerchantTokenMetadata?, merchantIdentifier: String, createdAt: Date
        ) {
            self.eventId = eventId
            self.eventType = eventType
            self.merchantTokenIdentifier = merchantTokenIdentifier
            self.reason = reason
            self.merchantTokenMetadata = merchantTokenMetadata
            self.merchantIdentifier = merchantIdentifier
            self.createdAt = createdAt
        }
    }

    /// The event types Apple documents.
    public static let eventTypes: Set<String> = [
        "UNLINK", "UPDATED_METADATA", "UPDATED_CARD_ART", "UPDATED_MERCHANT_TOKEN_PUBLIC_KEY",
    ]

    public let folder: URL

    /// The registry of a sandbox folder.
    public init(sandboxFolder: URL) { folder = sandboxFolder.appendingPathComponent("merchant-tokens") }

    /// Identifiers and event ids travel in URL paths and file names: letters, digits, `-` and `_` only.
    public static func isSafeIdentifier(_ text: String) -> Bool {
        (1...128).contains(text.utf8.count)
            && text.utf8.allSatisfy { $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
    }

    public func save(_ record: Record) throws {
        try write(record, to: "tokens", name: record.merchantTokenIdentifier)
    }

    public func token(_ identifier: String) -> Record? { read(Record.self, from: "tokens", name: identifier) }

    public func save(_ event: Event) throws { try write(event, to: "events", name: event.eventId) }

    public func event(_ eventID: String) -> Event? { read(Event.self, from: "events", name: eventID) }

    private func write<T: Encodable>(_ value: T, to kind: String, name: String) throws {
        guard Self.isSafeIdentifier(name) else {
            throw SandboxError(.invalidFile, "\"\(name.prefix(40))\" is not a safe identifier")
        }
        let directory = folder.appendingPathComponent(kind)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        try AtomicFile.write(
            try encoder.encode(value), to: directory.appendingPathComponent(name + ".json"), mode: 0o600)
    }

    private func read<T: Decodable>(_ type: T.Type, from kind: String, name: String) -> T? {
        guard Self.isSafeIdentifier(name) else { return nil }
        let url = folder.appendingPathComponent(kind).appendingPathComponent(name + ".json")
        guard let data = try? Data(contentsOf: url) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try? decoder.decode(type, from: data)
    }
}

extension UInt8 {
    fileprivate var isASCIIAlphanumeric: Bool {
        (self >= 0x30 && self <= 0x39) || (self >= 0x41 && self <= 0x5A) || (self >= 0x61 && self <= 0x7A)
    }
}

extension Sandbox {
    /// The registry of the merchant tokens this sandbox issued (`FOLDER/merchant-tokens/`).
    public var merchantTokens: MerchantTokenRegistry { MerchantTokenRegistry(sandboxFolder: folder) }

    /// Mints a token carrying a new merchant token for `request.card` and records the token in
    /// ``merchantTokens`` with the request's `tokenNotificationURL`, as Apple registers it when it issues one.
    /// - Parameters:
    ///   - request: the payment; its `merchantToken` is replaced by the new one.
    ///   - tokenNotificationURL: where the sandbox gateway sends this token's life-cycle notifications.
    /// - Returns: the token and the merchant token it carries.
    /// - Throws: see `TokenMinter.mint(_:for:)`, or a file error when the registry cannot be written.
    public func mintWithMerchantToken(
        _ request: MintRequest, tokenNotificationURL: String?, version: TokenVersion = .ecV1
    ) throws -> (token: MintedToken, merchantToken: MerchantTokenIssue) {
        var request = request
        let issue = MerchantTokenIssue.issue(for: request.card)
        request.merchantToken = issue
        let token = try mint(request, version: version)
        try merchantTokens.save(
            MerchantTokenRegistry.Record(
                merchantTokenIdentifier: issue.identifier, merchantIdentifier: merchantIdentifier,
                tokenNotificationURL: tokenNotificationURL, metadata: issue.metadata, issuedAt: request.signingTime))
        return (token, issue)
    }
}
