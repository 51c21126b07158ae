import Foundation
import Foundations
import HTTPCore
import MerchantCore
import Synchronization

/// Middleware that marks every answer as private and not to be sniffed: `Cache-Control: no-store` (answers carry
/// checkouts, contacts and orders) and `X-Content-Type-Options: nosniff`, errors included.
public struct SecurityHeaders: Middleware {
    public init() {}

    public func handle(_ request: HTTPRequest, context: RequestContext, next: Next) async throws -> HTTPResponse {
        var response: HTTPResponse
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = error.response
        } catch {
            response = HTTPError.internalError().response
        }
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response
    }
}

/// Middleware that refuses a `POST` without `Content-Type: application/json` (parameters such as `charset=utf-8`
/// allowed) with `415 unsupportedMediaType`: a browser sends another site's form or `text/plain` fetch without a
/// preflight, JSON never.
public struct RequireJSONContentType: Middleware {
    public init() {}

    public func handle(_ request: HTTPRequest, context: RequestContext, next: Next) async throws -> HTTPResponse {
        if request.method == .post || request.method == .put || request.method == .patch,
            !Self.isJSON(request.headers["Content-Type"])
        {
            throw HTTPError(
                status: 415, code: "unsupportedMediaType",
                message: "\(request.method) requests must carry Content-Type: application/json.")
        }
        return try await next(request, context)
    }

    /// Whether a `Content-Type` value is `application/json` (in any case), with or without parameters, optional
    /// whitespace (space or tab, RFC 9110 §5.6.3) around the media type. Compared byte by byte: this runs for every
    /// POST, and Foundation's trimming and lowercasing cost more than the rest of the check a hundred times over.
    static func isJSON(_ value: String?) -> Bool {
        guard var value else { return false }
        return value.withUTF8 { bytes in
            let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
            var end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
            var start = bytes.startIndex
            while start < end, isSpace(bytes[start]) { start += 1 }
            while end > start, isSpace(bytes[end - 1]) { end -= 1 }
            let expected: StaticString = "application/json"
            guard end - start == expected.utf8CodeUnitCount else { return false }
            return expected.withUTF8Buffer { expected in
                // ASCII letters lowercased (`| 0x20`); every other byte must match as it is.
                zip(bytes[start..<end], expected).allSatisfy { given, wanted in
                    given == wanted || (wanted >= 0x61 && wanted <= 0x7a && given | 0x20 == wanted)
                }
            }
        }
    }
}

/// Middleware that refuses a request without `Authorization: Bearer <token>` carrying `token` (compared in constant
/// time) with `401 unauthorized` and `WWW-Authenticate: Bearer`: the admin group's one check. An empty `token`
/// refuses every request. Failed attempts are counted per client (``RateLimiter/clientKey(_:)``): past
/// `failureLimit`, that client is answered `429 rateLimited` with `Retry-After` before its token is looked at, the
/// right one included (else the difference between 429 and an answer would still tell a guess right). A client
/// under the limit is never slowed. Requests made in process (no client address) are not counted.
public struct BearerAuthentication: Middleware {
    private let token: String
    /// Failed attempts per client; `nil`: not limited.
    public let failures: RateLimiter?

    /// Ten wrong tokens at once, then one every ten seconds.
    public static let defaultFailureLimit = RateLimit(perMinute: 6, burst: 10)

    /// - Parameters:
    ///   - token: the bearer token a request must carry (the admin token).
    ///   - failureLimit: failed attempts a client may make; `nil`: no limit.
    public init(token: String, failureLimit: RateLimit? = BearerAuthentication.defaultFailureLimit) {
        self.token = token
        self.failures = failureLimit.map { RateLimiter(limit: $0) }
    }

    public func handle(_ request: HTTPRequest, context: RequestContext, next: Next) async throws -> HTTPResponse {
        let header = request.headers["Authorization"] ?? ""
        let prefix = "Bearer "
        let presented = header.hasPrefix(prefix) ? String(header.dropFirst(prefix.count)) : ""
        let authorized = { !token.isEmpty && constantTimeEqual(presented, token) }
        let outcome: RateLimiter.Outcome
        if let failures, let client = request.clientAddress {
            outcome = failures.attempt(RateLimiter.clientKey(client), authorized)
        } else {
            outcome = authorized() ? .succeeded : .failed
        }
        switch outcome {
        case .succeeded:
            return try await next(request, context)
        case .failed:
            var error = HTTPError(
                status: 401, code: "unauthorized", message: "The admin API needs Authorization: Bearer <admin token>.")
            error.headers["WWW-Authenticate"] = "Bearer"
            throw error
        case .refused(let wait):
            var error = HTTPError(
                status: 429, code: "rateLimited",
                message: "Too many failed admin API attempts from this address; try again in \(wait) s.")
            error.headers["Retry-After"] = String(wait)
            throw error
        }
    }
}

/// A token bucket per client address: `burst` requests at once, refilled at `perMinute` a minute.
public struct RateLimit: Sendable, Equatable, Codable {
    /// Requests a minute, sustained.
    public var perMinute: Int
    /// Requests allowed at once after a quiet spell.
    public var burst: Int

    public init(perMinute: Int, burst: Int) {
        self.perMinute = perMinute
        self.burst = burst
    }
}

/// Token buckets by key (a client address), in bounded memory: past `maximumKeys`, buckets that have refilled
/// (indistinguishable from new ones) are dropped first, then the least recently used.
public final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    public let limit: RateLimit
    public let maximumKeys: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    public init(limit: RateLimit, maximumKeys: Int = 10_000) {
        self.limit = limit
        self.maximumKeys = max(1, maximumKeys)
    }

    /// The key per-client limits count under, for a client address (``HTTPCore/HTTPRequest/clientAddress``): an
    /// IPv4 address itself (an IPv4-mapped IPv6 address as the IPv4 one), an IPv6 address's /64 (the allocation of
    /// one customer: addresses rotated inside it are one client), anything else (a proxy's obfuscated identifier)
    /// as it is.
    public static func clientKey(_ address: String) -> String {
        guard let parsed = IPAddress(address) else { return address }
        if parsed.isIPv4 { return parsed.description }
        return IPNetwork(containing: parsed, prefixLength: 64).description
    }

    private var rate: Double { Double(max(1, limit.perMinute)) / 60 }
    private var capacity: Double { Double(max(1, limit.burst)) }

    private static func seconds(_ elapsed: Duration) -> Double {
        Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// What ``attempt(_:now:_:)`` did.
    public enum Outcome: Sendable, Equatable {
        /// The attempt was made and succeeded: no token taken.
        case succeeded
        /// The attempt was made and failed: a token taken.
        case failed
        /// `key` had no token left: the attempt was not made; the seconds until a token is available.
        case refused(retryAfter: Int)
    }

    /// Makes `attempt` for `key` unless `key` has no token left, taking a token only when it fails: a limit on
    /// failures. Checked, made and counted under one lock, so concurrent attempts cannot all pass the check before
    /// any failure is counted (`attempt` must be quick: a comparison).
    public func attempt(_ key: String, now: ContinuousClock.Instant = .now, _ attempt: () -> Bool) -> Outcome {
        let rate = self.rate
        let capacity = self.capacity
        let maximumKeys = self.maximumKeys
        return buckets.withLock { buckets -> Outcome in
            var bucket = buckets[key] ?? Bucket(tokens: capacity, updated: now)
            bucket.tokens = min(capacity, bucket.tokens + max(0, Self.seconds(now - bucket.updated)) * rate)
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return .refused(retryAfter: max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))))
            }
            // A success changes nothing: the bucket as stored refills to the same level.
            if attempt() { return .succeeded }
            bucket.tokens -= 1
            if buckets[key] == nil && buckets.count >= maximumKeys {
                Self.evict(&buckets, now: now, rate: rate, capacity: capacity, keep: maximumKeys)
            }
            buckets[key] = bucket
            return .failed
        }
    }

    /// Takes a token for `key`: `nil` when allowed, else the seconds until a token is available.
    public func acquire(_ key: String, now: ContinuousClock.Instant = .now) -> Int? {
        switch attempt(key, now: now, { false }) {
        case .refused(let wait): wait
        case .succeeded, .failed: nil
        }
    }

    /// How many keys are tracked now.
    public var trackedKeys: Int { buckets.withLock { $0.count } }

    private static func evict(
        _ buckets: inout [String: Bucket], now: ContinuousClock.Instant, rate: Double, capacity: Double, keep: Int
    ) {
        buckets = buckets.filter { _, bucket in bucket.tokens + seconds(now - bucket.updated) * rate < capacity }
        guard buckets.count >= keep else { return }
        // Every client is still active: drop the least recently used tenth.
        let oldest = buckets.sorted { $0.value.updated < $1.value.updated }.prefix(max(1, buckets.count / 10))
        for (key, _) in oldest { buckets.removeValue(forKey: key) }
    }
}

/// Middleware that limits, per client (``RateLimiter/clientKey(_:)`` of the request's client address: the
/// address behind a trusted proxy, an IPv6 client's /64), the creation of checkouts and the sheet updates (shipping
/// contact, shipping method, payment method, coupon), answering `429 rateLimited` with `Retry-After`. Requests
/// without a client address (made in process) are not limited.
public struct RateLimiting: Middleware {
    public let checkouts: RateLimiter
    public let updates: RateLimiter

    static let updateRoutes: Set<String> = [
        "/v1/checkouts/{id}/shipping-contact", "/v1/checkouts/{id}/shipping-method",
        "/v1/checkouts/{id}/payment-method", "/v1/checkouts/{id}/coupon",
    ]

    public init(checkouts: RateLimit, updates: RateLimit, maximumClients: Int = 10_000) {
        self.checkouts = RateLimiter(limit: checkouts, maximumKeys: maximumClients)
        self.updates = RateLimiter(limit: updates, maximumKeys: maximumClients)
    }

    public func handle(_ request: HTTPRequest, context: RequestContext, next: Next) async throws -> HTTPResponse {
        guard request.method == .post, let address = request.clientAddress, let route = context.route else {
            return try await next(request, context)
        }
        let limiter: RateLimiter?
        if route == "/v1/checkouts" {
            limiter = checkouts
        } else if Self.updateRoutes.contains(route) {
            limiter = updates
        } else {
            limiter = nil
        }
        if let limiter, let wait = limiter.acquire(RateLimiter.clientKey(address)) {
            var error = HTTPError(
                status: 429, code: "rateLimited",
                message: "Too many requests from this address; try again in \(wait) s.")
            error.headers["Retry-After"] = String(wait)
            throw error
        }
        return try await next(request, context)
    }
}
