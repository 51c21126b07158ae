import Foundation
import HTTPCore
import HTTPServer
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantSandbox
import MerchantStore
import MerchantTestSupport
import MetricsTestKit
import Prometheus
import Testing

@Suite("Metrics: swift-metrics recorded, swift-prometheus served")
struct MerchantMetricsTests {
    @Test("before anything is counted, /metrics names every family with its help and type, and no series")
    func emptyExposition() {
        #expect(
            MerchantMetrics().render() == """
                # HELP applepay_http_requests_total HTTP requests answered, by route, method and status.
                # TYPE applepay_http_requests_total counter
                # HELP applepay_payments_total Payment attempts, by outcome.
                # TYPE applepay_payments_total counter
                # HELP applepay_webhook_events_total Signed provider webhook events, by provider and outcome.
                # TYPE applepay_webhook_events_total counter
                # HELP applepay_webhook_rejections_total Webhook deliveries refused for their signature, by provider and reason.
                # TYPE applepay_webhook_rejections_total counter
                # HELP applepay_http_request_duration_seconds Time to answer a request, by route.
                # TYPE applepay_http_request_duration_seconds histogram

                """)
    }

    @Test("requests: a counter by route, method and status, and the latency histogram with the same buckets as ever")
    func requestSeries() throws {
        let metrics = MerchantMetrics()
        metrics.recordRequest(route: "/v1/products", method: "GET", status: 200, duration: .milliseconds(30))
        metrics.recordRequest(route: "/v1/products", method: "GET", status: 200, duration: .milliseconds(3))
        metrics.recordRequest(route: "/v1/products", method: "BREW", status: 999, duration: .seconds(20))
        let text = metrics.render()
        #expect(text.contains(#"applepay_http_requests_total{route="/v1/products",method="GET",status="200"} 2"#))
        #expect(text.contains(#"applepay_http_requests_total{route="/v1/products",method="other",status="0"} 1"#))
        let buckets = text.split(separator: "\n").filter {
            $0.hasPrefix(#"applepay_http_request_duration_seconds_bucket{route="/v1/products",le=""#)
        }
        #expect(
            buckets
                == [
                    "0.005\"} 1", "0.01\"} 1", "0.025\"} 1", "0.05\"} 2", "0.1\"} 2", "0.25\"} 2", "0.5\"} 2",
                    "1.0\"} 2", "2.5\"} 2", "5.0\"} 2", "10.0\"} 2", "+Inf\"} 3",
                ].map { #"applepay_http_request_duration_seconds_bucket{route="/v1/products",le=""# + $0 })
        #expect(text.contains(#"applepay_http_request_duration_seconds_sum{route="/v1/products"} 20.033"#))
        #expect(text.contains(#"applepay_http_request_duration_seconds_count{route="/v1/products"} 3"#))
        // The families stay in their order, their series sorted, a histogram's lines together.
        let names = text.split(separator: "\n").filter { $0.hasPrefix("# TYPE") }.map { $0.split(separator: " ")[2] }
        #expect(names == MerchantMetrics.Family.all.map { Substring($0.name) })
    }

    @Test("label values are escaped by the Prometheus rules, a CR LF's line feed included")
    func escaping() {
        let metrics = MerchantMetrics()
        metrics.recordWebhookRejection(provider: "stripe", reason: "a\r\nb\"")
        let text = metrics.render()
        #expect(text.contains(#"applepay_webhook_rejections_total{provider="stripe",reason="a\#r\nb\""} 1"#))
        #expect(!text.contains("\r\n"))
    }

    @Test("two servers in one process each serve their own counts")
    func serversApart() async throws {
        try await ServerHarness.with { first in
            try await ServerHarness.with { second in
                for _ in 0..<3 { _ = try await first.get("/v1/products") }
                _ = try await second.get("/v1/products")
                let series = #"applepay_http_requests_total{route="/v1/products",method="GET",status="200"}"#
                #expect(try await first.get("/metrics").text.contains("\(series) 3"))
                #expect(try await second.get("/metrics").text.contains("\(series) 1"))
            }
        }
    }

    @Test("an app's registry: /metrics serves the app's metrics after the merchant API's")
    func sharedRegistry() throws {
        let registry = PrometheusCollectorRegistry()
        let orders = MetricNameDescriptor(
            namespace: "shop", metricName: "orders", unitName: "total", helpText: "Orders.")
        registry.makeCounter(descriptor: orders, labels: [("kind", "web")]).increment(by: Int64(4))
        let metrics = MerchantMetrics(registry: registry)
        metrics.recordPayment(outcome: "approved")
        let text = metrics.render()
        #expect(text.contains(#"applepay_payments_total{outcome="approved"} 1"#))
        let ours = try #require(text.range(of: "# TYPE applepay_http_request_duration_seconds histogram"))
        let theirs = try #require(
            text.range(
                of: "# HELP shop_orders_total Orders.\n# TYPE shop_orders_total counter\n"
                    + #"shop_orders_total{kind="web"} 4"#))
        #expect(ours.upperBound < theirs.lowerBound)
    }

    @Test("an app's own metrics backend: the API records into it, and serves no /metrics")
    func appFactory() async throws {
        let backend = TestMetrics()
        let store = try SQLiteOrderStore(path: ":memory:")
        let api = MerchantAPI(
            services: MerchantServices(
                configuration: .demo, store: store, processor: SandboxProcessor(),
                tokenOpener: HostileClientTests.RefusingOpener(),
                validator: MerchantValidator(
                    merchantIdentifier: "merchant.test", displayName: "Test", domain: nil,
                    gatewayBaseURL: "https://apple-pay-gateway.apple.com", identity: nil),
                logger: .silent),
            metrics: MerchantMetrics(factory: backend))
        #expect(await api.respond(to: HTTPRequest(method: .get, path: "/v1/products")).status == 200)
        #expect(await api.respond(to: HTTPRequest(method: .get, path: "/metrics")).status == 404)
        let products = try backend.expectCounter(
            "applepay_http_requests_total", [("route", "/v1/products"), ("method", "GET"), ("status", "200")])
        #expect(products.totalValue == 1)
        #expect(
            try backend.expectTimer("applepay_http_request_duration_seconds", [("route", "/v1/products")]).values.count
                == 1)
        #expect(
            try backend.expectCounter(
                "applepay_http_requests_total", [("route", "other"), ("method", "GET"), ("status", "404")]
            ).totalValue == 1)
    }
}
