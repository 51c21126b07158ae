import ApplePay
import Foundation
import Foundations
import HTTPCore
import MerchantCore

/// Apple's merchant-token notifications: `GET {tokenNotificationURL}/notification/merchantToken/{eventId}`.
struct TokenNotificationRoutes: RouteCollection {
    let service: SubscriptionService
    /// How long a notification waits for its event to be pulled and applied before it is answered 500.
    var timeLimit: Duration = .seconds(5)

    func register(on group: inout RouterGroup) {
        let (service, timeLimit) = (self.service, self.timeLimit)
        // Apple: GET {tokenNotificationURL}/notification/merchantToken/{eventId}, no body, no signature. Answered 200
        // only once the event is pulled from Apple and applied, or known to be applied (an event Apple does not know
        // is answered 200 too, as Apple asks); 500 otherwise, within the time limit, so that Apple retries. An
        // event id no Apple event can have is not pulled at all.
        group.add(.get, "/apple-pay/notification/merchantToken/{eventId}") { _, context in
            let eventID = try context.parameter("eventId")
            let result: SubscriptionService.EventResult =
                Self.isPlausibleEventID(eventID)
                ? await service.handleTokenNotification(eventID: eventID, timeLimit: timeLimit) : .unknownEvent
            var response = HTTPResponse(status: result.isHandled ? 200 : result == .busy ? 503 : 500)
            if result == .busy { response.headers["Retry-After"] = "1" }
            response.logFields["eventId"] = String(eventID.prefix(64))
            response.logFields["tokenEvent"] = result.rawValue
            return response
        }
    }

    /// Letters, digits, `-` and `_`, at most 128 characters: what an event id in a URL path can be.
    static func isPlausibleEventID(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count)
            && id.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2D
                    || $0 == 0x5F
            }
    }
}

/// The customer's subscription as JSON (with the subscription's secret). Apple's token notification is
/// ``TokenNotificationRoutes``, the customer's HTML pages ``SubscriptionPages``, the admin API's
/// `/admin/v1/subscriptions` ``SubscriptionAdminRoutes``.
struct SubscriptionRoutes: RouteCollection {
    let service: SubscriptionService

    func register(on group: inout RouterGroup) {
        let service = self.service
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

/// The customer's HTML pages (``ManagementPage``), with the subscription's secret: the management page, at
/// `/v1/subscriptions/{id}/manage?secret=` and at the `managementURL` a plan checkout gives Apple
/// (`/v1/subscriptions/manage?checkout=ID&secret=`), and the cancel form it posts.
///
/// The form arrives as a browser posts it, `application/x-www-form-urlencoded`, so this group has no JSON rule.
/// Against another site's form it has two guards: the secret in the form's URL, which another site cannot know,
/// and a same-origin check: a form post's `Origin` (or, without one, its `Referer`) must be the server's public
/// URL's origin (`403 crossOriginForm` otherwise). A form post is answered `303 See Other` back to the page, which
/// then shows the subscription cancelled; a JSON or empty post (a program holding the secret) gets the JSON answer.
struct SubscriptionPages: RouteCollection {
    let service: SubscriptionService
    /// Checkouts, for the Apple-facing link before the subscription exists.
    let orders: any OrderStore
    /// The server's public URL (``StoreConfiguration/publicBaseURL``): its origin is the only one a form may come from.
    let publicBaseURL: String
    var storeName: String = "Subscription"

    func register(on group: inout RouterGroup) {
        let (service, orders, storeName) = (self.service, self.orders, self.storeName)
        let origin = Self.origin(of: publicBaseURL)
        group.add(.get, "/v1/subscriptions/{id}/manage") { request, context in
            let subscription = try await service.customerSubscription(request, context)
            return try await page(subscription)
        }
        group.add(.get, "/v1/subscriptions/manage") { request, _ in
            let secret = request.query["secret"] ?? ""
            guard let checkoutID = request.query["checkout"], !secret.isEmpty else {
                return ManagementPage.response(
                    ManagementPage.message(
                        heading: "Manage your subscription",
                        text:
                            "Open the management link of your payment confirmation: it carries your subscription's secret.",
                        storeName: storeName))
            }
            if let subscription = try await service.store.subscriptions(
                SubscriptionFilter(checkoutID: checkoutID, limit: 1)
            ).first, constantTimeEqual(secret, subscription.secret) {
                return try await page(subscription)
            }
            guard let checkout = try await orders.checkout(id: checkoutID),
                let expected = checkout.subscriptionSecret, constantTimeEqual(secret, expected)
            else { throw HTTPError.notFound("No such subscription (or a wrong secret).") }
            return ManagementPage.response(
                ManagementPage.message(
                    heading: "Your subscription has not started yet",
                    text: "It starts once the payment is confirmed. Come back to this page to see and manage it.",
                    storeName: storeName))
        }
        group.add(.post, "/v1/subscriptions/{id}/cancel") { request, context in
            let form = Self.isFormPost(request)
            if form, !Self.isSameOrigin(request, origin: origin) {
                throw HTTPError(
                    status: 403, code: "crossOriginForm",
                    message: "The cancel form must be posted from this site's own page.")
            }
            let subscription = try await service.customerSubscription(request, context)
            guard form else { return try await service.cancelAnswer(subscription.id, by: "customer") }
            do {
                _ = try await service.cancel(id: subscription.id, by: "customer")
            } catch SubscriptionService.Refusal.notLive {
                // Already ended (a second click): the page says so.
            } catch let refusal as SubscriptionService.Refusal {
                throw HTTPError(refusal)
            }
            var response = HTTPResponse(status: 303)
            response.headers["Location"] = "/v1/subscriptions/\(subscription.id)/manage?secret=\(subscription.secret)"
            response.logFields["subscriptionId"] = subscription.id
            return response
        }
    }

    /// The management page of `subscription`: the scheduler's charges after the one at checkout (its order).
    func page(_ subscription: Subscription) async throws -> HTTPResponse {
        var order: Order?
        if let id = subscription.orderID { order = try await orders.order(id: id) }
        return ManagementPage.response(
            ManagementPage.html(
                subscription, charges: try await service.charges(of: subscription), checkoutOrder: order,
                storeName: storeName))
    }

    /// Whether the body is one an HTML form sends (the three types a browser posts across sites without asking).
    static func isFormPost(_ request: HTTPRequest) -> Bool {
        let type =
            (request.headers["Content-Type"] ?? "").split(separator: ";").first?
            .trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return ["application/x-www-form-urlencoded", "multipart/form-data", "text/plain"].contains(type)
    }

    /// Whether the request's `Origin`, or without one its `Referer`, is `origin`. Neither: not same-origin.
    static func isSameOrigin(_ request: HTTPRequest, origin: String?) -> Bool {
        guard let origin else { return false }
        if let sent = request.headers["Origin"] { return sent.lowercased() == origin }
        if let referer = request.headers["Referer"] { return Self.origin(of: referer) == origin }
        return false
    }

    /// `scheme://host[:port]` of a URL, lowercased; the port only when it is not the scheme's default.
    static func origin(of url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty
        else { return nil }
        let defaultPort = scheme == "https" ? 443 : scheme == "http" ? 80 : nil
        let port = components.port.flatMap { $0 == defaultPort ? nil : ":\($0)" } ?? ""
        let shownHost = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(shownHost)\(port)"
    }
}

/// The admin API's subscriptions, in the admin group under `/admin/v1`: list, show, cancel, report a balance, and
/// charge what is due.
struct SubscriptionAdminRoutes: RouteCollection {
    let service: SubscriptionService
    /// Sandbox mode: `POST /admin/v1/subscriptions/charge-due` takes `{"now": ...}` (see ``chargeDueInstant(_:)``).
    var movableClock = false
    /// The `tokenNotificationURL` plan checkouts give Apple now (``PlanPricing/tokenNotificationURL``, from the one
    /// public URL): where `POST .../token-notification-url` points a token by default.
    var tokenNotificationURL: String = ""

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
        let currentNotificationURL = tokenNotificationURL
        // Apple's Update Merchant Metadata: the token's notifications to the body's https `tokenNotificationURL`,
        // or without a body to the server's current one (after the public URL changed).
        group.add(.post, "/subscriptions/{id}/token-notification-url") { request, context in
            struct Body: Decodable { var tokenNotificationURL: String? }
            let body = request.body.isEmpty ? Body() : try JSONBody.decode(Body.self, from: request)
            let url = body.tokenNotificationURL ?? currentNotificationURL
            guard url.utf8.count <= 256, let components = URLComponents(string: url), components.scheme == "https",
                components.host?.isEmpty == false
            else {
                throw HTTPError.invalidRequest("tokenNotificationURL must be an https URL of at most 256 characters.")
            }
            do {
                let subscription = try await service.updateTokenNotificationURL(
                    id: try context.parameter("id"), to: url)
                struct Answer: Encodable {
                    var subscriptionId: String
                    var tokenNotificationURL: String
                }
                return .encoding(Answer(subscriptionId: subscription.id, tokenNotificationURL: url))
            } catch let refusal as SubscriptionService.Refusal {
                throw HTTPError(refusal)
            }
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
