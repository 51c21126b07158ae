import Foundation
import HTTPCore
import Synchronization
import Testing

@Suite("Router groups and route collections")
struct RouterGroupTests {
    /// Middleware that notes its name on the way in, and refuses when told to.
    struct Mark: Middleware {
        let name: String
        let trail: Trail
        var refuses = false

        func handle(_ request: HTTPRequest, context: RequestContext, next: Next) async throws -> HTTPResponse {
            trail.note("\(name) \(context.route ?? "none")")
            if refuses { throw HTTPError(status: 401, code: "refusedBy\(name)", message: "no") }
            return try await next(request, context)
        }
    }

    final class Trail: Sendable {
        private let lines = Mutex<[String]>([])
        func note(_ line: String) { lines.withLock { $0.append(line) } }
        func take() -> [String] {
            lines.withLock { lines in
                defer { lines = [] }
                return lines
            }
        }
    }

    /// Sets the context's identity to the `X-User` header, or refuses without one.
    struct Authenticate: Middleware {
        func handle(_ request: HTTPRequest, context: RequestContext, next: Next) async throws -> HTTPResponse {
            guard let user = request.headers["X-User"] else {
                throw HTTPError(status: 401, code: "unauthorized", message: "Who are you?")
            }
            var context = context
            context.identity = user
            return try await next(request, context)
        }
    }

    struct Orders: RouteCollection {
        let label: String
        func register(on group: inout RouterGroup) {
            group.add(.get, "/orders/{id}") { _, context in
                .text("\(label) order \(try context.parameter("id")) via \(context.route ?? "?")")
            }
        }
    }

    static func text(_ response: HTTPResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test("a group's prefix is on its patterns and its middleware runs for its routes only, inside the router's")
    func prefixAndMiddleware() async {
        let trail = Trail()
        var router = Router()
        router.add(.get, "/open") { _, _ in .text("open") }
        router.group("/admin/v1/", middleware: [Mark(name: "auth", trail: trail)]) { admin in
            admin.add(.get, "/orders") { _, context in .text("list via \(context.route ?? "?")") }
            admin.add(.post, "reconcile") { _, _ in .text("reconciled") }
        }
        router.add(middleware: Mark(name: "log", trail: trail))
        #expect(router.patterns == ["/open", "/admin/v1/orders", "/admin/v1/reconcile"])

        let list = await router.respond(to: HTTPRequest(method: .get, path: "/admin/v1/orders"))
        #expect(Self.text(list) == "list via /admin/v1/orders")
        #expect(trail.take() == ["log /admin/v1/orders", "auth /admin/v1/orders"])

        let open = await router.respond(to: HTTPRequest(method: .get, path: "/open"))
        #expect(Self.text(open) == "open")
        #expect(trail.take() == ["log /open"])

        // 404, 405 and 413 pass through the router's middleware; a 413 on a group's route through the group's too.
        _ = await router.respond(to: HTTPRequest(method: .get, path: "/admin/v1/nothing"))
        let wrong = await router.respond(to: HTTPRequest(method: .delete, path: "/admin/v1/orders"))
        var oversized = HTTPRequest(method: .post, path: "/admin/v1/reconcile")
        oversized.bodyLimitExceeded = 10
        let tooLarge = await router.respond(to: oversized)
        #expect(wrong.status == 405)
        #expect(tooLarge.status == 413)
        #expect(
            trail.take() == ["log none", "log /admin/v1/orders", "log /admin/v1/reconcile", "auth /admin/v1/reconcile"])
    }

    @Test("a group's middleware can refuse, and the router's middleware sees the refusal")
    func refusal() async {
        let trail = Trail()
        var router = Router()
        router.add(middleware: Mark(name: "log", trail: trail))
        router.group("/admin", middleware: [Mark(name: "auth", trail: trail, refuses: true)]) { admin in
            admin.add(.get, "/secret") { _, _ in
                Issue.record("the handler ran")
                return .text("secret")
            }
        }
        let response = await router.respond(to: HTTPRequest(method: .get, path: "/admin/secret"))
        #expect(response.status == 401)
        #expect(trail.take() == ["log /admin/secret", "auth /admin/secret"])
    }

    @Test("nested groups compose prefixes and middleware, outer first; collections register on any group")
    func nested() async {
        let trail = Trail()
        var outer = RouterGroup("/v1", middleware: [Mark(name: "outer", trail: trail)])
        outer.group("/shop", middleware: [Mark(name: "middle", trail: trail)]) { shop in
            shop.group("/staff", middleware: [Mark(name: "inner", trail: trail)]) { staff in
                staff.add(Orders(label: "staff"))
            }
            shop.add(Orders(label: "shop"))
        }
        var separate = RouterGroup("/wallet", middleware: [Mark(name: "separate", trail: trail)])
        separate.add(.get, "/") { _, context in .text("root via \(context.route ?? "?")") }
        outer.add(separate)
        var router = Router()
        router.add(outer)
        router.add(Orders(label: "root"))
        #expect(
            router.patterns == [
                "/v1/shop/staff/orders/{id}", "/v1/shop/orders/{id}", "/v1/wallet", "/orders/{id}",
            ])

        let staff = await router.respond(to: HTTPRequest(method: .get, path: "/v1/shop/staff/orders/7"))
        #expect(Self.text(staff) == "staff order 7 via /v1/shop/staff/orders/{id}")
        #expect(
            trail.take() == [
                "outer /v1/shop/staff/orders/{id}", "middle /v1/shop/staff/orders/{id}",
                "inner /v1/shop/staff/orders/{id}",
            ])
        let shop = await router.respond(to: HTTPRequest(method: .get, path: "/v1/shop/orders/8"))
        #expect(Self.text(shop) == "shop order 8 via /v1/shop/orders/{id}")
        #expect(trail.take() == ["outer /v1/shop/orders/{id}", "middle /v1/shop/orders/{id}"])
        let wallet = await router.respond(to: HTTPRequest(method: .get, path: "/v1/wallet"))
        #expect(Self.text(wallet) == "root via /v1/wallet")
        #expect(trail.take() == ["outer /v1/wallet", "separate /v1/wallet"])
        let root = await router.respond(to: HTTPRequest(method: .get, path: "/orders/9"))
        #expect(Self.text(root) == "root order 9 via /orders/{id}")
        #expect(trail.take() == [])
    }

    @Test("a parameter the route does not have is 400 missingParameter")
    func missingParameter() async throws {
        var router = Router()
        router.add(.get, "/v1/orders/{id}") { _, context in .text(try context.parameter("orderId")) }
        let response = await router.respond(to: HTTPRequest(method: .get, path: "/v1/orders/42"))
        #expect(response.status == 400)
        let body = try JSONSerialization.jsonObject(with: response.body) as? [String: [String: String]]
        #expect(body?["error"]?["code"] == "missingParameter")
        #expect(throws: HTTPError.missingParameter("x")) { try RequestContext(route: nil).parameter("x") }
        #expect(try RequestContext(route: "/{x}", parameters: ["x": "1"]).parameter("x") == "1")
    }

    @Test("an authentication middleware hands the handler its identity; a route outside the group gets none")
    func identity() async {
        var router = Router()
        router.group("/me", middleware: [Authenticate()]) { me in
            me.add(.get, "/") { _, context in .text("hello \(try context.identity(as: String.self))") }
        }
        router.add(.get, "/stray") { _, context in .text("hello \(try context.identity(as: String.self))") }
        var request = HTTPRequest(method: .get, path: "/me")
        request.headers["X-User"] = "ada"
        #expect(Self.text(await router.respond(to: request)) == "hello ada")
        #expect(await router.respond(to: HTTPRequest(method: .get, path: "/me")).status == 401)
        var stray = HTTPRequest(method: .get, path: "/stray")
        stray.headers["X-User"] = "ada"
        #expect(await router.respond(to: stray).status == 500)
    }
}
