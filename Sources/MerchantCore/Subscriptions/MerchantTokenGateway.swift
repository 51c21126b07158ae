import Foundation

/// Apple's merchant-token event, as `GET .../merchantToken/event/{eventId}` answers it (`MerchantTokenEventResponse`).
public struct MerchantTokenEvent: Sendable, Equatable, Codable {
    public struct Metadata: Sendable, Equatable, Codable {
        public struct CardArt: Sendable, Equatable, Codable {
            public var name: String?
            public var type: String?
            public var url: String?
        }
        public var cardArt: [CardArt]?
        public var cardMetadata: CardMetadata?
    }
    /// `UNLINK`, `UPDATED_METADATA`, `UPDATED_CARD_ART`, `UPDATED_MERCHANT_TOKEN_PUBLIC_KEY`.
    public var eventType: String
    public var merchantTokenIdentifier: String
    /// Who originated the event (Apple requires it and documents no values; the sandbox says `user` or `issuer`).
    public var reason: String?
    public var merchantTokenMetadata: Metadata?
}

/// Apple's merchant-token API (APPLE-PAY.md §7): pull an event, unlink a token, change its notification URL.
public protocol MerchantTokenGateway: Sendable {
    /// The event, or `nil` when the gateway does not know it (Apple answers `400` for an event id it refuses).
    func event(id: String) async throws -> MerchantTokenEvent?
    /// Unlinks a token of this merchant (204).
    func unlink(merchantTokenIdentifier: String) async throws
    /// Apple's "Update Merchant Metadata": where Apple sends this token's notifications from now on (200).
    func updateMerchantMetadata(merchantTokenIdentifier: String, tokenNotificationURL: String) async throws
}

/// A gateway answer that was not what Apple documents, with its HTTP status.
public struct MerchantTokenGatewayError: Error, Sendable, CustomStringConvertible {
    public var status: Int
    public var message: String
    public var description: String { "merchant token gateway \(status): \(message)" }

    public init(status: Int, message: String) {
        self.status = status
        self.message = message
    }
}
