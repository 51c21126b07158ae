import Foundation
import HTTPClient
import MerchantCore

/// Apple's gateway (or the sandbox's) over HTTPS with the Merchant Identity certificate as TLS client certificate,
/// and on every request the headers Apple requires: `Content-Type: application/json` (on the event GET too) and a
/// fresh `x-request-id`.
public struct HTTPMerchantTokenGateway: MerchantTokenGateway {
    /// `https://apple-pay-gateway.apple.com` or the sandbox gateway's URL.
    public let baseURL: String
    public let merchantIdentifier: String
    private let client: HTTPClient

    /// - Parameters:
    ///   - baseURL: the gateway, without a trailing slash.
    ///   - merchantIdentifier: the `{merchantId}` of the paths.
    ///   - identity: the Merchant Identity certificate and key.
    ///   - trustedRootsPEM: roots to trust instead of the system's (the sandbox root).
    public init(
        baseURL: String, merchantIdentifier: String, identity: ClientIdentity, trustedRootsPEM: Data? = nil,
        timeout: Duration = .seconds(10)
    ) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.merchantIdentifier = merchantIdentifier
        self.client = HTTPClient(
            configuration: .init(
                timeout: timeout, clientIdentity: identity, trustedRootsPEM: trustedRootsPEM,
                maximumResponseSize: 64 * 1024))
    }

    private func path(_ suffix: String) -> String {
        let merchant = merchantIdentifier.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)
        return "\(baseURL)/paymentservices/v1/merchantId/\(merchant ?? merchantIdentifier)/merchantToken/\(suffix)"
    }

    private static var requestID: (name: String, value: String) { ("x-request-id", UUID().uuidString.lowercased()) }

    /// Apple documents 200, 400 and 500 for the event GET: a `400` (an event id Apple refuses: unknown, or expired
    /// after seven days) is `nil`, as is a `404`; anything else throws.
    public func event(id: String) async throws -> MerchantTokenEvent? {
        let segment = id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id
        let response = try await client.send(
            HTTPClientRequest(
                url: path("event/\(segment)"),
                headers: [("Accept", "application/json"), ("Content-Type", "application/json"), Self.requestID]))
        switch response.status {
        case 200:
            let event = try JSONDecoder().decode(MerchantTokenEvent.self, from: response.body)
            guard !event.merchantTokenIdentifier.isEmpty, event.merchantTokenIdentifier.utf8.count <= 64 else {
                throw MerchantTokenGatewayError(status: 200, message: "the event names no valid merchant token")
            }
            return event
        case 400, 404: return nil
        default:
            throw MerchantTokenGatewayError(
                status: response.status, message: String(decoding: response.body.prefix(300), as: UTF8.self))
        }
    }

    public func unlink(merchantTokenIdentifier: String) async throws {
        let body = try JSONEncoder().encode(["merchantTokenIdentifier": merchantTokenIdentifier])
        let response = try await client.send(.postJSON(path("unlink"), body: body, headers: [Self.requestID]))
        guard (200..<300).contains(response.status) else {
            throw MerchantTokenGatewayError(
                status: response.status, message: String(decoding: response.body.prefix(300), as: UTF8.self))
        }
    }

    public func updateMerchantMetadata(merchantTokenIdentifier: String, tokenNotificationURL: String) async throws {
        struct Body: Encodable {
            struct Metadata: Encodable { var tokenNotificationURL: String }
            var merchantTokenIdentifier: String
            var merchantMetadata: Metadata
        }
        let body = try JSONEncoder().encode(
            Body(
                merchantTokenIdentifier: merchantTokenIdentifier,
                merchantMetadata: .init(tokenNotificationURL: tokenNotificationURL)))
        let response = try await client.send(
            .postJSON(path("updateMerchantMetadata"), body: body, headers: [Self.requestID]))
        guard (200..<300).contains(response.status) else {
            throw MerchantTokenGatewayError(
                status: response.status, message: String(decoding: response.body.prefix(300), as: UTF8.self))
        }
    }
}
