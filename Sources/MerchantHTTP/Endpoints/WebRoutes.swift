import Foundation
import HTTPCore

/// The checkout page: its files (`/`, `/checkout.css`, `/checkout.js`) and `GET /v1/web/config`, its settings.
struct WebRoutes: RouteCollection {
    let page: WebCheckout

    func register(on group: inout RouterGroup) {
        group.add(resources: page.resources)
        let page = self.page
        group.add(.get, "/v1/web/config") { _, _ in page.configResponse() }
    }
}
