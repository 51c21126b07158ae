import Metrics
import Prometheus
import Synchronization

/// What the merchant API counts and times, recorded through swift-metrics: requests by route, method and status
/// (a `Counter`), their latency by route (a `Timer`, a histogram with ``latencyBuckets``), payment attempts by
/// outcome and provider webhooks by outcome or reason of refusal (counters).
///
/// An instance records into the `MetricsFactory` it was made with, never into `MetricsSystem.factory`: that global
/// can be set once per process, and one process may run several merchant servers (the tests start dozens), each of
/// which must serve its own counts at `GET /metrics`. So by default an instance makes a `PrometheusCollectorRegistry`
/// of its own and records through a `PrometheusMetricsFactory` over it, and `GET /metrics` serves that registry
/// (``render()``). An app that exports metrics itself passes its registry (`init(registry:)`: `/metrics` then serves
/// the app's metrics too) or its own factory (`init(factory:)`: any swift-metrics backend; `/metrics` is then not
/// served).
///
/// A handle is made once per label set and kept: label values come from fixed sets (route patterns, ``knownMethods``,
/// statuses, outcomes), so the handles are few, and a request's recording is a dictionary look-up under a lock and
/// an atomic increment.
public final class MerchantMetrics: Sendable {
    /// Upper bounds of the latency histogram's buckets, in seconds.
    public static let latencyBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// The methods counted under their own name; any other is counted as `other`.
    public static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    /// The registry `GET /metrics` serves; `nil` when recording into an app's factory.
    public let registry: PrometheusCollectorRegistry?
    private let factory: any MetricsFactory
    private let handles = Mutex(Handles())

    private struct RequestKey: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    /// A counter's name and its label values, in the order of its label names.
    private struct CounterKey: Hashable {
        var name: String
        var values: [String]
    }

    private struct Handles {
        var requests: [RequestKey: CoreMetrics.Counter] = [:]
        var latency: [String: CoreMetrics.Timer] = [:]
        var counters: [CounterKey: CoreMetrics.Counter] = [:]
    }

    /// Records into a registry of its own, which `GET /metrics` serves.
    public convenience init() {
        self.init(registry: PrometheusCollectorRegistry())
    }

    /// Records into `registry` (with ``latencyBuckets`` for the latency histogram), which `GET /metrics` serves.
    public init(registry: PrometheusCollectorRegistry) {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets[Family.requestDuration.name] = Self.latencyBuckets.map {
            .nanoseconds(Int64(($0 * 1e9).rounded()))
        }
        self.registry = registry
        self.factory = factory
    }

    /// Records into `factory` (an app's swift-metrics backend); `GET /metrics` is not served.
    public init(factory: any MetricsFactory) {
        self.registry = nil
        self.factory = factory
    }

    /// `method` if it is one of ``knownMethods``, else `other`.
    public static func methodLabel(_ method: String) -> String { knownMethods.contains(method) ? method : "other" }

    /// Counts one answered request and its duration. `route` must come from a fixed set (the router's patterns or
    /// `other`); a method outside ``knownMethods`` is counted as `other`, a status outside 100-599 as 0.
    public func recordRequest(route: String, method: String, status: Int, duration: Duration) {
        let key = RequestKey(
            route: route, method: Self.methodLabel(method), status: (100...599).contains(status) ? status : 0)
        let (counter, timer) = handles.withLock { handles in
            let counter = handles.requests.value(for: key) {
                makeCounter(Family.requests, ["route": key.route, "method": key.method, "status": String(key.status)])
            }
            let timer = handles.latency.value(for: key.route) {
                CoreMetrics.Timer(
                    label: Family.requestDuration.name, dimensions: [("route", Self.escape(key.route))],
                    factory: factory)
            }
            return (counter, timer)
        }
        counter.increment()
        timer.record(duration: duration)
    }

    /// Counts one payment attempt by outcome (`approved`, `declined`, `error`, `refused`, `replayed`, ...).
    public func recordPayment(outcome: String) {
        count(Family.payments, ["outcome": outcome])
    }

    /// Counts one signed webhook event by outcome (a ``MerchantCore/ProviderEventResult/Outcome``, `notHandled`,
    /// `malformed` or `storeError`).
    public func recordWebhook(provider: String, outcome: String) {
        count(Family.webhooks, ["provider": provider, "outcome": outcome])
    }

    /// Counts one webhook delivery refused for its signature, by reason (a `WebhookVerdict.Reason`).
    public func recordWebhookRejection(provider: String, reason: String) {
        count(Family.webhookRejections, ["provider": provider, "reason": reason])
    }

    /// The Prometheus text exposition of ``registry`` (empty without one): swift-prometheus's series, in the order
    /// of ``Family/all`` with each family's `# HELP` and `# TYPE` lines, present before anything is counted; series
    /// sorted within a family (a histogram's lines kept together); families recorded by others after ours.
    public func render() -> String {
        guard let registry else { return "" }
        return Self.arrange(registry.emitToString())
    }

    private func count(_ family: Family, _ labels: KeyValuePairs<String, String>) {
        let key = CounterKey(name: family.name, values: labels.map(\.value))
        handles.withLock { handles in handles.counters.value(for: key) { makeCounter(family, labels) } }.increment()
    }

    /// A counter of `family` with `labels`, label values escaped.
    private func makeCounter(_ family: Family, _ labels: KeyValuePairs<String, String>) -> CoreMetrics.Counter {
        CoreMetrics.Counter(
            label: family.name, dimensions: labels.map { ($0.key, Self.escape($0.value)) }, factory: factory)
    }

    /// A label value by the Prometheus text rules (`\\`, `\"`, `\n`): swift-prometheus writes values as they are.
    static func escape(_ value: String) -> String {
        // By scalars, not characters: "\r\n" is one character, whose "\n" must still be escaped.
        guard value.unicodeScalars.contains(where: { $0 == "\\" || $0 == "\"" || $0 == "\n" }) else { return value }
        var escaped = String.UnicodeScalarView()
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": escaped.append(contentsOf: #"\\"#.unicodeScalars)
            case "\"": escaped.append(contentsOf: #"\""#.unicodeScalars)
            case "\n": escaped.append(contentsOf: #"\n"#.unicodeScalars)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }
}

extension MerchantMetrics {
    /// A metric family of the merchant API: its name, Prometheus type and help text.
    public struct Family: Sendable, Equatable {
        public let name: String
        public let type: String
        public let help: String

        public static let requests = Family(
            name: "applepay_http_requests_total", type: "counter",
            help: "HTTP requests answered, by route, method and status.")
        public static let payments = Family(
            name: "applepay_payments_total", type: "counter", help: "Payment attempts, by outcome.")
        public static let webhooks = Family(
            name: "applepay_webhook_events_total", type: "counter",
            help: "Signed provider webhook events, by provider and outcome.")
        public static let webhookRejections = Family(
            name: "applepay_webhook_rejections_total", type: "counter",
            help: "Webhook deliveries refused for their signature, by provider and reason.")
        public static let requestDuration = Family(
            name: "applepay_http_request_duration_seconds", type: "histogram",
            help: "Time to answer a request, by route.")

        /// Every family, in the order `/metrics` gives them.
        public static let all: [Family] = [requests, payments, webhooks, webhookRejections, requestDuration]
    }

    /// The registry's text rearranged: ``Family/all`` first, each with its help, then the rest as the registry
    /// wrote them.
    static func arrange(_ text: String) -> String {
        var comments: [Substring: [Substring]] = [:]
        var series: [Substring: [Substring]] = [:]
        var histograms: Set<Substring> = []
        var order: [Substring] = []
        var current: Substring = ""
        for line in text.split(separator: "\n") {
            guard line.hasPrefix("# ") else {
                series[current, default: []].append(line)
                continue
            }
            let words = line.split(separator: " ", maxSplits: 3)
            guard words.count >= 3 else { continue }
            current = words[2]
            if comments[current] == nil { order.append(current) }
            comments[current, default: []].append(line)
            if words[1] == "TYPE", words.count == 4, words[3] == "histogram" { histograms.insert(current) }
        }
        var output: [Substring] = []
        for family in Family.all {
            let name = Substring(family.name)
            output.append(Substring("# HELP \(family.name) \(family.help)"))
            output.append(Substring("# TYPE \(family.name) \(family.type)"))
            output += sorted(series[name] ?? [], histogram: family.type == "histogram")
        }
        for name in order where !Family.all.contains(where: { $0.name == name }) {
            output += comments[name] ?? []
            output += sorted(series[name] ?? [], histogram: histograms.contains(name))
        }
        return output.joined(separator: "\n") + "\n"
    }

    /// Series lines sorted; a histogram's series is its buckets, sum and count, which the registry writes together
    /// (`_count` last) and which stay together.
    private static func sorted(_ lines: [Substring], histogram: Bool) -> [Substring] {
        guard histogram else { return lines.sorted() }
        var groups: [[Substring]] = []
        var group: [Substring] = []
        for line in lines {
            group.append(line)
            if line.prefix(while: { $0 != "{" && $0 != " " }).hasSuffix("_count") {
                groups.append(group)
                group = []
            }
        }
        if !group.isEmpty { groups.append(group) }
        return groups.sorted { $0[0] < $1[0] }.flatMap { $0 }
    }
}

extension Dictionary {
    /// The value for `key`, made by `make` and kept the first time.
    fileprivate mutating func value(for key: Key, orMake make: () -> Value) -> Value {
        if let value = self[key] { return value }
        let value = make()
        self[key] = value
        return value
    }
}
