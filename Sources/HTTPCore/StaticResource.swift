import Foundation

/// A file served from memory (a page, a script, a style sheet): its content type, an `ETag` from its bytes, a
/// `Cache-Control` policy and extra headers (a Content-Security-Policy). `If-None-Match` answers `304`; `HEAD`
/// answers the headers alone.
public struct StaticResource: Sendable {
    public var path: String
    public var contentType: String
    public var body: Data
    public var cacheControl: String
    public var headers: HTTPHeaders
    /// A strong validator: 16 hex digits of the body's FNV-1a hash, quoted.
    public let etag: String

    /// - Parameters:
    ///   - path: where it is served, e.g. `/checkout.js`.
    ///   - cacheControl: default `no-cache` (browsers revalidate with `If-None-Match` and get `304`).
    public init(
        path: String, contentType: String, body: Data, cacheControl: String = "no-cache",
        headers: HTTPHeaders = HTTPHeaders()
    ) {
        self.path = path
        self.contentType = contentType
        self.body = body
        self.cacheControl = cacheControl
        self.headers = headers
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in body {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        self.etag = "\"" + String(hash, radix: 16) + "\""
    }

    /// The answer to a `GET` or `HEAD` of this resource.
    public func response(to request: HTTPRequest) -> HTTPResponse {
        var headers = self.headers
        headers["Content-Type"] = contentType
        headers["Cache-Control"] = cacheControl
        headers["ETag"] = etag
        headers["X-Content-Type-Options"] = "nosniff"
        if let match = request.headers["If-None-Match"],
            match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == etag })
        {
            return HTTPResponse(status: 304, headers: headers)
        }
        return HTTPResponse(status: 200, headers: headers, body: request.method == .head ? Data() : body)
    }
}

extension Router {
    /// Serves each resource at its path (`GET`, and `HEAD` through the router's GET fallback).
    public mutating func add(resources: [StaticResource]) {
        for resource in resources {
            add(.get, resource.path) { request, _ in resource.response(to: request) }
        }
    }
}
