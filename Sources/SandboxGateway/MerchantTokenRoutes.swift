import Foundation
import HTTPClient
import HTTPCore
import Sandbox
import Synchronization

/// Apple's merchant-token API on the sandbox gateway (merchant-tokens.md §3), beside the payment-session endpoint:
/// `GET …/merchantToken/event/{eventId}`, `POST …/merchantToken/unlink` and `POST …/merchantToken/updateMerchantMetadata`
/// under `/paymentservices/v1/merchantId/{merchantId}`, each demanding what Apple demands: the sandbox's Merchant
/// Identity certificate (mutual TLS), `x-request-id` and `Content-Type` headers (required on the GET too), a merchant
/// id of at most 64 characters that is the certificate's. Errors are Apple's `ErrorResponse`
/// `{"errorMessage", "statusCode", "subStatusCode"}` with the statuses Apple lists: an event id the gateway does
/// not have is `400` (the event GET documents 200, 400 and 500 only), a token not the merchant's is `400` for unlink
/// and `404` for metadata. Tokens and events live in the sandbox's ``MerchantTokenRegistry``, which
/// ``MerchantTokenEvents/emit(_:sandbox:merchantToken:notify:attempts:trustedRootsPEM:)`` writes.
extension GatewayState {
    /// Apple's `ErrorResponse`. Apple publishes no sub-status values; the sandbox numbers its refusals (see
    /// ``subStatusCodes``) and keeps its own stable code in the activity counters only.
    struct ErrorResponse: Encodable {
        var errorMessage: String
        var statusCode: Int
        var subStatusCode: Int
    }

    /// The sandbox's sub-status numbers, by its refusal codes.
    static let subStatusCodes: [String: Int] = [
        "clientCertificateRequired": 4010, "unknownClientCertificate": 4030, "requestIdMissing": 4001,
        "contentTypeMissing": 4002, "invalidMerchantId": 4003, "merchantIdMismatch": 4031, "eventNotFound": 4004,
        "invalidJSON": 4005, "unknownMerchantToken": 4006, "invalidTokenNotificationURL": 4007,
    ]

    static func appleError(_ status: Int, _ code: String, _ message: String) -> HTTPResponse {
        let body = ErrorResponse(errorMessage: message, statusCode: status, subStatusCode: subStatusCodes[code] ?? 0)
        return (try? HTTPResponse.json(body, status: status)) ?? HTTPError.internalError().response
    }

    /// A refusal counted in the activity under its code.
    private func refuse(_ status: Int, _ code: String, _ message: String) -> HTTPResponse {
        activity.withLock { $0.refused[code, default: 0] += 1 }
        return Self.appleError(status, code, message)
    }

    /// The checks every merchant-token endpoint shares: the client certificate, `x-request-id`, `Content-Type`,
    /// and the merchant of the path.
    func checkMerchantTokenRequest(_ request: HTTPRequest, merchantID: String) -> HTTPResponse? {
        do {
            _ = try checkClientCertificate(request.clientCertificate)
        } catch let refusal as Refusal {
            return refuse(refusal.status, refusal.code, refusal.message)
        } catch {
            return HTTPError.internalError().response
        }
        guard let requestID = request.headers["x-request-id"], !requestID.isEmpty else {
            return refuse(400, "requestIdMissing", "The x-request-id header is required.")
        }
        guard let contentType = request.headers["Content-Type"], !contentType.isEmpty else {
            return refuse(400, "contentTypeMissing", "The Content-Type header is required.")
        }
        guard (1...64).contains(merchantID.utf8.count) else {
            return refuse(400, "invalidMerchantId", "The merchant identifier must be 1 to 64 characters.")
        }
        guard merchantID == sandbox.merchantIdentifier else {
            return refuse(
                403, "merchantIdMismatch", "The merchant identifier is not the client certificate's merchant.")
        }
        return nil
    }

    func merchantTokenEvent(_ request: HTTPRequest, merchantID: String, eventID: String) -> HTTPResponse {
        if let refusal = checkMerchantTokenRequest(request, merchantID: merchantID) { return refusal }
        guard let event = sandbox.merchantTokens.event(eventID), event.merchantIdentifier == merchantID else {
            return refuse(400, "eventNotFound", "No merchant token event \(eventID.prefix(64)).")
        }
        struct Answer: Encodable {
            var eventType: String
            var merchantTokenIdentifier: String
            var reason: String
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

    /// A JSON body naming one of this merchant's tokens, or the refusal to answer.
    enum NamedToken<Body> {
        case found(Body, MerchantTokenRegistry.Record)
        case failure(HTTPResponse)
    }

    /// The token named by a JSON body's `merchantTokenIdentifier` (at most 64 characters), if it is this merchant's.
    private func merchantToken<Body: Decodable>(
        _ request: HTTPRequest, merchantID: String, as type: Body.Type, identifier: (Body) -> String,
        unknownStatus: Int
    ) -> NamedToken<Body> {
        guard let body = try? JSONDecoder().decode(Body.self, from: request.body),
            (1...64).contains(identifier(body).utf8.count)
        else {
            return .failure(
                refuse(400, "invalidJSON", "The body must carry a merchantTokenIdentifier of 1 to 64 characters."))
        }
        guard let record = sandbox.merchantTokens.token(identifier(body)), record.merchantIdentifier == merchantID
        else {
            return .failure(refuse(unknownStatus, "unknownMerchantToken", "The merchant token is not this merchant's."))
        }
        return .found(body, record)
    }

    func unlinkMerchantToken(_ request: HTTPRequest, merchantID: String) -> HTTPResponse {
        if let refusal = checkMerchantTokenRequest(request, merchantID: merchantID) { return refusal }
        struct Body: Decodable { var merchantTokenIdentifier: String }
        switch merchantToken(
            request, merchantID: merchantID, as: Body.self, identifier: { $0.merchantTokenIdentifier },
            unknownStatus: 400)
        {
        case .failure(let refusal): return refusal
        case .found(_, let found):
            var record = found
            if record.unlinkedAt == nil {
                record.unlinkedAt = Date()
                try? sandbox.merchantTokens.save(record)
            }
            activity.withLock { $0.merchantTokensUnlinked += 1 }
            return HTTPResponse(status: 204)
        }
    }

    /// Apple's "Update Merchant Metadata": the token's `tokenNotificationURL` (https, at most 256 characters).
    func updateMerchantMetadata(_ request: HTTPRequest, merchantID: String) -> HTTPResponse {
        if let refusal = checkMerchantTokenRequest(request, merchantID: merchantID) { return refusal }
        struct Body: Decodable {
            struct Metadata: Decodable { var tokenNotificationURL: String? }
            var merchantTokenIdentifier: String
            var merchantMetadata: Metadata
        }
        switch merchantToken(
            request, merchantID: merchantID, as: Body.self, identifier: { $0.merchantTokenIdentifier },
            unknownStatus: 404)
        {
        case .failure(let refusal): return refusal
        case .found(let body, let found):
            guard let url = body.merchantMetadata.tokenNotificationURL, url.utf8.count <= 256,
                let components = URLComponents(string: url), components.scheme == "https", components.host != nil
            else {
                return refuse(
                    400, "invalidTokenNotificationURL",
                    "tokenNotificationURL must be an https URL of at most 256 characters.")
            }
            var record = found
            record.tokenNotificationURL = url
            do {
                try sandbox.merchantTokens.save(record)
            } catch {
                return Self.appleError(500, "storage", "The token could not be updated.")
            }
            activity.withLock { $0.merchantMetadataUpdates += 1 }
            return HTTPResponse(status: 200)
        }
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
            record.metadata = record.metadata.renewingCard()
            metadata = record.metadata
        case "UPDATED_CARD_ART":
            record.metadata.cardArt = MerchantTokenMetadata.freshCardArt()
            metadata = record.metadata
        case "UNLINK":
            record.unlinkedAt = Date()
        default:
            metadata = record.metadata
        }
        try sandbox.merchantTokens.save(record)
        let event = MerchantTokenRegistry.Event(
            eventId: UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased(), eventType: eventType,
            merchantTokenIdentifier: merchantToken, reason: eventType == "UNLINK" ? "user" : "issuer",
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
