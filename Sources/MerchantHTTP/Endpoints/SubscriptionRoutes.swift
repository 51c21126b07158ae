import ApplePay
import Foundation
import Foundations
import HTTPServer
import MerchantCore

/// The subscription routes of the JSON API: Apple's token notification and the customer's subscription as JSON
/// (with the subscription's secret). The customer's HTML pages are ``SubscriptionPages``, the admin API's
/// `/admin/v1/subscriptions` ``SubscriptionAdminRoutes``.
struct SubscriptionRoutes: RouteCollection {
    let service: SubscriptionService

    func register(on group: inout RouterGroup) {
        let service = self.service
        // Apple: GET {tokenNotificationURL}/notification/merchantToken/{eventId}, no body, no signature. Answered
        // 200 at once (unknown events too; a 500 makes Apple retry at once); the event is pulled and applied after.
        group.add(.get, "/apple-pay/notification/merchantToken/{eventId}") { _, context in
            let eventID = try context.parameter("eventId")
            Task { _ = await service.applyTokenEvent(eventID: eventID) }
            var response = HTTPResponse(status: 200)
            response.logFields["eventId"] = String(eventID.prefix(64))
            return response
        }
        group.add(.get, "/v1/subscriptions/manage") { _, _ in
            .text(
                "Open the management link of your payment confirmation: it carries your subscription's secret.\n")
        }
        group.add(.get, "/v1/subscriptions/{id}") { request, context in
            let subscription = try await service.customerSubscription(request, context)
            struct Answer: Encodable {
                var subscription: Subscription
                var charges: [SubscriptionCharge]
            }
            let charges = try await service.charges(of: subscription)
            return .encoding(Answer(subscription: subscription, charges: charges))
        }
    }
}

/// The customer's HTML pages, with the subscription's secret: the management page and the cancel form it posts
/// (`application/x-www-form-urlencoded`, so this group has no JSON content-type rule; the secret in the form's URL
/// is what a cross-site form cannot know).
struct SubscriptionPages: RouteCollection {
    let service: SubscriptionService

    func register(on group: inout RouterGroup) {
        let service = self.service
        group.add(.get, "/v1/subscriptions/{id}/manage") { request, context in
            let subscription = try await service.customerSubscription(request, context)
            return .text(
                ManagementPage.html(subscription, charges: try await service.charges(of: subscription)),
                contentType: "text/html; charset=utf-8")
        }
        group.add(.post, "/v1/subscriptions/{id}/cancel") { request, context in
            let subscription = try await service.customerSubscription(request, context)
            return try await service.cancelAnswer(subscription.id, by: "customer")
        }
    }
}

/// The admin API's subscriptions, in the admin group under `/admin/v1`: list, show, cancel, report a balance, and
/// charge what is due.
struct SubscriptionAdminRoutes: RouteCollection {
    let service: SubscriptionService
    /// Sandbox mode: `POST /admin/v1/subscriptions/charge-due` takes `{"now": ...}` (see ``chargeDueInstant(_:)``).
    var movableClock = false

    func register(on group: inout RouterGroup) {
        let service = self.service
        group.add(.get, "/subscriptions") { request, _ in
            struct Answer: Encodable { var subscriptions: [Subscription] }
            let statuses = request.query["status"].map {
                $0.split(separator: ",").compactMap { SubscriptionStatus(rawValue: String($0)) }
            }
            let list = try await service.store.subscriptions(
                SubscriptionFilter(
                    statuses: statuses, checkoutID: request.query["checkoutId"],
                    limit: min(max(Int(request.query["limit"] ?? "") ?? 100, 1), 500)))
            return .encoding(Answer(subscriptions: list))
        }
        group.add(.get, "/subscriptions/{id}") { _, context in
            guard let subscription = try await service.store.subscription(id: try context.parameter("id")) else {
                throw HTTPError.notFound("No such subscription.")
            }
            struct Answer: Encodable {
                var subscription: Subscription
                var charges: [SubscriptionCharge]
            }
            return .encoding(Answer(subscription: subscription, charges: try await service.charges(of: subscription)))
        }
        group.add(.post, "/subscriptions/{id}/cancel") { _, context in
            try await service.cancelAnswer(try context.parameter("id"), by: "merchant")
        }
        group.add(.post, "/subscriptions/{id}/balance") { request, context in
            struct Body: Decodable { var balance: String }
            let body = try JSONBody.decode(Body.self, from: request)
            guard let balance = Decimal(string: body.balance) else {
                throw HTTPError.invalidRequest("balance must be a decimal string such as \"3.50\".")
            }
            do {
                return .encoding(try await service.reportBalance(id: try context.parameter("id"), balance: balance))
            } catch let refusal as SubscriptionService.Refusal {
                throw HTTPError(refusal)
            }
        }
        group.add(.post, "/subscriptions/charge-due") { request, _ in
            struct Answer: Encodable {
                var now: String
                var charges: [SubscriptionCharge]
            }
            let now = try chargeDueInstant(request)
            var response = HTTPResponse.encoding(
                Answer(now: BillingPlan.formatDate(now), charges: await service.chargeDue(now: now)))
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
}

extension SubscriptionService {
    /// The path's subscription, once the request's secret (`X-Subscription-Secret` or `?secret=`) matches it
    /// (compared in constant time); else `404`, as for an unknown one.
    fileprivate func customerSubscription(_ request: HTTPRequest, _ context: RequestContext) async throws
        -> Subscription
    {
        let id = try context.parameter("id")
        let secret = request.headers["X-Subscription-Secret"] ?? request.query["secret"] ?? ""
        guard let subscription = try await store.subscription(id: id), constantTimeEqual(secret, subscription.secret)
        else { throw HTTPError.notFound("No such subscription (or a wrong secret).") }
        return subscription
    }

    fileprivate func charges(of subscription: Subscription) async throws -> [SubscriptionCharge] {
        try await store.subscriptionCharges(subscriptionID: subscription.id)
    }

    /// Cancels the subscription `id`, answering it as JSON.
    fileprivate func cancelAnswer(_ id: String, by actor: String) async throws -> HTTPResponse {
        do {
            var response = HTTPResponse.encoding(try await cancel(id: id, by: actor))
            response.logFields["subscriptionId"] = id
            return response
        } catch let refusal as SubscriptionService.Refusal {
            throw HTTPError(refusal)
        }
    }
}
