/// Routes requests by method and path pattern and runs them through middleware. Patterns are literal segments
/// and `{name}` parameters, e.g. `/v1/checkouts/{id}/payment`. A request is resolved once into a
/// ``RequestContext``; then the middleware run, outermost first, and last the handler. A path no pattern matches
/// is `404 notFound`, a path some pattern matches with another method `405 methodNotAllowed` with an `Allow`
/// header, a body over the server's limit `413 payloadTooLarge`: all three are thrown through the middleware
/// like any handler error. A thrown ``HTTPResponseError`` is answered with its response, anything else with
/// `500 internalError`.
public struct Router: Responder {
    /// A route handler.
    public typealias Handler = @Sendable (HTTPRequest, RequestContext) async throws -> HTTPResponse

    private struct Route: Sendable {
        var method: HTTPMethod
        var pattern: String
        var segments: [Segment]
        var handler: Handler
    }

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private var routes: [Route] = []
    private var middleware: [any Middleware] = []

    public init() {}

    /// Adds a route. A later route with the same method and pattern never wins over the first.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, handler: @escaping Handler) {
        let segments = Self.split(pattern).map { part -> Segment in
            if part.hasPrefix("{") && part.hasSuffix("}") && part.count > 2 {
                return .parameter(String(part.dropFirst().dropLast()))
            }
            return .literal(String(part))
        }
        routes.append(Route(method: method, pattern: pattern, segments: segments, handler: handler))
    }

    /// Adds middleware around every request; the first added is the outermost.
    public mutating func add(middleware: any Middleware) {
        self.middleware.append(middleware)
    }

    /// Every route pattern, in the order added (used to label metrics).
    public var patterns: [String] { routes.map(\.pattern) }

    /// What a request resolves to, without running anything.
    public enum Resolution: Sendable {
        case matched(pattern: String, parameters: [String: String])
        /// The path matches `pattern` but not with this method; `allowed` are the methods it takes.
        case methodNotAllowed(pattern: String, allowed: [HTTPMethod])
        case notFound
    }

    /// Where `method` and `path` lead.
    public func resolve(method: HTTPMethod, path: String) -> Resolution {
        resolveRoute(method: method, path: path).resolution
    }

    private func resolveRoute(method: HTTPMethod, path: String) -> (resolution: Resolution, handler: Handler?) {
        let parts = Self.split(path)
        var allowed: [HTTPMethod] = []
        var allowedPattern: String?
        for route in routes {
            guard let parameters = Self.match(route.segments, parts) else { continue }
            if route.method == method || (method == .head && route.method == .get) {
                return (.matched(pattern: route.pattern, parameters: parameters), route.handler)
            }
            if !allowed.contains(route.method) { allowed.append(route.method) }
            allowedPattern = allowedPattern ?? route.pattern
        }
        if let allowedPattern { return (.methodNotAllowed(pattern: allowedPattern, allowed: allowed), nil) }
        return (.notFound, nil)
    }

    /// The router answers 413 itself, through its middleware.
    public var answersOversizedRequests: Bool { true }

    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        let (resolution, handler) = resolveRoute(method: request.method, path: request.path)
        let context: RequestContext
        switch resolution {
        case .matched(let pattern, let parameters): context = RequestContext(route: pattern, parameters: parameters)
        case .methodNotAllowed(let pattern, _): context = RequestContext(route: pattern)
        case .notFound: context = RequestContext(route: nil)
        }
        var next: Middleware.Next = { request, context in
            if let limit = request.bodyLimitExceeded { throw HTTPError.payloadTooLarge(limit: limit) }
            switch resolution {
            case .matched:
                guard let handler else { throw HTTPError.internalError() }
                return try await handler(request, context)
            case .methodNotAllowed(_, let allowed):
                let list = allowed.map(\.rawValue).joined(separator: ", ")
                var error = HTTPError.methodNotAllowed(
                    "\(request.method) is not allowed on \(request.path); use \(list).")
                error.headers["Allow"] = list
                throw error
            case .notFound:
                throw HTTPError.notFound("No route for \(request.method) \(request.path).")
            }
        }
        for layer in middleware.reversed() {
            let inner = next
            next = { request, context in try await layer.handle(request, context: context, next: inner) }
        }
        do {
            return try await next(request, context)
        } catch let error as any HTTPResponseError {
            return error.response
        } catch {
            return HTTPError.internalError().response
        }
    }

    private static func split(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }

    private static func match(_ segments: [Segment], _ parts: [Substring]) -> [String: String]? {
        guard segments.count == parts.count else { return nil }
        var parameters: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let literal): if literal != part { return nil }
            case .parameter(let name): parameters[name] = String(part)
            }
        }
        return parameters
    }
}
