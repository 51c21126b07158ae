import Foundation
import HTTPCore
import MerchantCore
import Synchronization

/// Middleware that writes one log line and records metrics for every request the router sees (404, 405 and 413
/// included): method, route pattern, status, duration, request id, the checkout and order ids and the error
/// code. Fields come from the context, the thrown error and the response's `logFields`: never card data.
public struct RequestLogging: Middleware {
    public let logger: RequestLogger
    public let metrics: Metrics

    public func handle(_ request: HTTPRequest, context: RequestContext, next: Next) async throws -> HTTPResponse {
        let clock = ContinuousClock()
        let start = clock.now
        var code: String?
        let response: HTTPResponse
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            code = error.code
            response = error.response
        } catch {
            code = HTTPError.internalError().code
            response = HTTPError.internalError().response
        }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        // Labels from a fixed set: the router's patterns, the methods HTTP defines; anything else is `other`.
        let route = context.route ?? "other"
        let method = Metrics.methodLabel(request.method.rawValue)
        metrics.recordRequest(route: route, method: method, status: response.status, seconds: seconds)
        var line: [String: any Sendable] = [
            "method": method, "route": route, "status": response.status,
            "durationMs": (seconds * 1_000_000).rounded() / 1000, "requestId": context.requestID,
        ]
        if let id = context.parameters["id"], id.hasPrefix("chk_") { line["checkoutId"] = id }
        if let code { line["code"] = code }
        for (key, value) in response.logFields { line[key] = value }
        let level = response.status >= 500 ? "error" : response.status >= 400 ? "warn" : "info"
        logger.log(level, "request", line)
        return response
    }
}

/// Counters and a latency histogram in the Prometheus text format (`GET /metrics`).
public final class Metrics: Sendable {
    /// Upper bounds of the latency histogram's buckets, in seconds.
    public static let latencyBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private struct RequestKey: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    private struct Histogram {
        var buckets = [Int](repeating: 0, count: Metrics.latencyBuckets.count)
        var count = 0
        var sum = 0.0
    }

    private struct State {
        var requests: [RequestKey: Int] = [:]
        var latency: [String: Histogram] = [:]
        var payments: [String: Int] = [:]
        var webhooks: [WebhookKey: Int] = [:]
        var webhookRejections: [WebhookKey: Int] = [:]
    }

    /// A provider and an outcome (or a rejection's reason): both from fixed sets.
    private struct WebhookKey: Hashable, Comparable {
        var provider: String
        var label: String
        static func < (lhs: Self, rhs: Self) -> Bool { (lhs.provider, lhs.label) < (rhs.provider, rhs.label) }
    }

    private let state = Mutex(State())

    public init() {}

    /// The methods counted under their own name; any other is counted as `other`.
    public static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    /// `method` if it is one of ``knownMethods``, else `other`.
    public static func methodLabel(_ method: String) -> String { knownMethods.contains(method) ? method : "other" }

    /// Counts one answered request and its duration. `route` must come from a fixed set (the router's patterns or
    /// `other`); a method outside ``knownMethods`` is counted as `other`, a status outside 100-599 as 0.
    public func recordRequest(route: String, method: String, status: Int, seconds: Double) {
        let method = Self.methodLabel(method)
        let status = (100...599).contains(status) ? status : 0
        state.withLock { state in
            state.requests[RequestKey(route: route, method: method, status: status), default: 0] += 1
            var histogram = state.latency[route] ?? Histogram()
            for (index, bound) in Self.latencyBuckets.enumerated() where seconds <= bound {
                histogram.buckets[index] += 1
            }
            histogram.count += 1
            histogram.sum += seconds
            state.latency[route] = histogram
        }
    }

    /// Counts one payment attempt by outcome (`approved`, `declined`, `error`, `refused`, `replayed`, ...).
    public func recordPayment(outcome: String) {
        state.withLock { $0.payments[outcome, default: 0] += 1 }
    }

    /// Counts one signed webhook event by outcome (a ``MerchantCore/ProviderEventResult/Outcome``, `notHandled`,
    /// `malformed` or `storeError`).
    public func recordWebhook(provider: String, outcome: String) {
        state.withLock { $0.webhooks[WebhookKey(provider: provider, label: outcome), default: 0] += 1 }
    }

    /// Counts one webhook delivery refused for its signature, by reason (a `WebhookVerdict.Reason`).
    public func recordWebhookRejection(provider: String, reason: String) {
        state.withLock { $0.webhookRejections[WebhookKey(provider: provider, label: reason), default: 0] += 1 }
    }

    /// The Prometheus text exposition.
    public func render() -> String {
        let snapshot = state.withLock { $0 }
        var lines: [String] = []
        lines.append("# HELP applepay_http_requests_total HTTP requests answered, by route, method and status.")
        lines.append("# TYPE applepay_http_requests_total counter")
        for (key, count) in snapshot.requests.sorted(by: {
            ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status)
        }) {
            lines.append(
                "applepay_http_requests_total{route=\"\(Self.escape(key.route))\",method=\"\(Self.escape(key.method))\",status=\"\(key.status)\"} \(count)"
            )
        }
        lines.append("# HELP applepay_payments_total Payment attempts, by outcome.")
        lines.append("# TYPE applepay_payments_total counter")
        for (outcome, count) in snapshot.payments.sorted(by: { $0.key < $1.key }) {
            lines.append("applepay_payments_total{outcome=\"\(Self.escape(outcome))\"} \(count)")
        }
        lines.append("# HELP applepay_webhook_events_total Signed provider webhook events, by provider and outcome.")
        lines.append("# TYPE applepay_webhook_events_total counter")
        for (key, count) in snapshot.webhooks.sorted(by: { $0.key < $1.key }) {
            lines.append(
                "applepay_webhook_events_total{provider=\"\(Self.escape(key.provider))\",outcome=\"\(Self.escape(key.label))\"} \(count)"
            )
        }
        lines.append(
            "# HELP applepay_webhook_rejections_total Webhook deliveries refused for their signature, by provider and reason."
        )
        lines.append("# TYPE applepay_webhook_rejections_total counter")
        for (key, count) in snapshot.webhookRejections.sorted(by: { $0.key < $1.key }) {
            lines.append(
                "applepay_webhook_rejections_total{provider=\"\(Self.escape(key.provider))\",reason=\"\(Self.escape(key.label))\"} \(count)"
            )
        }
        lines.append("# HELP applepay_http_request_duration_seconds Time to answer a request, by route.")
        lines.append("# TYPE applepay_http_request_duration_seconds histogram")
        for (route, histogram) in snapshot.latency.sorted(by: { $0.key < $1.key }) {
            let label = Self.escape(route)
            for (index, bound) in Self.latencyBuckets.enumerated() {
                lines.append(
                    "applepay_http_request_duration_seconds_bucket{route=\"\(label)\",le=\"\(bound)\"} \(histogram.buckets[index])"
                )
            }
            lines.append(
                "applepay_http_request_duration_seconds_bucket{route=\"\(label)\",le=\"+Inf\"} \(histogram.count)")
            lines.append("applepay_http_request_duration_seconds_sum{route=\"\(label)\"} \(histogram.sum)")
            lines.append("applepay_http_request_duration_seconds_count{route=\"\(label)\"} \(histogram.count)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
