import Foundation
import HTTPClient
import HTTPServer
import Sandbox
import Synchronization

/// Apple's merchant-token API on the sandbox gateway (APPLE-PAY.md §7), beside the payment-session endpoint:
/// `GET /paymentservices/v1/merchantId/{merchantId}/merchantToken/event/{eventId}` and
/// `POST /paymentservices/v1/merchantId/{merchantId}/merchantToken/unlink`, both demanding the sandbox's Merchant
/// Identity certificate (mutual TLS) and an `x-request-id` header. Errors are Apple's `ErrorResponse`
/// `{"status", "substatus"?, "message"}`. Tokens and events live in the sandbox's ``MerchantTokenRegistry``, which
/// ``MerchantTokenEvents/emit(_:sandbox:merchantToken:notify:)`` writes.
extension GatewayState {
    struct ErrorResponse: Encodable {
        var status: Int
        var substatus: String?
        var message: String
    }

    static func appleError(_ status: Int, _ substatus: String, _ message: String) -> HTTPResponse {
        (try? HTTPResponse.json(ErrorResponse(status: status, substatus: substatus, message: message), status: status))
            ?? HTTPError.internalError().response
    }

    /// The checks both endpoints share: the client certificate, `x-request-id`, and the merchant of the path.
    func checkMerchantTokenRequest(_ request: HTTPRequest, merchantID: String) -> HTTPResponse? {
        do {
            _ = try checkClientCertificate(request.clientCertificate)
        } catch let refusal as Refusal {
            activity.withLock { $0.refused[refusal.code, default: 0] += 1 }
            return Self.appleError(refusal.status, refusal.code, refusal.message)
        } catch {
            return HTTPError.internalError().response
        }
        guard let requestID = request.headers["x-request-id"], !requestID.isEmpty else {
            activity.withLock { $0.refused["requestIdMissing", default: 0] += 1 }
            return Self.appleError(400, "requestIdMissing", "The x-request-id header is required.")
        }
        guard merchantID == sandbox.merchantIdentifier else {
            return Self.appleError(
                403, "merchantIdMismatch", "The merchant identifier is not the client certificate's merchant.")
        }
        return nil
    }

    func merchantTokenEvent(_ request: HTTPRequest, merchantID: String, eventID: String) -> HTTPResponse {
        if let refusal = checkMerchantTokenRequest(request, merchantID: merchantID) { return refusal }
        guard let event = sandbox.merchantTokens.event(eventID), event.merchantIdentifier == merchantID else {
            return Self.appleError(404, "eventNotFound", "No merchant token event \(eventID.prefix(64)).")
        }
        struct Answer: Encodable {
            var eventType: String
            var merchantTokenIdentifier: String
            var reason: String?
            var merchantTokenMetadata: MerchantTokenMetadata?
        }
        activity.withLock { $0.merchantTokenEventsServed += 1 }
        return
            (try? HTTPResponse.json(
                Answer(
                    eventType: event.eventType, merchantTokenIdentifier: event.merchantTokenIdentifier,
                    reason: event.reason, merchantTokenMetadata: event.merchantTokenMetadata)))
            ?? HTTPError.internalError().response
    }

    func unlinkMerchantToken(_ request: HTTPRequest, merchantID: String) -> HTTPResponse {
        if let refusal = checkMerchantTokenRequest(request, merchantID: merchantID) { return refusal }
        struct Body: Decodable { var merchantTokenIdentifier: String }
        guard let body = try? JSONDecoder().decode(Body.self, from: request.body) else {
            return Self.appleError(400, "invalidJSON", "The body must be {\"merchantTokenIdentifier\": ...}.")
        }
        guard var record = sandbox.merchantTokens.token(body.merchantTokenIdentifier),
            record.merchantIdentifier == merchantID
        else {
            return Self.appleError(400, "unknownMerchantToken", "The merchant token is not this merchant's.")
        }
        if record.unlinkedAt == nil {
            record.unlinkedAt = Date()
            try? sandbox.merchantTokens.save(record)
        }
        activity.withLock { $0.merchantTokensUnlinked += 1 }
        return HTTPResponse(status: 204)
    }
}

/// Recording merchant-token events and telling the merchant, as Apple does ("tap and pull").
public enum MerchantTokenEvents {
    /// What an emission did.
    public struct Emission: Sendable, Codable {
        public var eventId: String
        public var eventType: String
        public var notificationURL: String?
        /// The merchant's last HTTP status, `nil` when it could not be reached.
        public var status: Int?
        public var attempts: Int
    }

    /// Records an event for a token the sandbox issued and calls `GET {tokenNotificationURL}/notification/
    /// merchantToken/{eventId}`, retrying 5xx and connection failures up to `attempts` times.
    /// - Parameters:
    ///   - eventType: `UNLINK`, `UPDATED_METADATA` or `UPDATED_CARD_ART`.
    ///   - notify: replaces the scheme, host and port of the registered notification URL (a merchant server
    ///     serving plain HTTP locally); `nil` uses the URL as registered.
    /// - Throws: `SandboxError` when the token is unknown or the event type is not Apple's.
    public static func emit(
        _ eventType: String, sandbox: Sandbox, merchantToken: String, notify: String? = nil, attempts: Int = 3,
        trustedRootsPEM: Data? = nil
    ) async throws -> Emission {
        guard MerchantTokenRegistry.eventTypes.contains(eventType) else {
            throw SandboxError(
                .invalidFile, "the event type must be one of \(MerchantTokenRegistry.eventTypes.sorted())")
        }
        guard var record = sandbox.merchantTokens.token(merchantToken) else {
            throw SandboxError(.fileMissing, "the sandbox issued no merchant token \(merchantToken.prefix(64))")
        }
        var metadata: MerchantTokenMetadata?
        switch eventType {
        case "UPDATED_METADATA":
            var updated = record.metadata
            let year = Calendar(identifier: .gregorian).component(.year, from: Date()) % 100 + 4
            updated.cardMetadata = .init(
                expirationDate: String(format: "12/%02d", year),
                suffix: String(format: "%04d", Int.random(in: 0...9999)))
            metadata = updated
            record.metadata = updated
        case "UPDATED_CARD_ART":
            var updated = record.metadata
            updated.cardArt = [
                .init(
                    name: "background", type: "image/png",
                    url: "https://sandbox.applepay.invalid/cardart/\(UUID().uuidString.lowercased()).png")
            ]
            metadata = updated
            record.metadata = updated
        case "UNLINK":
            record.unlinkedAt = Date()
        default:
            metadata = record.metadata
        }
        try sandbox.merchantTokens.save(record)
        let event = MerchantTokenRegistry.Event(
            eventId: UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased(), eventType: eventType,
            merchantTokenIdentifier: merchantToken, reason: eventType == "UNLINK" ? "user" : nil,
            merchantTokenMetadata: metadata, merchantIdentifier: record.merchantIdentifier, createdAt: Date())
        try sandbox.merchantTokens.save(event)
        var emission = Emission(
            eventId: event.eventId, eventType: eventType, notificationURL: nil, status: nil, attempts: 0)
        guard var base = record.tokenNotificationURL else { return emission }
        if let notify, let override = URLComponents(string: notify), var components = URLComponents(string: base) {
            components.scheme = override.scheme
            components.host = override.host
            components.port = override.port
            base = components.string ?? base
        }
        while base.hasSuffix("/") { base.removeLast() }
        let url = "\(base)/notification/merchantToken/\(event.eventId)"
        emission.notificationURL = url
        let client = HTTPClient(configuration: .init(timeout: .seconds(10), trustedRootsPEM: trustedRootsPEM))
        for attempt in 1...max(1, attempts) {
            emission.attempts = attempt
            if let response = try? await client.send(HTTPClientRequest(url: url)) {
                emission.status = response.status
                if response.status < 500 { break }
            }
            if attempt < attempts { try? await Task.sleep(for: .milliseconds(200 * attempt)) }
        }
        return emission
    }
}
