import Foundation
import Foundations
import JSONCoding

/// An HTTP method such as `GET` or `POST`; compared by its upper-case name.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue.uppercased() }
    public init(stringLiteral value: String) { self.init(rawValue: value) }

    public static let get: HTTPMethod = "GET"
    public static let head: HTTPMethod = "HEAD"
    public static let post: HTTPMethod = "POST"
    public static let put: HTTPMethod = "PUT"
    public static let patch: HTTPMethod = "PATCH"
    public static let delete: HTTPMethod = "DELETE"
    public static let options: HTTPMethod = "OPTIONS"

    public var description: String { rawValue }
}

/// HTTP header fields in arrival order; names compare without regard to case.
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}
    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { add(name: name, value: value) }
    }

    /// The first value of the field `name`, or `nil`.
    public subscript(name: String) -> String? {
        get { fields.first { Self.sameName($0.name, name) }?.value }
        set {
            fields.removeAll { Self.sameName($0.name, name) }
            if let newValue { fields.append((name, newValue)) }
        }
    }

    /// Appends a field, keeping any earlier one of the same name.
    public mutating func add(name: String, value: String) { fields.append((name, value)) }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy {
                sameName($0.name, $1.name) && $0.value == $1.value
            }
    }

    /// Whether two field names are the same without regard to ASCII case (field names are ASCII tokens), compared
    /// byte by byte: no Foundation string comparison per lookup.
    public static func sameName(_ lhs: String, _ rhs: String) -> Bool { ASCII.equalIgnoringCase(lhs.utf8, rhs.utf8) }
}

/// A request as the server received it: the whole body is in memory (within the server's limit).
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    /// The path without the query, percent-decoded, e.g. `/v1/checkouts/abc/payment`.
    public var path: String
    /// The query's arguments, decoded; a name given twice keeps its last value.
    public var query: [String: String]
    public var headers: HTTPHeaders
    public var body: Data
    /// Set by the server when the body went over its limit of this many bytes (the body is then empty and
    /// the request must be refused: ``Router`` answers `413 payloadTooLarge`).
    public var bodyLimitExceeded: Int?
    /// On an HTTPS server that asks for client certificates: the one the client presented, if any.
    public var clientCertificate: ClientCertificate?

    /// A TLS client certificate as received. The TLS handshake proved the client holds its private key.
    public struct ClientCertificate: Sendable, Equatable {
        /// The leaf certificate, DER.
        public var der: Data
        /// Whether its chain verified against the server's client certificate authorities (and its dates).
        public var isTrusted: Bool

        public init(der: Data, isTrusted: Bool) {
            self.der = der
            self.isTrusted = isTrusted
        }
    }
    /// The client's IP address (`127.0.0.1`, `::1`): the TCP peer's, or, when the peer is one of the server's
    /// ``TrustedProxies``, the one its forwarding header names (an obfuscated identifier such as `_hidden` when the
    /// proxy gives no address). Per-client decisions (rate limits) and log lines use this one. `nil` for a request
    /// made in process.
    public var clientAddress: String?
    /// The TCP peer's IP address as the server saw it (a proxy's, behind one); `nil` for a request made in process.
    public var peerAddress: String?

    public init(
        method: HTTPMethod, path: String, query: [String: String] = [:], headers: HTTPHeaders = HTTPHeaders(),
        body: Data = Data()
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }
}

/// A complete response: status, header fields and body.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: Data
    /// Fields for the server's own log line about this request (identifiers, codes, outcomes: never card data),
    /// set by handlers for logging middleware; never sent to the client.
    public var logFields: [String: String] = [:]
    /// True for ``closeConnection``: the server sends nothing and closes the connection.
    public private(set) var closesConnectionWithoutAnswer = false

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Not an answer: the server closes the connection without sending a byte of a response (the client sees the
    /// connection dropped). For fault injection in test services.
    public static var closeConnection: HTTPResponse {
        var response = HTTPResponse(status: 500)
        response.closesConnectionWithoutAnswer = true
        return response
    }

    /// A response whose body is the JSON encoding of `value` (sorted keys, by ``SortedJSONEncoder``: the bytes
    /// `JSONEncoder.http` would write), with `Content-Type: application/json`.
    /// - Throws: the encoder's error when `value` cannot be encoded.
    public static func json<T: Encodable>(_ value: T, status: Int = 200) throws -> HTTPResponse {
        let body = try SortedJSONEncoder().encode(value)
        #if DEBUG
            // Every answer of every test is also checked against Foundation's encoder, byte for byte.
            let foundation = try JSONEncoder.http.encode(value)
            assert(body == foundation, "SortedJSONEncoder differs from JSONEncoder for \(T.self)")
        #endif
        return HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: body)
    }

    /// A JSON response written by `encoder`.
    public static func json<T: Encodable>(_ value: T, status: Int = 200, encoder: JSONEncoder) throws -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: try encoder.encode(value))
    }

    /// A plain-text response.
    public static func text(_ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8")
        -> HTTPResponse
    {
        HTTPResponse(status: status, headers: ["Content-Type": contentType], body: Data(text.utf8))
    }
}

extension JSONEncoder {
    /// Sorted keys, no escaped slashes: the encoder HTTP responses use by default.
    public static var http: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

/// An error answered as `{"error": {"code", "message"}}` with an HTTP status; equality on status and code.
public struct HTTPError: HTTPResponseError, Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    /// A stable code a client can switch on, e.g. `notFound`, `payloadTooLarge`.
    public var code: String
    public var message: String
    /// Extra header fields of the answer (`Allow` for 405, `Retry-After`).
    public var headers = HTTPHeaders()
    /// The request field the error is about (`shippingContact.locality`), answered as `error.field`.
    public var field: String?

    public init(status: Int, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    public static func == (lhs: HTTPError, rhs: HTTPError) -> Bool { lhs.status == rhs.status && lhs.code == rhs.code }

    public var description: String { "\(status) \(code): \(message)" }

    /// The JSON error response.
    public var response: HTTPResponse {
        struct Body: Encodable {
            struct Inner: Encodable {
                var code: String
                var message: String
                var field: String?
            }
            var error: Inner
        }
        let body =
            (try? SortedJSONEncoder().encode(Body(error: .init(code: code, message: message, field: field)))) ?? Data()
        var response = HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: body)
        for (name, value) in headers { response.headers[name] = value }
        return response
    }

    public static func badRequest(_ message: String, code: String = "badRequest") -> HTTPError {
        HTTPError(status: 400, code: code, message: message)
    }
    public static func notFound(_ message: String, code: String = "notFound") -> HTTPError {
        HTTPError(status: 404, code: code, message: message)
    }
    public static func methodNotAllowed(_ message: String) -> HTTPError {
        HTTPError(status: 405, code: "methodNotAllowed", message: message)
    }
    public static func payloadTooLarge(limit: Int) -> HTTPError {
        HTTPError(status: 413, code: "payloadTooLarge", message: "The request body is larger than \(limit) bytes.")
    }
    public static func internalError(_ message: String = "The server failed to answer this request.") -> HTTPError {
        HTTPError(status: 500, code: "internalError", message: message)
    }
}
