/// Routes requests by method and path pattern. Patterns are literal segments and `{name}` parameters,
/// e.g. `/v1/checkouts/{id}/payment`; a path no pattern matches is `404 notFound`, a path some pattern
/// matches with another method is `405 methodNotAllowed` with an `Allow` header.
public struct Router: Responder {
    /// A route handler: the request carries `pathParameters` and `route`.
    public typealias Handler = @Sendable (HTTPRequest) async -> HTTPResponse

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

    /// Every route pattern, in the order added (used to label metrics).
    public var patterns: [String] { routes.map(\.pattern) }

    /// What a request resolves to, without running the handler.
    public enum Resolution: Sendable {
        case matched(pattern: String, parameters: [String: String])
        /// The path matches `pattern` but not with this method; `allowed` are the methods it takes.
        case methodNotAllowed(pattern: String, allowed: [HTTPMethod])
        case notFound
    }

    /// Where `method` and `path` lead.
    public func resolve(method: HTTPMethod, path: String) -> Resolution {
        let parts = Self.split(path)
        var allowed: [HTTPMethod] = []
        var allowedPattern: String?
        for route in routes {
            guard let parameters = Self.match(route.segments, parts) else { continue }
            if route.method == method || (method == .head && route.method == .get) {
                return .matched(pattern: route.pattern, parameters: parameters)
            }
            if !allowed.contains(route.method) { allowed.append(route.method) }
            allowedPattern = allowedPattern ?? route.pattern
        }
        if let allowedPattern { return .methodNotAllowed(pattern: allowedPattern, allowed: allowed) }
        return .notFound
    }

    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        let parts = Self.split(request.path)
        var allowed: [HTTPMethod] = []
        for route in routes {
            guard let parameters = Self.match(route.segments, parts) else { continue }
            if route.method == request.method || (request.method == .head && route.method == .get) {
                var routed = request
                routed.pathParameters = parameters
                routed.route = route.pattern
                return await route.handler(routed)
            }
            if !allowed.contains(route.method) { allowed.append(route.method) }
        }
        if !allowed.isEmpty {
            var response = HTTPError.methodNotAllowed(
                "\(request.method) is not allowed on \(request.path); use \(allowed.map(\.rawValue).joined(separator: ", "))."
            ).response
            response.headers["Allow"] = allowed.map(\.rawValue).joined(separator: ", ")
            return response
        }
        return HTTPError.notFound("No route for \(request.method) \(request.path).").response
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
