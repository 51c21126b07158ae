/// Routes requests by method and path pattern and runs them through middleware. Patterns are literal segments
/// and `{name}` parameters, e.g. `/v1/checkouts/{id}/payment`. A request is resolved once into a
/// ``RequestContext``; then the router's middleware run, outermost first, then the middleware of the route's groups
/// (``RouterGroup``), and last the handler. Each route's chain is composed when it is added (and again when router
/// middleware is added), never per request. A path no pattern matches is `404 notFound`, a path some pattern matches
/// with another method `405 methodNotAllowed` with an `Allow` header, a body over the server's limit
/// `413 payloadTooLarge`: all three are thrown through the router's middleware like any handler error (a 413 on a
/// route also through its groups' middleware). A thrown ``HTTPResponseError`` is answered with its response,
/// anything else with `500 internalError`.
public struct Router: Responder, RouteGrouping {
    /// A route handler.
    public typealias Handler = @Sendable (HTTPRequest, RequestContext) async throws -> HTTPResponse

    /// A route with its groups' middleware already around its handler.
    struct Route: Sendable {
        var method: HTTPMethod
        /// The full pattern, every group's prefix included.
        var pattern: String
        var segments: [Segment]
        /// The groups' middleware around the handler.
        var grouped: Middleware.Next
        /// The router's middleware around ``grouped``: what a request to this route runs.
        var chain: Middleware.Next

        /// A route running `handler` after the body limit check (the innermost link, as for unrouted requests).
        init(method: HTTPMethod, pattern: String, handler: @escaping Handler) {
            self.method = method
            self.pattern = pattern
            self.segments = Route.segments(of: pattern)
            let leaf: Middleware.Next = { request, context in
                if let limit = request.bodyLimitExceeded { throw HTTPError.payloadTooLarge(limit: limit) }
                return try await handler(request, context)
            }
            self.grouped = leaf
            self.chain = leaf
        }

        /// This route under `prefix`, inside `middleware` (the first outermost).
        func grouped(under prefix: String, in middleware: [any Middleware]) -> Route {
            var route = self
            if !prefix.isEmpty {
                route.pattern = Route.join(prefix, pattern)
                route.segments = Route.segments(of: route.pattern)
            }
            route.grouped = Router.compose(middleware, around: grouped)
            route.chain = route.grouped
            return route
        }

        static func segments(of pattern: String) -> [Segment] {
            Router.split(pattern).map { part -> Segment in
                if part.hasPrefix("{") && part.hasSuffix("}") && part.count > 2 {
                    return .parameter(String(part.dropFirst().dropLast()))
                }
                return .literal(String(part))
            }
        }

        /// `/admin/v1` and `/orders/{id}` make `/admin/v1/orders/{id}`; an empty or `/` pattern is the prefix itself.
        static func join(_ prefix: String, _ pattern: String) -> String {
            let head = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
            let tail = pattern.hasPrefix("/") ? String(pattern.dropFirst()) : pattern
            if tail.isEmpty { return head.isEmpty ? "/" : head }
            return head + "/" + tail
        }
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private var routes: [Route] = []
    private var middleware: [any Middleware] = []

    public init() {}

    /// Adds a route. A later route with the same method and pattern never wins over the first.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, handler: @escaping Handler) {
        append(Route(method: method, pattern: pattern, handler: handler))
    }

    /// Adds a group's routes, their patterns and middleware as the group composed them.
    public mutating func add(_ group: RouterGroup) {
        for route in group.routes { append(route) }
    }

    /// Adds a collection's routes at the root, with no middleware but the router's.
    public mutating func add(_ collection: some RouteCollection) {
        var group = RouterGroup()
        collection.register(on: &group)
        add(group)
    }

    private mutating func append(_ route: Route) {
        var route = route
        route.chain = Self.compose(middleware, around: route.grouped)
        routes.append(route)
    }

    /// Adds middleware around every request, routed or not (404, 405 and 413 included); the first added is the
    /// outermost. It wraps the routes added before too.
    public mutating func add(middleware: any Middleware) {
        self.middleware.append(middleware)
        for index in routes.indices {
            routes[index].chain = Self.compose(self.middleware, around: routes[index].grouped)
        }
    }

    /// Every route pattern in full (group prefixes included), in the order added (used to label metrics).
    public var patterns: [String] { routes.map(\.pattern) }

    /// A route's method and full pattern.
    public struct Endpoint: Sendable, Hashable {
        public var method: HTTPMethod
        /// The pattern, group prefixes included: `/v1/checkouts/{id}/payment`.
        public var pattern: String

        public init(method: HTTPMethod, pattern: String) {
            self.method = method
            self.pattern = pattern
        }
    }

    /// Every route's method and full pattern, in the order added: what another router needs to send these routes'
    /// requests here.
    public var endpoints: [Endpoint] { routes.map { Endpoint(method: $0.method, pattern: $0.pattern) } }

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

    private func resolveRoute(method: HTTPMethod, path: String) -> (resolution: Resolution, route: Route?) {
        let parts = Self.split(path)
        var allowed: [HTTPMethod] = []
        var allowedPattern: String?
        for route in routes {
            guard let parameters = Self.match(route.segments, parts) else { continue }
            if route.method == method || (method == .head && route.method == .get) {
                return (.matched(pattern: route.pattern, parameters: parameters), route)
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
        let (resolution, route) = resolveRoute(method: request.method, path: request.path)
        let context: RequestContext
        let chain: Middleware.Next
        switch resolution {
        case .matched(let pattern, let parameters):
            context = RequestContext(route: pattern, parameters: parameters)
            guard let route else { return HTTPError.internalError().response }
            chain = route.chain
        case .methodNotAllowed(let pattern, let allowed):
            context = RequestContext(route: pattern)
            chain = Self.compose(middleware) { request, _ in
                if let limit = request.bodyLimitExceeded { throw HTTPError.payloadTooLarge(limit: limit) }
                let list = allowed.map(\.rawValue).joined(separator: ", ")
                var error = HTTPError.methodNotAllowed(
                    "\(request.method) is not allowed on \(request.path); use \(list).")
                error.headers["Allow"] = list
                throw error
            }
        case .notFound:
            context = RequestContext(route: nil)
            chain = Self.compose(middleware) { request, _ in
                if let limit = request.bodyLimitExceeded { throw HTTPError.payloadTooLarge(limit: limit) }
                throw HTTPError.notFound("No route for \(request.method) \(request.path).")
            }
        }
        do {
            return try await chain(request, context)
        } catch let error as any HTTPResponseError {
            return error.response
        } catch {
            return HTTPError.internalError().response
        }
    }

    /// `middleware` (the first outermost) around `next`.
    static func compose(_ middleware: [any Middleware], around next: @escaping Middleware.Next) -> Middleware.Next {
        var next = next
        for layer in middleware.reversed() {
            let inner = next
            next = { request, context in try await layer.handle(request, context: context, next: inner) }
        }
        return next
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
