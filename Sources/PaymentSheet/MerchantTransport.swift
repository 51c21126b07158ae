import Foundation
import HTTPClient

/// How `HTTPMerchantDelegate` reaches the merchant API: one request (method, path, headers, JSON body) in, one
/// answer (status, body) out. `HTTPClientTransport` goes over the network; the `applepay` tool's in-process transport
/// calls the merchant server's `MerchantAPI` directly, so that a scenario is priced by the server's own rules
/// without a socket.
public protocol MerchantTransport: Sendable {
    /// Sends one request and returns the answer, whatever its status.
    /// - Parameters:
    ///   - method: `GET` or `POST`.
    ///   - path: the route with its percent-encoded parameters, for example `/v1/checkouts/chk_1/coupon`.
    ///   - headers: request headers beside the content type, for example the checkout's `Checkout-Secret`.
    ///   - body: the JSON body (`nil` for a `GET`).
    /// - Throws: the transport's failure (the server could not be reached); never for a non-2xx status.
    func send(method: String, path: String, headers: [String: String], body: Data?) async throws
        -> MerchantTransportResponse
}

extension MerchantTransport {
    /// ``send(method:path:headers:body:)`` without headers of its own (a route outside a checkout).
    public func send(method: String, path: String, body: Data?) async throws -> MerchantTransportResponse {
        try await send(method: method, path: path, headers: [:], body: body)
    }
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

    public func send(method: String, path: String, headers: [String: String], body: Data?) async throws
        -> MerchantTransportResponse
    {
        let fields = headers.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        let request =
            method == "POST"
            ? HTTPClientRequest.postJSON(baseURL + path, body: body ?? Data(), headers: fields)
            : HTTPClientRequest(url: baseURL + path, headers: fields)
        let response = try await client.send(request)
        return MerchantTransportResponse(status: response.status, body: response.body)
    }
}
