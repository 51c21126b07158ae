import Foundation
import HTTPClient
import MerchantCore

/// Apple's gateway (or the sandbox's) over HTTPS with the Merchant Identity certificate as TLS client certificate
/// and a fresh `x-request-id` on every request.
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

    public func event(id: String) async throws -> MerchantTokenEvent? {
        let segment = id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id
        let response = try await client.send(
            HTTPClientRequest(url: path("event/\(segment)"), headers: [("Accept", "application/json"), Self.requestID]))
        switch response.status {
        case 200: return try JSONDecoder().decode(MerchantTokenEvent.self, from: response.body)
        case 404: return nil
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
}
