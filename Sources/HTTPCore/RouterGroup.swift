/// Routes under a path prefix that share middleware: `/admin/v1` behind bearer authentication, the HTML pages
/// without the JSON content-type rule. A route added to a group gets the group's prefix and runs inside the group's
/// middleware (the first outermost), composed once as it is added; a group added to another (``group(_:middleware:_:)``
/// or ``add(_:)-(RouterGroup)``) takes that one's prefix and middleware around its own, and a ``Router`` adds its own
/// middleware around all. The router's ``Router/patterns`` are the full paths.
///
/// ```swift
/// router.group("/admin/v1", middleware: [BearerAuthentication(token: token)]) { admin in
///     admin.add(.get, "/orders") { request, context in ... }
///     admin.add(OrderAdminRoutes(store: store))
/// }
/// ```
public struct RouterGroup: RouteGrouping, Sendable {
    /// The path before every pattern of the group, relative to where the group is added (`""`: none).
    public let prefix: String
    /// The middleware around each of the group's routes, the first outermost.
    public let middleware: [any Middleware]
    /// The routes added so far, prefix and middleware already applied.
    private(set) var routes: [Router.Route] = []

    /// An empty group.
    /// - Parameters:
    ///   - prefix: the path before every pattern, e.g. `/admin/v1`.
    ///   - middleware: what runs around each route of the group, the first outermost.
    public init(_ prefix: String = "", middleware: [any Middleware] = []) {
        self.prefix = prefix
        self.middleware = middleware
    }

    /// Adds a route at `prefix` + `pattern`. A later route with the same method and full pattern never wins over the
    /// first.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, handler: @escaping Router.Handler) {
        routes.append(
            Router.Route(method: method, pattern: pattern, handler: handler).grouped(under: prefix, in: middleware))
    }

    /// Adds another group's routes under this group's prefix, inside this group's middleware.
    public mutating func add(_ group: RouterGroup) {
        for route in group.routes { routes.append(route.grouped(under: prefix, in: middleware)) }
    }

    /// Adds a collection's routes to this group.
    public mutating func add(_ collection: some RouteCollection) {
        collection.register(on: &self)
    }

    /// Serves each resource at the group's prefix + its path (`GET`, and `HEAD` through the router's GET fallback).
    public mutating func add(resources: [StaticResource]) {
        for resource in resources {
            add(.get, resource.path) { request, _ in resource.response(to: request) }
        }
    }
}

/// What groups are added to: a ``Router`` (at the root, inside the router's middleware) or a ``RouterGroup``
/// (nested: under its prefix, inside its middleware).
public protocol RouteGrouping {
    /// Adds a group's routes, their patterns and middleware as the group composed them.
    mutating func add(_ group: RouterGroup)
}

extension RouteGrouping {
    /// Adds the routes of a group at `prefix` whose `middleware` (the first outermost) run inside this one's, for
    /// its routes only: `router.group("/admin/v1", middleware: [auth]) { $0.add(.get, "/orders") { ... } }`.
    public mutating func group(
        _ prefix: String, middleware: [any Middleware] = [], _ body: (inout RouterGroup) throws -> Void
    ) rethrows {
        var group = RouterGroup(prefix, middleware: middleware)
        try body(&group)
        add(group)
    }
}

/// A feature's routes, registered together on a group: a type holding only what its handlers use.
///
/// ```swift
/// struct OrderRoutes: RouteCollection {
///     let store: any OrderStore
///     func register(on group: inout RouterGroup) {
///         group.add(.get, "/v1/orders/{id}") { _, context in try await show(try context.parameter("id")) }
///     }
/// }
/// ```
public protocol RouteCollection {
    /// Adds the collection's routes to `group`.
    func register(on group: inout RouterGroup)
}

extension RequestContext {
    /// The path parameter `name` (`{name}` in the route's pattern).
    /// - Throws: `400 missingParameter` when the route has no such parameter.
    public func parameter(_ name: String) throws(HTTPError) -> String {
        guard let value = parameters[name] else { throw .missingParameter(name) }
        return value
    }

    /// The ``identity`` an authentication middleware of the route's group set, as a `T`.
    /// - Throws: `500 internalError` when there is none of that type: the route is not under the group that
    ///   authenticates it (a mistake in the routes, refused rather than served unauthenticated).
    public func identity<T>(as type: T.Type) throws(HTTPError) -> T {
        guard let identity = identity as? T else {
            throw .internalError("The route has no authenticated \(T.self); it is outside its authentication group.")
        }
        return identity
    }
}

extension HTTPError {
    /// `400 missingParameter`: the route has no path parameter `name`.
    public static func missingParameter(_ name: String) -> HTTPError {
        HTTPError(status: 400, code: "missingParameter", message: "The request path has no \(name).")
    }
}
