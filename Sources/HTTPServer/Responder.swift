/// Answers requests. The server calls it from its own threads, once per request, possibly for many requests
/// at once; a responder can be tested in-process by calling `respond(to:)` directly.
public protocol Responder: Sendable {
    /// The response to `request`.
    func respond(to request: HTTPRequest) async -> HTTPResponse

    /// The answer to a request whose body went over the server's limit (its `body` is empty);
    /// the default is a `413 payloadTooLarge` JSON error. Called on a server thread: keep it quick.
    func respondToOversizedRequest(_ request: HTTPRequest, limit: Int) -> HTTPResponse
}

extension Responder {
    public func respondToOversizedRequest(_ request: HTTPRequest, limit: Int) -> HTTPResponse {
        HTTPError.payloadTooLarge(limit: limit).response
    }
}

/// A responder made of a closure.
public struct ClosureResponder: Responder {
    private let body: @Sendable (HTTPRequest) async -> HTTPResponse

    public init(_ body: @escaping @Sendable (HTTPRequest) async -> HTTPResponse) { self.body = body }

    public func respond(to request: HTTPRequest) async -> HTTPResponse { await body(request) }
}
