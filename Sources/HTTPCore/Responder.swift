import Foundations

/// Answers requests. The server calls it from its own threads, once per request, possibly for many requests
/// at once; a responder can be tested in-process by calling `respond(to:)` directly.
///
/// A request whose body went over the server's limit is answered `413 payloadTooLarge` by the server, unless the
/// responder ``answersOversizedRequests``: it then gets the request with an empty body and
/// ``HTTPRequest/bodyLimitExceeded`` set (``Router`` answers it 413 through its middleware, so they log it).
public protocol Responder: Sendable {
    /// The response to `request`.
    func respond(to request: HTTPRequest) async -> HTTPResponse

    /// Whether requests over the body limit are passed on (default `false`: the server answers 413 itself).
    var answersOversizedRequests: Bool { get }
}

extension Responder {
    public var answersOversizedRequests: Bool { false }
}

/// A responder made of a closure.
public struct ClosureResponder: Responder {
    private let body: @Sendable (HTTPRequest) async -> HTTPResponse

    public init(_ body: @escaping @Sendable (HTTPRequest) async -> HTTPResponse) { self.body = body }

    public func respond(to request: HTTPRequest) async -> HTTPResponse { await body(request) }
}

/// What the router learned about a request, passed to middleware and handlers: resolved once per request.
public struct RequestContext: Sendable {
    /// A random id for this request (16 hexadecimal digits), for log lines.
    public let requestID: String
    /// The route pattern that matched (`/v1/checkouts/{id}/payment`), or the pattern whose path matched with
    /// another method (405); `nil` when no route matched (404).
    public let route: String?
    /// Values taken from the path, e.g. `["id": "abc"]` for `/v1/checkouts/{id}/payment`; read them with
    /// ``parameter(_:)``, which throws `400 missingParameter` for a name the route does not have.
    public let parameters: [String: String]
    /// Who or what the request was authenticated as (an order whose token it carries), set by an authentication
    /// middleware of the route's group for the middleware and handler inside it; `nil` until then. Read it with
    /// ``identity(as:)``.
    public var identity: (any Sendable)?

    public init(requestID: String = RequestContext.newRequestID(), route: String?, parameters: [String: String] = [:]) {
        self.requestID = requestID
        self.route = route
        self.parameters = parameters
    }

    /// 16 random hexadecimal digits.
    public static func newRequestID() -> String { randomHex(bytes: 8) }
}

/// An error that knows how it is answered: a status, a stable code and the response. Handlers throw these; the
/// router turns any other error into `500 internalError`.
public protocol HTTPResponseError: Error {
    /// The HTTP status.
    var status: Int { get }
    /// The stable code a client can switch on (`checkoutNotFound`, `payloadTooLarge`).
    var code: String { get }
    /// The response answered for it.
    var response: HTTPResponse { get }
}

/// Code that runs around requests. Added to the ``Router``, it runs around every request, including those answered
/// 404, 405 and 413: logging, metrics, headers. Given to a ``RouterGroup``, it runs around the group's routes only:
/// authentication, content-type rules. Middleware may change the request, the context (its ``RequestContext/identity``)
/// or the response, or answer by itself.
public protocol Middleware: Sendable {
    /// The rest of the chain: the next middleware, and last the route's handler.
    typealias Next = @Sendable (HTTPRequest, RequestContext) async throws -> HTTPResponse

    /// Handles a request, usually by calling `next` and returning (or adjusting) its response. Errors thrown by
    /// `next` pass through unless the middleware catches them.
    func handle(_ request: HTTPRequest, context: RequestContext, next: Next) async throws -> HTTPResponse
}
