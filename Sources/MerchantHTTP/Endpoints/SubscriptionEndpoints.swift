import ApplePay
import Foundation
import Foundations
import HTTPServer
import MerchantCore

/// The subscription routes: Apple's token notification, the customer's management page (with the subscription's
/// secret), and the admin API's `/admin/v1/subscriptions`.
struct SubscriptionEndpoints: Sendable {
    let service: SubscriptionService
    let adminToken: String?
    let logger: RequestLogger
    /// Sandbox mode: `POST /admin/v1/subscriptions/charge-due` takes `{"now": ...}` (see ``chargeDueInstant(_:)``).
    var movableClock = false

    func register(on router: inout Router) {
        let endpoints = self
        // Apple: GET {tokenNotificationURL}/notification/merchantToken/{eventId}, no body, no signature. Answered
        // 200 at once (unknown events too; a 500 makes Apple retry at once); the event is pulled and applied after.
        router.add(.get, "/apple-pay/notification/merchantToken/{eventId}") { _, context in
            let eventID = context.parameters["eventId"] ?? ""
            Task { _ = await endpoints.service.applyTokenEvent(eventID: eventID) }
            var response = HTTPResponse(status: 200)
            response.logFields["eventId"] = String(eventID.prefix(64))
            return response
        }
        router.add(.get, "/v1/subscriptions/manage") { _, _ in
            .text(
                "Open the management link of your payment confirmation: it carries your subscription's secret.\n")
        }
        router.add(.get, "/v1/subscriptions/{id}") { request, context in
            let subscription = try await endpoints.customerSubscription(request, context)
            struct Answer: Encodable {
                var subscription: Subscription
                var charges: [SubscriptionCharge]
            }
            let charges = try await endpoints.charges(of: subscription)
            return .encoding(Answer(subscription: subscription, charges: charges))
        }
        router.add(.get, "/v1/subscriptions/{id}/manage") { request, context in
            let subscription = try await endpoints.customerSubscription(request, context)
            return .text(
                ManagementPage.html(subscription, charges: try await endpoints.charges(of: subscription)),
                contentType: "text/html; charset=utf-8")
        }
        router.add(.post, "/v1/subscriptions/{id}/cancel") { request, context in
            let subscription = try await endpoints.customerSubscription(request, context)
            return try await endpoints.cancel(subscription.id, by: "customer")
        }
        guard let adminToken, !adminToken.isEmpty else { return }
        func add(
            _ method: HTTPMethod, _ pattern: String,
            _ handler: @escaping @Sendable (HTTPRequest, RequestContext) async throws -> HTTPResponse
        ) {
            router.add(method, pattern) { request, context in
                try AdminEndpoints.authorize(request, token: adminToken)
                return try await handler(request, context)
            }
        }
        add(.get, "/admin/v1/subscriptions") { request, _ in
            struct Answer: Encodable { var subscriptions: [Subscription] }
            let statuses = request.query["status"].map {
                $0.split(separator: ",").compactMap { SubscriptionStatus(rawValue: String($0)) }
            }
            let list = try await endpoints.service.store.subscriptions(
                SubscriptionFilter(
                    statuses: statuses, checkoutID: request.query["checkoutId"],
                    limit: min(max(Int(request.query["limit"] ?? "") ?? 100, 1), 500)))
            return .encoding(Answer(subscriptions: list))
        }
        add(.get, "/admin/v1/subscriptions/{id}") { _, context in
            guard let subscription = try await endpoints.service.store.subscription(id: context.parameters["id"] ?? "")
            else { throw HTTPError.notFound("No such subscription.") }
            struct Answer: Encodable {
                var subscription: Subscription
                var charges: [SubscriptionCharge]
            }
            return .encoding(Answer(subscription: subscription, charges: try await endpoints.charges(of: subscription)))
        }
        add(.post, "/admin/v1/subscriptions/{id}/cancel") { _, context in
            try await endpoints.cancel(context.parameters["id"] ?? "", by: "merchant")
        }
        add(.post, "/admin/v1/subscriptions/{id}/balance") { request, context in
            struct Body: Decodable { var balance: String }
            let body = try JSONBody.decode(Body.self, from: request)
            guard let balance = Decimal(string: body.balance) else {
                throw HTTPError.invalidRequest("balance must be a decimal string such as \"3.50\".")
            }
            do {
                return .encoding(
                    try await endpoints.service.reportBalance(id: context.parameters["id"] ?? "", balance: balance))
            } catch let refusal as SubscriptionService.Refusal {
                throw endpoints.httpError(refusal)
            }
        }
        add(.post, "/admin/v1/subscriptions/charge-due") { request, _ in
            struct Answer: Encodable {
                var now: String
                var charges: [SubscriptionCharge]
            }
            let now = try endpoints.chargeDueInstant(request)
            var response = HTTPResponse.encoding(
                Answer(now: BillingPlan.formatDate(now), charges: await endpoints.service.chargeDue(now: now)))
            response.logFields["now"] = BillingPlan.formatDate(now)
            return response
        }
    }

    /// The instant `POST /admin/v1/subscriptions/charge-due` charges as of: the service's clock, or in sandbox mode
    /// the body's `{"now": ISO 8601}` (the operator moves the clock to see a later cycle charged). Outside sandbox
    /// mode a `now` is refused (`400 clockNotMovable`): a production scheduler charges by its own clock only.
    /// Moving the clock back is harmless: cycles already charged are never charged again.
    func chargeDueInstant(_ request: HTTPRequest) throws(HTTPError) -> Date {
        guard !request.body.isEmpty else { return service.clock() }
        struct Body: Decodable { var now: String? }
        let body = try JSONBody.decode(Body.self, from: request)
        guard let text = body.now else { return service.clock() }
        guard movableClock else {
            throw HTTPError(
                status: 400, code: "clockNotMovable",
                message: "\"now\" is accepted only in sandbox mode; without it the scheduler charges what is due now.")
        }
        guard let now = BillingPlan.parseDate(text) else {
            throw HTTPError.invalidRequest("now must be an ISO 8601 date such as \"2030-01-31T00:00:00Z\".")
        }
        return now
    }

    func customerSubscription(_ request: HTTPRequest, _ context: RequestContext) async throws -> Subscription {
        let id = context.parameters["id"] ?? ""
        let secret = request.headers["X-Subscription-Secret"] ?? request.query["secret"] ?? ""
        guard let subscription = try await service.store.subscription(id: id),
            constantTimeEqual(secret, subscription.secret)
        else { throw HTTPError.notFound("No such subscription (or a wrong secret).") }
        return subscription
    }

    func charges(of subscription: Subscription) async throws -> [SubscriptionCharge] {
        try await service.store.subscriptionCharges(subscriptionID: subscription.id)
    }

    func cancel(_ id: String, by actor: String) async throws -> HTTPResponse {
        do {
            var response = HTTPResponse.encoding(try await service.cancel(id: id, by: actor))
            response.logFields["subscriptionId"] = id
            return response
        } catch let refusal as SubscriptionService.Refusal {
            throw httpError(refusal)
        }
    }

    func httpError(_ refusal: SubscriptionService.Refusal) -> HTTPError {
        switch refusal {
        case .notFound: HTTPError.notFound("No such subscription.")
        case .notLive(let status):
            HTTPError(status: 409, code: "subscriptionNotLive", message: "The subscription is \(status.rawValue).")
        case .notAutomaticReload:
            HTTPError(status: 409, code: "notAutomaticReload", message: "Not an automatic-reload subscription.")
        case .conflict:
            HTTPError(status: 409, code: "conflict", message: "The subscription changed meanwhile; try again.")
        }
    }
}
