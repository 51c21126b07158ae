import Foundation
import Foundations
import HTTPCore
import Logging
import MerchantCore

/// The customer's order page, `GET /orders/{id}?secret=` (HTML; the Wallet order's `orderManagementURL`): reachable
/// with the order's view secret alone, no admin token; a missing or wrong secret answers like an unknown order.
/// Served with a Content-Security-Policy that allows only this server's style sheet, `Cache-Control: no-store` and
/// `Referrer-Policy: no-referrer` (the address holds the secret).
struct OrderPageRoutes: RouteCollection {
    let store: any OrderStore
    let storeName: String
    let logger: Logger

    func register(on group: inout RouterGroup) {
        group.add(.get, "/orders/{id}") { request, context in try await page(request, context) }
    }

    func page(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        let id = try context.parameter("id")
        let secret = request.query["secret"] ?? ""
        let order = try await storing(logger: logger) { () async throws(OrderStoreError) in
            try await store.order(id: id)
        }
        guard let order, constantTimeEqual(secret, order.viewSecret) else { throw .orderNotFound(id) }
        let steps = try await storing(logger: logger) { () async throws(OrderStoreError) in
            try await store.fulfillments(orderID: order.id)
        }
        var response = CustomerPage.response(
            OrderPage.html(order, steps: steps, storeName: storeName),
            contentSecurityPolicy: OrderPage.contentSecurityPolicy, referrerPolicy: "no-referrer")
        response.logFields["orderId"] = order.id
        return response
    }
}
