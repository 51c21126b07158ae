import Foundation
import Foundations
import HTTPCore
import Logging
import MerchantCore

/// The customer's view of an order, `GET /v1/orders/{id}`: only with the order's secret (`?secret=` or
/// `X-Order-Secret`), and without contacts. A missing or wrong secret answers like an unknown order.
struct OrderRoutes: RouteCollection {
    let store: any OrderStore
    let logger: Logger

    func register(on group: inout RouterGroup) {
        group.add(.get, "/v1/orders/{id}") { request, context in try await showOrder(request, context) }
    }

    func showOrder(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        let id = try context.parameter("id")
        let secret = request.headers["X-Order-Secret"] ?? request.query["secret"] ?? ""
        let order = try await storing(logger: logger) { () async throws(OrderStoreError) in
            try await store.order(id: id)
        }
        guard let order, constantTimeEqual(secret, order.viewSecret) else { throw .orderNotFound(id) }
        var response = HTTPResponse.encoding(order.customerView)
        response.logFields["checkoutId"] = order.checkoutID
        response.logFields["orderId"] = order.id
        return response
    }
}
