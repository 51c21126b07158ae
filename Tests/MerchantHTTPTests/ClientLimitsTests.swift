import Foundation
import HTTPCore
import MerchantHTTP
import MerchantServer
import MerchantTestSupport
import Synchronization
import Testing

/// Per-client limits behind a load balancer (issue 22): the client is the one a trusted proxy names, IPv6 clients
/// count by /64, and failed admin attempts are limited per client.
@Suite("Per-client limits behind trusted proxies; admin token rules")
struct ClientLimitsTests {
    static let checkout = Data(#"{"items": [{"sku": "MUG-01", "quantity": 1}]}"#.utf8)

    /// `POST /v1/checkouts` over the socket, as forwarded for `client` when given.
    static func create(_ server: ServerHarness, forwardedFor client: String?) async throws -> ServerHarness.Reply {
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json")]
        if let client { headers.append(("X-Forwarded-For", client)) }
        return try await server.send("POST", "/v1/checkouts", headers: headers, body: checkout)
    }

    /// The `Retry-After` seconds of a reply (header names as the client gave them, in any case).
    static func retryAfter(_ reply: ServerHarness.Reply) -> Int? {
        reply.headers.first { $0.key.lowercased() == "retry-after" }.flatMap { Int($0.value) }
    }

    static func oneCheckoutEach(_ configuration: inout MerchantServerConfiguration) {
        configuration.rateLimits = RateLimits(
            checkouts: RateLimit(perMinute: 1, burst: 1), updates: RateLimit(perMinute: 1, burst: 1))
    }

    @Test(
        "behind a trusted proxy (the loopback peer), two clients with different X-Forwarded-For get their own buckets")
    func trustedProxy() async throws {
        try await ServerHarness.with(
            live: true,
            configure: {
                Self.oneCheckoutEach(&$0)
                $0.trustedProxies = TrustedProxies([IPNetwork("127.0.0.1")!])
            },
            body: { server in
                #expect(try await Self.create(server, forwardedFor: "203.0.113.1").status == 201)
                let again = try await Self.create(server, forwardedFor: "198.51.100.9, 203.0.113.1")
                #expect(again.status == 429)
                #expect(Self.retryAfter(again).map { $0 >= 1 } == true)
                #expect(try await Self.create(server, forwardedFor: "203.0.113.2").status == 201)
                #expect(try await Self.create(server, forwardedFor: "[2001:db8:1:2::1]:443").status == 201)
                // Another address in the same /64 is the same client.
                #expect(try await Self.create(server, forwardedFor: "2001:db8:1:2:ffff::7").status == 429)
                // No header: the proxy itself.
                #expect(try await Self.create(server, forwardedFor: nil).status == 201)
                #expect(try await Self.create(server, forwardedFor: nil).status == 429)
            })
    }

    @Test("the X-Forwarded-For of a peer that is not a trusted proxy is ignored: one bucket for all")
    func untrustedPeer() async throws {
        for proxies in [TrustedProxies(), TrustedProxies([IPNetwork("10.0.0.0/8")!])] {
            try await ServerHarness.with(
                live: true,
                configure: {
                    Self.oneCheckoutEach(&$0)
                    $0.trustedProxies = proxies
                },
                body: { (server: ServerHarness) async throws -> Void in
                    #expect(try await Self.create(server, forwardedFor: "203.0.113.1").status == 201)
                    #expect(try await Self.create(server, forwardedFor: "203.0.113.2").status == 429)
                })
        }
    }

    @Test("IPv6 clients count by /64, IPv4-mapped IPv6 as IPv4, obfuscated identifiers as they are")
    func clientKeys() async throws {
        #expect(RateLimiter.clientKey("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64")
        #expect(RateLimiter.clientKey("2001:db8:1:2::9") == RateLimiter.clientKey("2001:db8:1:2:ffff:ffff:ffff:ffff"))
        #expect(RateLimiter.clientKey("2001:db8:1:3::1") != RateLimiter.clientKey("2001:db8:1:2::1"))
        #expect(RateLimiter.clientKey("::ffff:192.0.2.1") == "192.0.2.1")
        #expect(RateLimiter.clientKey("192.0.2.1") == "192.0.2.1")
        #expect(RateLimiter.clientKey("_hidden") == "_hidden")
        // Through the API's middleware, in process, with the addresses set as the server would.
        try await ServerHarness.with(
            configure: { Self.oneCheckoutEach(&$0) },
            body: { server in
                func create(from address: String) async -> Int {
                    var request = HTTPRequest(
                        method: .post, path: "/v1/checkouts", headers: ["Content-Type": "application/json"],
                        body: Self.checkout)
                    request.clientAddress = address
                    return await server.application.api.respond(to: request).status
                }
                #expect(await create(from: "2001:db8:1:2::1") == 201)
                #expect(await create(from: "2001:db8:1:2:dead:beef:0:1") == 429)
                #expect(await create(from: "2001:db8:1:3::1") == 201)
                #expect(await create(from: "192.0.2.1") == 201)
                #expect(await create(from: "::ffff:192.0.2.1") == 429)
            })
    }

    @Test("repeated wrong admin tokens get 429 with Retry-After, even the right one then; other clients are untouched")
    func adminFailures() async throws {
        try await ServerHarness.with(
            live: true,
            configure: {
                $0.trustedProxies = TrustedProxies([IPNetwork("127.0.0.1")!])
                $0.adminFailureLimit = RateLimit(perMinute: 1, burst: 3)
            },
            body: { server in
                func admin(_ token: String, from client: String) async throws -> ServerHarness.Reply {
                    try await server.send(
                        "GET", "/admin/v1/orders",
                        headers: [("Authorization", "Bearer \(token)"), ("X-Forwarded-For", client)])
                }
                let right = ServerHarness.adminToken
                // The right token is never slowed.
                for _ in 0..<12 { #expect(try await admin(right, from: "203.0.113.1").status == 200) }
                var statuses: [Int] = []
                for _ in 0..<5 { statuses.append(try await admin(right + "x", from: "203.0.113.1").status) }
                #expect(statuses == [401, 401, 401, 429, 429])
                let refused = try await admin(right, from: "203.0.113.1")
                #expect(refused.status == 429)
                #expect(refused.errorCode == "rateLimited")
                #expect(Self.retryAfter(refused).map { $0 >= 1 } == true)
                #expect(try await admin(right, from: "203.0.113.2").status == 200)
                #expect(try await admin("", from: "203.0.113.2").status == 401)
            })
    }

    @Test("a limit on failures: successes take nothing; concurrent failures are counted exactly, never all let through")
    func failureLimiter() {
        let limiter = RateLimiter(limit: RateLimit(perMinute: 1, burst: 5))
        for _ in 0..<1_000 { #expect(limiter.attempt("a") { true } == .succeeded) }
        #expect(limiter.trackedKeys == 0)
        let outcomes = Mutex<[RateLimiter.Outcome]>([])
        DispatchQueue.concurrentPerform(iterations: 200) { _ in
            let outcome = limiter.attempt("a") { false }
            outcomes.withLock { $0.append(outcome) }
        }
        let all = outcomes.withLock { $0 }
        #expect(all.filter { $0 == .failed }.count == 5)
        #expect(all.filter { if case .refused = $0 { true } else { false } }.count == 195)
        // Refused, the attempt is not even made.
        let made = Mutex(false)
        #expect(
            limiter.attempt("a") {
                made.withLock { $0 = true }
                return true
            } != .succeeded)
        #expect(!made.withLock { $0 })
        #expect(limiter.attempt("b") { true } == .succeeded)
    }

    @Test("an admin token shorter than 32 characters is refused at start-up with weakAdminToken")
    func shortAdminToken() async throws {
        do {
            let server = try await ServerHarness.start(configure: { $0.adminToken = String(repeating: "a", count: 31) })
            await server.stop()
            Issue.record("the server started with a 31-character admin token")
        } catch let error as ServerStartError {
            #expect(error.code == .weakAdminToken)
            #expect(error.message.contains("at least 32"))
            #expect(!error.message.contains(String(repeating: "a", count: 31)))
        }
        let server = try await ServerHarness.start(configure: { $0.adminToken = String(repeating: "a", count: 32) })
        let reply = try await server.admin("GET", "/admin/v1/orders", token: String(repeating: "a", count: 32))
        await server.stop()
        #expect(reply.status == 200)
    }
}
