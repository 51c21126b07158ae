import Foundation
import HTTPCore
import MerchantCore

/// Health and metrics: `GET /healthz` (`503 storeUnavailable` when the store does not answer) and `GET /metrics`
/// (the Prometheus text of ``MerchantMetrics``, served by swift-prometheus).
struct OperationsRoutes: RouteCollection {
    let store: any OrderStore
    let metrics: MerchantMetrics

    func register(on group: inout RouterGroup) {
        group.add(.get, "/healthz") { _, _ in try await health() }
        // Served when the metrics are recorded into a Prometheus registry (``MerchantMetrics/registry``).
        if metrics.registry != nil {
            group.add(.get, "/metrics") { _, _ in
                .text(metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
            }
        }
    }

    func health() async throws(HTTPError) -> HTTPResponse {
        do {
            _ = try await store.checkout(id: "chk_healthcheck")
        } catch {
            throw HTTPError(status: 503, code: "storeUnavailable", message: "The order store does not answer.")
        }
        return .encoding(["status": "ok"])
    }
}
