import ApplePay
import Foundation
import Foundations
import HTTPCore
import Logging
import MerchantCore
import MerchantWallet

/// The admin API's orders, in the admin group under `/admin/v1` (behind ``BearerAuthentication`` with the admin
/// token; the group does not exist when no token is configured): orders with their contacts, refunds, voids,
/// fulfilment steps and reconciliation.
struct AdminRoutes: RouteCollection {
    let store: any OrderStore
    let processor: any PaymentProcessor
    let reconciler: Reconciler
    /// Refunds and voids (MerchantCore's use case: attempts reserved before they are sent, refusals as values).
    let reversals: OrderReversals
    let timeout: Duration
    let logger: Logger
    /// Wallet orders: fulfilment steps and refunds push to registered devices; nil: no fulfilment route.
    let walletOrders: WalletOrdersService?
    /// Subscriptions, whose charge attempts past the key lifetime the attention list shows; nil: none.
    var subscriptions: SubscriptionService? = nil

    func register(on group: inout RouterGroup) {
        group.add(.get, "/orders") { request, _ in try await listOrders(request) }
        group.add(.get, "/orders/{id}") { _, context in try await showOrder(context) }
        group.add(.post, "/orders/{id}/refunds") { request, context in try await refund(request, context) }
        group.add(.post, "/orders/{id}/void") { _, context in try await void(context) }
        group.add(.post, "/orders/{id}/fulfillments") { request, context in
            try await recordFulfillment(request, context)
        }
        group.add(.post, "/reconcile") { request, _ in try await reconcile(request) }
        group.add(.get, "/attention") { _, _ in try await attention() }
        group.add(.get, "/reconciliation") { request, _ in try await statementCheck(request) }
        group.add(.post, "/discrepancies/{id}/resolve") { request, context in
            try await resolveDiscrepancy(request, context)
        }
    }

    func listOrders(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        struct Answer: Encodable { var orders: [Order] }
        var status: OrderStatus?
        if let text = request.query["status"] {
            guard let parsed = OrderStatus(rawValue: text) else {
                throw .invalidRequest(
                    "status must be one of \(OrderStatus.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            status = parsed
        }
        let limit = min(max(Int(request.query["limit"] ?? "") ?? 1000, 1), 10_000)
        let orders = try await storing { () async throws(OrderStoreError) in
            try await store.orders(status: status, limit: limit)
        }
        return .encoding(Answer(orders: orders))
    }

    func showOrder(_ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        var response = HTTPResponse.encoding(try await loadOrder(context))
        response.headers["Cache-Control"] = "no-store"
        return response
    }

    func refund(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable {
            var amount: String
            var idempotencyKey: String
        }
        struct Answer: Encodable {
            var refund: Refund
            var order: Order
        }
        struct Refund: Encodable {
            var id: String
            var amount: String
            var idempotencyKey: String
            var status: String
        }
        let body = try JSONBody.decode(Body.self, from: request)
        let order = try await loadOrder(context)
        let currency = Currency(code: order.currencyCode) ?? .usDollar
        let amount: Money
        do {
            amount = try Money(parsing: body.amount, currency: currency)
        } catch {
            throw .invalidRequest("amount must be a decimal string in \(currency.code), such as \"12.50\".")
        }
        guard !body.idempotencyKey.isEmpty, body.idempotencyKey.count <= 200,
            body.idempotencyKey.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.:~".contains($0)) })
        else {
            throw .invalidRequest("idempotencyKey must be 1 to 200 of A-Z a-z 0-9 - _ . : ~.")
        }
        func answer(_ refund: RefundRecord, _ order: Order, status: Int = 200) -> HTTPResponse {
            var response = HTTPResponse.encoding(
                Answer(
                    refund: Refund(
                        id: refund.id, amount: Money(minorUnits: refund.amount, currency: currency).amountString,
                        idempotencyKey: refund.idempotencyKey, status: refund.status.rawValue), order: order),
                status: status)
            if status == 202 { response.logFields["refund"] = "pending" }
            return response
        }
        let result = try await storing { () async throws(OrderStoreError) in
            try await reversals.refund(order, amount: amount.minorUnits, idempotencyKey: body.idempotencyKey)
        }
        switch result {
        case .succeeded(let refund, let final):
            await notifyDevices(orderID: order.id)
            return answer(refund, final)
        case .pending(let refund, let final):
            return answer(refund, final, status: 202)
        case .outcomeUnknown:
            throw HTTPError(
                status: 202, code: "refundOutcomeUnknown",
                message: "The processor did not confirm the refund; send the same request again to complete it.")
        case .refused(let refusal):
            throw Self.error(refusal, order: order, currency: currency)
        }
    }

    /// The answer to a refund or void refused.
    static func error(_ refusal: OrderReversals.Refusal, order: Order, currency: Currency) -> HTTPError {
        switch refusal {
        case .voidPending:
            HTTPError(
                status: 409, code: "voidPending", message: "A void of order \(order.id) is on its way to the processor."
            )
        case .refundPending:
            HTTPError(
                status: 409, code: "refundPending",
                message:
                    "A refund of order \(order.id) is on its way or its outcome is not known yet; the void is not sent."
            )
        case .keyReused:
            HTTPError(
                status: 409, code: "idempotencyKeyReused",
                message: "This idempotency key was used for another refund (another order or amount).")
        case .notRefundable(let status):
            HTTPError(
                status: 409, code: "orderNotRefundable",
                message:
                    "Order \(order.id) is \(status.rawValue); only paid orders with a captured payment can be refunded."
            )
        case .exceedsRemaining(let left):
            HTTPError(
                status: 422, code: "refundExceedsRemaining",
                message: "The refund is more than the \(Money(minorUnits: left, currency: currency)) left to refund.")
        case .failedBefore:
            HTTPError(
                status: 409, code: "refundFailed",
                message: "The refund with this idempotency key failed at the processor; refund again with a new key.")
        case .notVoidable(let status):
            HTTPError(
                status: 409, code: "orderNotVoidable",
                message: "Order \(order.id) is \(status.rawValue); only a paid order without refunds can be voided.")
        case .processorRefused(let error) where error.code == .notVoidable:
            HTTPError(
                status: 409, code: "orderNotVoidable", message: "The processor refused the void (\(error.code)).")
        case .processorRefused(let error):
            HTTPError(
                status: error.code == .refundExceedsCharge ? 422 : 409, code: error.code.rawValue,
                message: "The processor refused it (\(error.code)).")
        }
    }

    /// `POST /admin/v1/orders/{id}/fulfillments` `{"status": "shipped", "carrier", "trackingNumber"}` (or
    /// `outForDelivery`, `delivered`): records the step, moves the order's update time, and tells every registered
    /// device. Answers `{"order", "fulfillments", "devicesNotified"}`.
    func recordFulfillment(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable {
            var status: String
            var carrier: String?
            var trackingNumber: String?
        }
        struct Answer: Encodable {
            var order: Order
            var fulfillments: [FulfillmentStep]
            var devicesNotified: Int
        }
        guard walletOrders != nil else {
            throw .notFound("Wallet orders are off: configure an Order Type ID to record fulfilments.")
        }
        let body = try JSONBody.decode(Body.self, from: request)
        guard let status = FulfillmentStep.Status(rawValue: body.status) else {
            throw .invalidRequest(
                "status must be one of \(FulfillmentStep.Status.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        for value in [body.carrier, body.trackingNumber] {
            if let value, value.isEmpty || value.count > 100 {
                throw .invalidRequest("carrier and trackingNumber must be 1 to 100 characters.")
            }
        }
        if status == .shipped, body.carrier == nil || body.trackingNumber == nil {
            throw .invalidRequest("A shipped step needs carrier and trackingNumber.")
        }
        let id = try context.parameter("id")
        let order = try await storing { () async throws(OrderStoreError) in
            try await store.recordFulfillment(
                orderID: id,
                FulfillmentStep(status: status, carrier: body.carrier, trackingNumber: body.trackingNumber, at: Date()))
        }
        let steps = try await storing { () async throws(OrderStoreError) in try await store.fulfillments(orderID: id) }
        let notified = await notifyDevices(orderID: id)
        logger.info(
            "fulfillment recorded",
            metadata: ["orderId": "\(id)", "status": "\(status.rawValue)", "devices": .stringConvertible(notified)])
        var response = HTTPResponse.encoding(Answer(order: order, fulfillments: steps, devicesNotified: notified))
        response.logFields["orderId"] = id
        return response
    }

    /// Hands every device registered for the order to the pusher and returns how many devices there are. Under
    /// `MerchantApplication` the pusher is its pushes service, which queues them and returns at once (retries do
    /// not hold the answer), and which a graceful shutdown lets finish: a push queued by a request in flight is
    /// sent, where a task of its own could be dropped.
    @discardableResult
    func notifyDevices(orderID: String) async -> Int {
        guard let walletOrders, let pusher = walletOrders.pusher else { return 0 }
        let registrations: [DeviceRegistration]
        do {
            registrations = try await store.registrations(
                deviceIdentifier: nil, orderTypeIdentifier: walletOrders.orderTypeIdentifier, orderID: orderID)
        } catch {
            logger.error("could not read device registrations", metadata: ["orderId": "\(orderID)"])
            return 0
        }
        if !registrations.isEmpty { await pusher.orderDidChange(registrations) }
        return registrations.count
    }

    func void(_ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        let order = try await loadOrder(context)
        let result = try await storing { () async throws(OrderStoreError) in try await reversals.void(order) }
        switch result {
        case .voided(let final):
            if order.status != .voided { await notifyDevices(orderID: order.id) }
            return .encoding(final)
        case .pending(let current):
            // Taken, decided later (an Adyen reversal is `received`): the order stays paid until the webhook voids it.
            var response = HTTPResponse.encoding(current, status: 202)
            response.logFields["void"] = "pending"
            return response
        case .outcomeUnknown:
            throw HTTPError(
                status: 202, code: "voidOutcomeUnknown",
                message: "The processor did not confirm the void; send the same request again.")
        case .refused(let refusal):
            throw Self.error(refusal, order: order, currency: Currency(code: order.currencyCode) ?? .usDollar)
        }
    }

    /// `GET /admin/v1/attention`: what needs a person. `orders`: payments whose outcome is unknown past the time the
    /// processor keeps an idempotency key (Stripe and Checkout.com 24 hours, Adyen's webhook deadline): no look-up
    /// can tell any more, so a person must (the provider's dashboard, by the order's transaction id).
    /// `discrepancies`: payments the provider decided otherwise than we recorded, open until resolved with
    /// `POST /admin/v1/discrepancies/{id}/resolve`. `subscriptionCharges`: subscription charge attempts whose outcome
    /// is still unknown (or decided later) past the key lifetime, which the scheduler no longer asks about (the
    /// subscription's cycle waits meanwhile): look the key up in the provider's dashboard. `failedRefunds`: our
    /// give-backs of subscription charges (a charge approved after its subscription ended) that the provider
    /// failed, the charge not refunded in full since: nothing sends them again, so a person must return the money.
    /// Answers `{"orders", "discrepancies", "subscriptionCharges", "failedRefunds", "resolution",
    /// "keyLifetimeSeconds"}`.
    func attention() async throws(HTTPError) -> HTTPResponse {
        struct Answer: Encodable {
            var orders: [Order]
            var discrepancies: [DiscrepancyRecord]
            var subscriptionCharges: [SubscriptionAttempt]
            var failedRefunds: [FailedRefund]
            var resolution: String
            var keyLifetimeSeconds: Int64?
        }
        struct SubscriptionAttempt: Encodable {
            var subscriptionId: String
            var status: String
            var cycle: Int
            var idempotencyKey: String
            var since: String
            var processorReference: String?
        }
        struct FailedRefund: Encodable {
            var subscriptionId: String
            var cycle: Int
            var idempotencyKey: String
            var refundKey: String?
            var refundReference: String?
            var amountMinor: Int64
            var currencyCode: String
            var failureCode: String?
            var since: String
        }
        let orders = try await storing { () async throws(OrderStoreError) in try await reconciler.needingAttention() }
        let iso = ISO8601DateFormatter()
        let failedRefunds = try await storing { () async throws(OrderStoreError) -> [FailedRefund] in
            try await (subscriptions?.store.chargesWithFailedGiveBacks(limit: 500) ?? []).flatMap { charge in
                charge.refunds.filter { $0.status == .failed && $0.refundKey != nil }.map { refund in
                    FailedRefund(
                        subscriptionId: charge.subscriptionID, cycle: charge.cycle,
                        idempotencyKey: charge.idempotencyKey, refundKey: refund.refundKey,
                        refundReference: refund.reference, amountMinor: refund.amount,
                        currencyCode: charge.currencyCode, failureCode: refund.failureCode,
                        since: iso.string(from: refund.createdAt))
                }
            }
        }
        let attempts = try await storing { () async throws(OrderStoreError) -> [SubscriptionAttempt] in
            try await (subscriptions?.chargesNeedingAttention() ?? []).compactMap { subscription in
                subscription.unresolvedCharge.map {
                    SubscriptionAttempt(
                        subscriptionId: subscription.id, status: subscription.status.rawValue,
                        cycle: subscription.cycle, idempotencyKey: $0.idempotencyKey, since: iso.string(from: $0.since),
                        processorReference: $0.processorReference)
                }
            }
        }
        let discrepancies = try await storing { () async throws(OrderStoreError) in
            try await store.discrepancies(openOnly: true, limit: 500)
        }
        let resolution = processor.unknownOutcomes
        let kind =
            switch resolution {
            case .lookUp: "lookUp"
            case .webhook: "webhook"
            }
        var response = HTTPResponse.encoding(
            Answer(
                orders: orders, discrepancies: discrepancies, subscriptionCharges: attempts,
                failedRefunds: failedRefunds, resolution: kind,
                keyLifetimeSeconds: resolution.keyLifetime?.components.seconds))
        response.headers["Cache-Control"] = "no-store"
        return response
    }

    /// `POST /admin/v1/discrepancies/{id}/resolve` `{"resolution": "refunded ord_… in the dashboard"}`: closes an
    /// item of the attention list with what the person did (kept, with the event log's `discrepancyResolved`).
    func resolveDiscrepancy(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError)
        -> HTTPResponse
    {
        struct Body: Decodable { var resolution: String }
        let id = try context.parameter("id")
        let body = try JSONBody.decode(Body.self, from: request)
        let resolution = body.resolution.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...500).contains(resolution.count) else {
            throw .invalidRequest("resolution must say what was done, in 1 to 500 characters.")
        }
        guard
            let record = try await storing({ () async throws(OrderStoreError) in
                try await store.resolveDiscrepancy(id: id, resolution: resolution)
            })
        else { throw HTTPError(status: 404, code: "discrepancyNotFound", message: "No discrepancy \(id).") }
        return .encoding(record)
    }

    func reconcile(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        struct Answer: Encodable {
            var settled: [Reconciler.Settlement]
        }
        var age: Duration?
        if let text = request.query["olderThanSeconds"] {
            guard let seconds = Int(text), seconds >= 0 else {
                throw .invalidRequest("olderThanSeconds must be a whole number of seconds.")
            }
            age = .seconds(seconds)
        }
        let settled = try await storing { () async throws(OrderStoreError) in
            try await reconciler.reconcileOnce(olderThan: age)
        }
        return .encoding(Answer(settled: settled))
    }

    /// `GET /admin/v1/reconciliation?since=DATE[&until=DATE]`: the daily check (``StatementCheck``), our orders of the
    /// period against the processor's own records, for a processor that lists them (Stripe, Checkout.com, the
    /// processor protocol); Adyen's settlement report is read by `applepay reconcile --settlement-report` instead
    /// (`409 statementUnavailable`). Dates are `YYYY-MM-DD` (midnight UTC) or ISO 8601; `until` defaults to now.
    func statementCheck(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        func date(_ name: String) throws(HTTPError) -> Date? {
            guard let text = request.query[name] else { return nil }
            guard let time = StatementCheck.date(parsing: text) else {
                throw .invalidRequest("\(name) must be YYYY-MM-DD or an ISO 8601 time.")
            }
            return time
        }
        guard let since = try date("since") else { throw .invalidRequest("since is required (YYYY-MM-DD).") }
        let until = try date("until") ?? Date()
        guard until > since else { throw .invalidRequest("until must come after since.") }
        guard let lists = processor as? any ProviderStatements else {
            throw HTTPError(
                status: 409, code: "statementUnavailable",
                message:
                    "\(processor.name) lists no payments: run applepay reconcile with its settlement report instead.")
        }
        let check = StatementCheck(store: store)
        let timeout = self.timeout
        do {
            let report = try await check.run(since: since, until: until) { orders throws(ProcessorError) in
                try await PaymentProcessing.withTimeLimit(timeout * 6) { () async throws(ProcessorError) in
                    try await lists.statement(since: since, until: until, orders: orders)
                }.get()
            }
            var response = HTTPResponse.encoding(report)
            response.headers["Cache-Control"] = "no-store"
            return response
        } catch let error as OrderStoreError {
            throw .store(error, logger: logger)
        } catch let error as ProcessorError {
            throw HTTPError(
                status: 502, code: error.code.rawValue,
                message: "The processor's records could not be read (\(error.code)).")
        } catch {
            throw HTTPError(status: 500, code: "internalError", message: "The check failed.")
        }
    }

    // MARK: Helpers

    private func loadOrder(_ context: RequestContext) async throws(HTTPError) -> Order {
        let id = try context.parameter("id")
        let order = try await storing { () async throws(OrderStoreError) in try await store.order(id: id) }
        guard let order else { throw .orderNotFound(id) }
        return order
    }

    private func storing<T>(_ body: () async throws(OrderStoreError) -> T) async throws(HTTPError) -> T {
        try await MerchantHTTP.storing(logger: logger, body)
    }
}
