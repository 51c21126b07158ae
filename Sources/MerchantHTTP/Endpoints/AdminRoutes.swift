import ApplePay
import Foundation
import Foundations
import HTTPServer
import MerchantCore
import MerchantWallet
import Synchronization

/// The admin API's orders, in the admin group under `/admin/v1` (behind ``BearerAuthentication`` with the admin
/// token; the group does not exist when no token is configured): orders with their contacts, refunds, voids,
/// fulfilment steps and reconciliation.
struct AdminRoutes: RouteCollection {
    let store: any OrderStore
    let processor: any PaymentProcessor
    let reconciler: Reconciler
    let timeout: Duration
    let logger: RequestLogger
    /// Wallet orders: fulfilment steps and refunds push to registered devices; nil: no fulfilment route.
    let walletOrders: WalletOrdersService?
    /// Subscriptions, whose charge attempts past the key lifetime the attention list shows; nil: none.
    var subscriptions: SubscriptionService? = nil
    /// Refunds and voids on their way to the processor, by order: one kind never starts while the other is.
    let inFlight = ProcessorOperations()

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
        // A void on its way to the processor: the refund is refused here, never sent.
        guard inFlight.begin(.refund, orderID: order.id) else {
            throw HTTPError(
                status: 409, code: "voidPending", message: "A void of order \(order.id) is on its way to the processor."
            )
        }
        defer { inFlight.end(.refund, orderID: order.id) }
        let start = try await storing { () async throws(OrderStoreError) in
            try await store.beginRefund(
                orderID: order.id, amount: amount.minorUnits, idempotencyKey: body.idempotencyKey)
        }
        let refund: RefundRecord
        switch start {
        case .keyReused:
            throw HTTPError(
                status: 409, code: "idempotencyKeyReused",
                message: "This idempotency key was used for another refund (another order or amount).")
        case .notRefundable(let current):
            throw HTTPError(
                status: 409, code: "orderNotRefundable",
                message: "Order \(current.id) is \(current.status.rawValue); only paid orders can be refunded.")
        case .exceedsRemaining(let left, _):
            throw HTTPError(
                status: 422, code: "refundExceedsRemaining",
                message: "The refund is more than the \(Money(minorUnits: left, currency: currency)) left to refund.")
        case .existing(let existing, let current) where existing.succeeded:
            return .encoding(
                Answer(
                    refund: Refund(
                        id: existing.id, amount: Money(minorUnits: existing.amount, currency: currency).amountString,
                        idempotencyKey: existing.idempotencyKey, status: "succeeded"), order: current))
        case .existing(let existing, _) where existing.status == .failed:
            // Sent again, the provider would replay its first answer; the refund failed, and stays failed.
            throw HTTPError(
                status: 409, code: "refundFailed",
                message: "The refund with this idempotency key failed at the processor; refund again with a new key.")
        case .existing(let existing, _), .started(let existing, _):
            refund = existing
        }
        guard let reference = order.payment.processorReference else {
            throw HTTPError(status: 409, code: "orderNotRefundable", message: "The order has no captured payment.")
        }
        let processor = self.processor
        let result = await bounded { () async throws(ProcessorError) -> ProcessorRefund in
            try await processor.refund(
                reference: reference, amount: Money(minorUnits: refund.amount, currency: currency),
                idempotencyKey: refund.idempotencyKey)
        }
        switch result {
        case .success(let processed) where processed.isPending:
            // Taken, decided later: the refund stays pending (its amount reserved) until the provider's webhook.
            let final = try await storing { () async throws(OrderStoreError) in
                try await store.acknowledgeRefund(id: refund.id, processorReference: processed.reference)
            }
            logger.log(
                "info", "refund pending at the provider",
                ["orderId": order.id, "refundId": refund.id, "processorReference": processed.reference])
            var response = HTTPResponse.encoding(
                Answer(
                    refund: Refund(
                        id: refund.id, amount: Money(minorUnits: refund.amount, currency: currency).amountString,
                        idempotencyKey: refund.idempotencyKey, status: "pending"), order: final),
                status: 202)
            response.logFields["refund"] = "pending"
            return response
        case .success(let processed):
            let final = try await storing { () async throws(OrderStoreError) in
                try await store.completeRefund(id: refund.id, processorReference: processed.reference)
            }
            logger.log(
                "info", "refund succeeded",
                ["orderId": order.id, "refundId": refund.id, "processorReference": processed.reference])
            await notifyDevices(orderID: order.id)
            return .encoding(
                Answer(
                    refund: Refund(
                        id: refund.id, amount: Money(minorUnits: refund.amount, currency: currency).amountString,
                        idempotencyKey: refund.idempotencyKey, status: "succeeded"), order: final))
        case .failure(let error) where error.outcomeIsUnknown:
            logger.log(
                "warn", "refund outcome unknown",
                ["orderId": order.id, "refundId": refund.id, "code": error.code.rawValue])
            throw HTTPError(
                status: 202, code: "refundOutcomeUnknown",
                message: "The processor did not confirm the refund; send the same request again to complete it.")
        case .failure(let error):
            try await storing { () async throws(OrderStoreError) in try await store.cancelRefund(id: refund.id) }
            throw HTTPError(
                status: error.code == .refundExceedsCharge ? 422 : 409, code: error.code.rawValue,
                message: "The processor refused the refund (\(error.code)).")
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
        logger.log("info", "fulfillment recorded", ["orderId": id, "status": status.rawValue, "devices": notified])
        var response = HTTPResponse.encoding(Answer(order: order, fulfillments: steps, devicesNotified: notified))
        response.logFields["orderId"] = id
        return response
    }

    /// Starts pushes to every device registered for the order (in the background: retries do not hold the
    /// answer) and returns how many devices there are.
    @discardableResult
    func notifyDevices(orderID: String) async -> Int {
        guard let walletOrders, let pusher = walletOrders.pusher else { return 0 }
        let registrations: [DeviceRegistration]
        do {
            registrations = try await store.registrations(
                deviceIdentifier: nil, orderTypeIdentifier: walletOrders.orderTypeIdentifier, orderID: orderID)
        } catch {
            logger.log("error", "could not read device registrations", ["orderId": orderID])
            return 0
        }
        if !registrations.isEmpty { Task { await pusher.orderDidChange(registrations) } }
        return registrations.count
    }

    func void(_ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        let order = try await loadOrder(context)
        if order.status == .voided { return .encoding(order) }
        guard order.status == .paid, order.refunded == 0, let reference = order.payment.processorReference else {
            throw HTTPError(
                status: 409, code: "orderNotVoidable",
                message:
                    "Order \(order.id) is \(order.status.rawValue); only a paid order without refunds can be voided.")
        }
        // A refund pending (on its way, or its outcome unknown): the void is refused here, never sent.
        guard inFlight.begin(.void, orderID: order.id) else {
            throw HTTPError(
                status: 409, code: "refundPending",
                message: "A refund of order \(order.id) is on its way to the processor; the void is not sent.")
        }
        defer { inFlight.end(.void, orderID: order.id) }
        let refunds = try await storing { () async throws(OrderStoreError) in try await store.refunds(orderID: order.id)
        }
        if refunds.contains(where: { $0.status == .pending }) {
            throw HTTPError(
                status: 409, code: "refundPending",
                message: "Order \(order.id) has a refund whose outcome is not known yet; the void is not sent.")
        }
        let processor = self.processor
        let result = await bounded { () async throws(ProcessorError) -> ProcessorCharge in
            try await processor.void(reference: reference)
        }
        switch result {
        case .success(let charge) where charge.status == .processing:
            // Taken, decided later (an Adyen reversal is `received`): the order stays paid until the webhook voids it.
            logger.log("info", "void pending at the processor", ["orderId": order.id, "processorReference": reference])
            var response = HTTPResponse.encoding(order, status: 202)
            response.logFields["void"] = "pending"
            return response
        case .success:
            let final = try await storing { () async throws(OrderStoreError) in
                try await store.recordVoid(orderID: order.id)
            }
            logger.log("info", "payment voided", ["orderId": order.id, "processorReference": reference])
            await notifyDevices(orderID: order.id)
            return .encoding(final)
        case .failure(let error) where error.outcomeIsUnknown:
            throw HTTPError(
                status: 202, code: "voidOutcomeUnknown",
                message: "The processor did not confirm the void; send the same request again.")
        case .failure(let error):
            throw HTTPError(
                status: 409, code: error.code == .notVoidable ? "orderNotVoidable" : error.code.rawValue,
                message: "The processor refused the void (\(error.code)).")
        }
    }

    /// `GET /admin/v1/attention`: what needs a person. `orders`: payments whose outcome is unknown past the time the
    /// processor keeps an idempotency key (Stripe and Checkout.com 24 hours, Adyen's webhook deadline): no look-up
    /// can tell any more, so a person must (the provider's dashboard, by the order's transaction id).
    /// `discrepancies`: payments the provider decided otherwise than we recorded, open until resolved with
    /// `POST /admin/v1/discrepancies/{id}/resolve`. `subscriptionCharges`: subscription charge attempts whose outcome
    /// is still unknown (or decided later) past the key lifetime, which the scheduler no longer asks about (the
    /// subscription's cycle waits meanwhile): look the key up in the provider's dashboard. Answers `{"orders",
    /// "discrepancies", "subscriptionCharges", "resolution", "keyLifetimeSeconds"}`.
    func attention() async throws(HTTPError) -> HTTPResponse {
        struct Answer: Encodable {
            var orders: [Order]
            var discrepancies: [DiscrepancyRecord]
            var subscriptionCharges: [SubscriptionAttempt]
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
        let orders = try await storing { () async throws(OrderStoreError) in try await reconciler.needingAttention() }
        let attempts = try await storing { () async throws(OrderStoreError) -> [SubscriptionAttempt] in
            let iso = ISO8601DateFormatter()
            return try await (subscriptions?.chargesNeedingAttention() ?? []).compactMap { subscription in
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
                orders: orders, discrepancies: discrepancies, subscriptionCharges: attempts, resolution: kind,
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
            if text.count == 10, let day = try? Date(text + "T00:00:00Z", strategy: .iso8601) { return day }
            guard let time = try? Date(text, strategy: .iso8601) else {
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

    /// Runs a processor call within ``timeout``.
    private func bounded<T: Sendable>(_ call: @escaping @Sendable () async throws(ProcessorError) -> T) async
        -> Result<T, ProcessorError>
    {
        await PaymentProcessing.withTimeLimit(timeout, call)
    }
}

/// Refunds and voids on their way to the processor, by order id, in this process: a refund never starts while a
/// void of the same order is under way, nor a void while a refund is (several refunds may run at once; the store
/// keeps them within the amount).
final class ProcessorOperations: Sendable {
    enum Kind: Sendable { case refund, void }
    private let running = Mutex<[String: (kind: Kind, count: Int)]>([:])

    /// Starts an operation; false when one of the other kind is running for the order (or another void).
    func begin(_ kind: Kind, orderID: String) -> Bool {
        running.withLock { running in
            if let current = running[orderID] {
                guard current.kind == kind, kind == .refund else { return false }
                running[orderID] = (kind, current.count + 1)
            } else {
                running[orderID] = (kind, 1)
            }
            return true
        }
    }

    func end(_ kind: Kind, orderID: String) {
        running.withLock { running in
            guard let current = running[orderID], current.kind == kind else { return }
            running[orderID] = current.count > 1 ? (kind, current.count - 1) : nil
        }
    }
}
