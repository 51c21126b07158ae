import Foundation
import HTTPClient

/// How `HTTPMerchantDelegate` reaches the merchant API: one request (method, path, JSON body) in, one answer
/// (status, body) out. `HTTPClientTransport` goes over the network; the `applepay` tool's in-process transport
/// calls the merchant server's `MerchantAPI` directly, so that a scenario is priced by the server's own rules
/// without a socket.
public protocol MerchantTransport: Sendable {
    /// Sends one request and returns the answer, whatever its status.
    /// - Parameters:
    ///   - method: `GET` or `POST`.
    ///   - path: the route with its percent-encoded parameters, for example `/v1/checkouts/chk_1/coupon`.
    ///   - body: the JSON body (`nil` for a `GET`).
    /// - Throws: the transport's failure (the server could not be reached); never for a non-2xx status.
    func send(method: String, path: String, body: Data?) async throws -> MerchantTransportResponse
}

/// A merchant API answer: the HTTP status and the (JSON) body.
public struct MerchantTransportResponse: Sendable {
    public var status: Int
    public var body: Data

    public init(status: Int, body: Data) {
        self.status = status
        self.body = body
    }
}

/// The merchant API over HTTP(S) with `HTTPClient`.
public struct HTTPClientTransport: MerchantTransport {
    /// The server's base URL without a trailing slash, for example `http://127.0.0.1:8080`.
    public let baseURL: String
    private let client: HTTPClient

    public init(baseURL: String, client: HTTPClient = HTTPClient()) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.client = client
    }

    public func send(method: String, path: String, body: Data?) async throws -> MerchantTransportResponse {
        let request =
            method == "POST"
            ? HTTPClientRequest.postJSON(baseURL + path, body: body ?? Data())
            : HTTPClientRequest(url: baseURL + path)
        let response = try await client.send(request)
        return MerchantTransportResponse(status: response.status, body: response.body)
    }
}
