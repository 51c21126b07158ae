import ApplePay
import Foundation
import Foundations
import MerchantCore
import SQLCore

/// Provider webhook events applied to orders (the ``ProviderEventStore`` contract), once for every dialect: one
/// transaction records the event's provider and id in `provider_events` (taken already: a duplicate, nothing
/// else happens), locks the order and moves it only from the states the event expects.
extension SQLStore: ProviderEventStore {
    public func apply(_ event: ProviderEvent) async throws(OrderStoreError) -> ProviderEventResult {
        try await write("apply provider event") { connection throws(SQLError) -> ProviderEventResult in
            let now = self.clock().unixMilliseconds
            let recorded = try connection.run(
                """
                INSERT INTO provider_events (provider, event_id, kind, outcome, received_at)
                VALUES (\(bind: event.provider), \(bind: event.id), \(bind: event.kind.rawValue), 'received', \
                \(bind: now))
                \(raw: connection.dialect.onConflictDoNothing("provider", "event_id"))
                """)
            guard recorded == 1 else { return ProviderEventResult(.duplicate) }
            let result = try self.applyOnce(event, now: now, connection)
            try connection.run(
                """
                UPDATE provider_events SET outcome = \(bind: result.outcome.rawValue), order_id = \(bind: result.orderID),
                    subscription_id = \(bind: result.subscriptionID)
                WHERE provider = \(bind: event.provider) AND event_id = \(bind: event.id)
                """, expectingRows: 1)
            return result
        }
    }

    public func disputes(orderID: String) async throws(OrderStoreError) -> [DisputeRecord] {
        try await read("read disputes") { connection throws(SQLError) -> [DisputeRecord] in
            var disputes: [DisputeRecord] = []
            for row in try connection.query(
                """
                SELECT id, order_id, provider, reference, amount_minor, currency, reason, opened_at,
                    subscription_charge_key FROM disputes
                WHERE order_id = \(bind: orderID) ORDER BY opened_at, id
                """)
            {
                disputes.append(
                    DisputeRecord(
                        id: try row.string("id"), orderID: try row.string("order_id"),
                        provider: try row.string("provider"), reference: try row.string("reference"),
                        amount: try row.optionalInt64("amount_minor"), currencyCode: try row.optionalString("currency"),
                        reason: try row.optionalString("reason"),
                        openedAt: Date(unixMilliseconds: try row.int64("opened_at")),
                        subscriptionChargeKey: try row.optionalString("subscription_charge_key")))
            }
            return disputes
        }
    }

    /// The event's effect, in the caller's transaction (the event is recorded already).
    private func applyOnce(_ event: ProviderEvent, now: Int64, _ connection: Connection)
        throws(SQLError) -> ProviderEventResult
    {
        guard let orderID = try findOrder(event, connection), let order = try lockOrder(connection, orderID) else {
            if let (subscriptionID, key) = try findSubscriptionCharge(event, connection) {
                return try applyToSubscriptionCharge(event, subscriptionID, key: key, now: now, connection)
            }
            return ProviderEventResult(.orderNotFound)
        }
        func result(_ outcome: ProviderEventResult.Outcome) -> ProviderEventResult {
            ProviderEventResult(outcome, orderID: order.id)
        }
        if let currency = event.currencyCode, currency.uppercased() != order.currencyCode.uppercased() {
            return result(.mismatch)
        }
        switch event.kind {
        case .paymentSucceeded, .paymentFailed, .paymentVoided:
            if event.kind == .paymentSucceeded, let amount = event.amount, amount != order.payment.amount {
                return result(.mismatch)
            }
            let finding: PaymentObservation.Finding =
                switch event.kind {
                case .paymentSucceeded: .approved
                case .paymentVoided: .voided
                default: .declined(DeclineReason(code: event.reason ?? "declined"))
                }
            let key = OrderKey(
                id: order.id, checkoutID: order.checkoutID, status: order.status, refunded: order.refunded)
            let observation = PaymentObservation(.webhook, finding, reference: event.paymentReference)
            switch try merge(observation, into: key, connection).merge {
            case .unchanged: return result(.noChange)
            case .moves: return result(.applied)
            case .disagrees: return result(.discrepancy)
            }
        case .refundSucceeded:
            return result(try recordRefund(event, order: order, now: now, connection))
        case .refundFailed:
            return result(try failRefund(event, order: order, now: now, connection))
        case .disputeOpened:
            let reference = event.reference ?? event.paymentReference ?? event.id
            let inserted = try connection.run(
                """
                INSERT INTO disputes (id, order_id, provider, reference, amount_minor, currency, reason, opened_at)
                VALUES (\(bind: "dsp_" + timeOrderedHex(milliseconds: now)), \(bind: order.id), \(bind: event.provider), \
                \(bind: reference), \(bind: event.amount), \(bind: event.currencyCode?.uppercased()), \
                \(bind: event.reason), \(bind: now))
                \(raw: connection.dialect.onConflictDoNothing("provider", "reference"))
                """)
            guard inserted == 1 else { return result(.noChange) }
            var fields = ["reference": reference]
            fields["amount"] = event.amount.map { String($0) }
            fields["reason"] = event.reason
            try appendEvent(
                connection, "disputeOpened", checkoutID: order.checkoutID, orderID: order.id, detail(event, fields),
                at: now)
            return result(.applied)
        }
    }

    /// A succeeded refund: known already (its provider reference), our refund completed (matched by its provider
    /// reference or our key), or a refund made at the provider added, within what is left to refund.
    private func recordRefund(_ event: ProviderEvent, order: Order, now: Int64, _ connection: Connection)
        throws(SQLError) -> ProviderEventResult.Outcome
    {
        let refund: RefundRecord
        if let ours = try matchingRefund(event, order: order, connection) {
            guard ours.status != .succeeded else { return .noChange }
            if let amount = event.amount, amount != ours.amount { return .mismatch }
            refund = ours
        } else {
            guard let amount = event.amount, amount > 0 else { return .mismatch }
            guard order.status == .paid || order.status == .partiallyRefunded else { return .mismatch }
            guard amount <= order.totals.total - (try reservedRefunds(order.id, connection)) else { return .mismatch }
            refund = RefundRecord(
                id: "rfd_" + timeOrderedHex(milliseconds: now), orderID: order.id,
                idempotencyKey: "\(event.provider):\(event.reference ?? event.id)", amount: amount, status: .pending)
            try connection.run(
                """
                INSERT INTO refunds (id, order_id, idempotency_key, amount_minor, status, created_at, updated_at)
                VALUES (\(bind: refund.id), \(bind: order.id), \(bind: refund.idempotencyKey), \(bind: amount), \
                'pending', \(bind: now), \(bind: now))
                """)
        }
        let status = try markRefundSucceeded(
            refund, reference: event.reference, order: order, now: now, connection)
        try appendEvent(
            connection, "refundSucceeded", checkoutID: order.checkoutID, orderID: order.id,
            detail(event, ["refundId": refund.id, "amount": String(refund.amount), "status": status.rawValue]),
            at: now)
        return .applied
    }

    /// A failed refund: ours (matched by its provider reference or our key) is marked failed, and what a succeeded
    /// one had counted as refunded is given back. A failure of a refund we do not know changes nothing.
    private func failRefund(_ event: ProviderEvent, order: Order, now: Int64, _ connection: Connection)
        throws(SQLError) -> ProviderEventResult.Outcome
    {
        guard let ours = try matchingRefund(event, order: order, connection), ours.status != .failed else {
            return .noChange
        }
        let status = try markRefundFailed(
            ours, reason: event.reason, reference: event.reference, order: order, now: now, connection)
        try appendEvent(
            connection, "refundFailed", checkoutID: order.checkoutID, orderID: order.id,
            detail(event, ["refundId": ours.id, "amount": String(ours.amount), "status": status.rawValue]), at: now)
        return .applied
    }

    /// The order's refund this event is about: the one with its provider reference, else the one with our key.
    /// Never one of the same amount: two refunds of one amount are two refunds.
    private func matchingRefund(_ event: ProviderEvent, order: Order, _ connection: Connection)
        throws(SQLError) -> RefundRecord?
    {
        if let reference = event.reference, !reference.isEmpty,
            let match = try loadRefunds(
                connection, where: "order_id = \(bind: order.id) AND processor_reference = \(bind: reference)"
            ).first
        {
            return match
        }
        guard let key = event.refundKey, !key.isEmpty else { return nil }
        return try loadRefunds(connection, where: "order_id = \(bind: order.id) AND idempotency_key = \(bind: key)")
            .first
    }

    /// The order an event names: by our reference (the order id or the payment's transaction id), else by the
    /// provider's payment reference.
    private func findOrder(_ event: ProviderEvent, _ connection: Connection) throws(SQLError) -> String? {
        if let reference = event.merchantReference, !reference.isEmpty,
            let row = try connection.query(
                """
                SELECT o.id FROM orders o JOIN payments p ON p.order_id = o.id
                WHERE o.id = \(bind: reference) OR p.transaction_id = \(bind: reference)
                """
            ).first
        {
            return try row.string("id")
        }
        guard let reference = event.paymentReference, !reference.isEmpty else { return nil }
        return try connection.query("SELECT order_id FROM payments WHERE processor_reference = \(bind: reference)")
            .first?.string("order_id")
    }

    /// The subscription charge an event names when it names no order: by our key (the merchant reference: an
    /// attempt not resolved yet, or a recorded charge), else by the provider's payment reference. Answers the
    /// subscription and the charge's key.
    private func findSubscriptionCharge(_ event: ProviderEvent, _ connection: Connection) throws(SQLError)
        -> (String, String)?
    {
        if let key = event.merchantReference, key.hasPrefix("sub_") {
            if let row = try connection.query(
                "SELECT id FROM subscriptions WHERE unresolved_charge_key = \(bind: key)"
            ).first {
                return (try row.string("id"), key)
            }
            if let row = try connection.query(
                "SELECT subscription_id FROM subscription_charges WHERE idempotency_key = \(bind: key)"
            ).first {
                return (try row.string("subscription_id"), key)
            }
        }
        guard let reference = event.paymentReference, !reference.isEmpty else { return nil }
        if let row = try connection.query(
            """
            SELECT id, unresolved_charge_key FROM subscriptions WHERE unresolved_reference = \(bind: reference)
            """
        ).first {
            return (try row.string("id"), try row.string("unresolved_charge_key"))
        }
        if let row = try connection.query(
            """
            SELECT subscription_id, idempotency_key FROM subscription_charges
            WHERE processor_reference = \(bind: reference)
            """
        ).first {
            return (try row.string("subscription_id"), try row.string("idempotency_key"))
        }
        return nil
    }

    /// The event's effect on subscription `subscriptionID`'s charge `key`, in the caller's transaction, the
    /// subscription row locked.
    private func applyToSubscriptionCharge(
        _ event: ProviderEvent, _ subscriptionID: String, key: String, now: Int64, _ connection: Connection
    ) throws(SQLError) -> ProviderEventResult {
        func result(_ outcome: ProviderEventResult.Outcome) -> ProviderEventResult {
            ProviderEventResult(outcome, subscriptionID: subscriptionID)
        }
        guard
            let subscription = try loadSubscriptions(
                connection, "id = \(bind: subscriptionID)", limit: 1, locking: true
            ).first
        else { return ProviderEventResult(.orderNotFound) }
        if let currency = event.currencyCode, currency.uppercased() != subscription.currencyCode.uppercased() {
            return result(.mismatch)
        }
        let recorded = try loadCharges(connection, "idempotency_key = \(bind: key)", limit: 1).first
        var fields = ["subscriptionId": subscription.id, "idempotencyKey": key]
        switch event.kind {
        case .paymentSucceeded, .paymentFailed:
            let succeeded = event.kind == .paymentSucceeded
            if succeeded, let amount = event.amount, amount != subscription.amount { return result(.mismatch) }
            if let recorded {
                guard (recorded.status == "approved") != succeeded else { return result(.noChange) }
                // The provider says otherwise than the charge recorded: kept as recorded, for a person.
                fields["recorded"] = recorded.status
                fields["provider"] = succeeded ? "approved" : "declined"
                try appendEvent(
                    connection, "subscriptionChargeDiscrepancy", checkoutID: subscription.checkoutID,
                    orderID: subscription.orderID, detail(event, fields), at: now)
                return result(.discrepancy)
            }
            guard let attempt = subscription.unresolvedCharge, attempt.idempotencyKey == key else {
                return result(.noChange)
            }
            var charge = SubscriptionCharge(
                subscriptionID: subscription.id, cycle: subscription.cycle, attempt: subscription.attempt,
                idempotencyKey: key, amount: subscription.amount, currencyCode: subscription.currencyCode,
                status: succeeded ? "approved" : "declined",
                processorReference: succeeded ? event.paymentReference ?? attempt.processorReference : nil,
                declineCode: succeeded ? nil : event.reason ?? "declined",
                dueAt: SubscriptionBilling.currentDueDate(of: subscription), chargedAt: attempt.since)
            var (next, givesBack) = SubscriptionBilling.afterDecided(subscription, charge)
            // Given back by the next scheduler pass (a processor call does not belong in this transaction).
            charge.refundOwed = givesBack
            next.version = subscription.version + 1
            next.updatedAt = Date(unixMilliseconds: now)
            guard try writeSubscription(connection, next, expectedVersion: subscription.version) else {
                throw SQLError(.unexpectedRowCount, "subscription \(subscription.id) changed meanwhile")
            }
            try insertCharge(connection, charge)
            fields["status"] = charge.status
            fields["refundOwed"] = givesBack ? "true" : "false"
            try appendEvent(
                connection, "subscriptionChargeSettled", checkoutID: subscription.checkoutID,
                orderID: subscription.orderID, detail(event, fields), at: now)
            return result(.applied)
        case .paymentVoided:
            // A void before the charge was recorded: the look-up (or our give-back) records it when it settles.
            guard let recorded, recorded.status == "approved" else { return result(.noChange) }
            let reference = "void:" + (event.paymentReference ?? event.reference ?? event.id)
            // Already given back (our void or refund, or this void's earlier record): nothing more to say.
            guard
                try connection.run(
                    """
                    UPDATE subscription_charges SET refund_reference = \(bind: reference), refunded_at = \(bind: now),
                        refund_owed = 0, refunded_minor = amount_minor
                    WHERE idempotency_key = \(bind: key) AND status = 'approved' AND refunded_at IS NULL
                    """) == 1
            else { return result(.noChange) }
            fields["cycle"] = String(recorded.cycle)
            fields["refundReference"] = reference
            fields["amountMinor"] = String(recorded.amount)
            fields["reason"] = "providerVoid"
            try appendEvent(
                connection, "subscriptionChargeRefunded", checkoutID: subscription.checkoutID,
                orderID: subscription.orderID, detail(event, fields), at: now)
            return result(.applied)
        case .refundSucceeded:
            guard let recorded, recorded.status == "approved" else { return result(.mismatch) }
            return result(
                try recordChargeRefund(event, recorded, of: subscription, fields: fields, now: now, connection))
        case .refundFailed:
            guard let recorded else { return result(.noChange) }
            return result(try failChargeRefund(event, recorded, of: subscription, fields: fields, now: now, connection))
        case .disputeOpened:
            let reference = event.reference ?? event.paymentReference ?? event.id
            fields["reference"] = reference
            fields["amount"] = event.amount.map { String($0) }
            fields["reason"] = event.reason
            if let orderID = subscription.orderID {
                let inserted = try connection.run(
                    """
                    INSERT INTO disputes (id, order_id, provider, reference, amount_minor, currency, reason, opened_at,
                        subscription_charge_key)
                    VALUES (\(bind: "dsp_" + timeOrderedHex(milliseconds: now)), \(bind: orderID), \(bind: event.provider), \
                    \(bind: reference), \(bind: event.amount), \(bind: event.currencyCode?.uppercased()), \
                    \(bind: event.reason), \(bind: now), \(bind: key))
                    \(raw: connection.dialect.onConflictDoNothing("provider", "reference"))
                    """)
                guard inserted == 1 else { return result(.noChange) }
            }
            // A deferred plan has no order: the event log alone keeps the dispute (its provider event id is unique).
            try appendEvent(
                connection, "disputeOpened", checkoutID: subscription.checkoutID, orderID: subscription.orderID,
                detail(event, fields), at: now)
            return result(.applied)
        }
    }

    /// A succeeded refund of a subscription charge: ours, or one recorded before (matched by the provider's reference
    /// or our key, never by amount), completed; else a refund made at the provider, added within what is left to
    /// give back. What was given back (`refunded_minor`) grows by its amount, with a `subscriptionChargeRefunded`
    /// event.
    private func recordChargeRefund(
        _ event: ProviderEvent, _ charge: SubscriptionCharge, of subscription: Subscription, fields: [String: String],
        now: Int64, _ connection: Connection
    ) throws(SQLError) -> ProviderEventResult.Outcome {
        let key = charge.idempotencyKey
        let refund: SubscriptionChargeRefund
        if let ours = try matchingChargeRefund(event, key, connection) {
            guard ours.status != .succeeded else { return .noChange }
            if let amount = event.amount, amount != ours.amount { return .mismatch }
            guard ours.amount <= charge.amount - charge.refunded else { return .mismatch }
            try connection.run(
                """
                UPDATE subscription_charge_refunds SET status = 'succeeded', failure_code = NULL,
                    processor_reference = COALESCE(processor_reference, \(bind: event.reference)),
                    updated_at = \(bind: now)
                WHERE charge_key = \(bind: key) AND \(Self.refundCondition(ours))
                """, expectingRows: 1)
            refund = ours
        } else {
            // Given back whole already (a void, our refund): nothing more to say.
            if charge.refunded >= charge.amount { return .noChange }
            let left = charge.amount - charge.refunded - (try pendingChargeRefunds(key, connection))
            let amount = event.amount ?? left
            guard amount > 0, amount <= left else { return .mismatch }
            refund = SubscriptionChargeRefund(
                chargeKey: key, refundKey: nil, reference: event.reference ?? event.id, amount: amount,
                status: .succeeded, createdAt: Date(unixMilliseconds: now))
            guard try insertChargeRefund(connection, refund, now: now) else { return .noChange }
        }
        let reference = "refund:" + (refund.reference ?? event.reference ?? event.id)
        try connection.run(
            """
            UPDATE subscription_charges SET refund_reference = COALESCE(refund_reference, \(bind: reference)),
                refund_owed = 0
            WHERE idempotency_key = \(bind: key)
            """, expectingRows: 1)
        try addRefunded(connection, refund.amount, chargeKey: key, now: now)
        var detail = fields
        detail["cycle"] = String(charge.cycle)
        detail["refundReference"] = reference
        detail["amountMinor"] = String(refund.amount)
        detail["refundedMinor"] = String(charge.refunded + refund.amount)
        detail["reason"] = refund.refundKey == nil ? "providerRefund" : subscription.statusReason ?? "cancelled"
        try appendEvent(
            connection, "subscriptionChargeRefunded", checkoutID: subscription.checkoutID,
            orderID: subscription.orderID, self.detail(event, detail), at: now)
        return .applied
    }

    /// A failed refund of a subscription charge: ours (or one recorded before) is marked failed, with a
    /// `subscriptionChargeRefundFailed` event, and what a succeeded one had given back is taken back. A failure of a
    /// refund we do not know changes nothing.
    private func failChargeRefund(
        _ event: ProviderEvent, _ charge: SubscriptionCharge, of subscription: Subscription, fields: [String: String],
        now: Int64, _ connection: Connection
    ) throws(SQLError) -> ProviderEventResult.Outcome {
        let key = charge.idempotencyKey
        guard let ours = try matchingChargeRefund(event, key, connection), ours.status != .failed else {
            return .noChange
        }
        try connection.run(
            """
            UPDATE subscription_charge_refunds SET status = 'failed', failure_code = \(bind: event.reason ?? "failed"),
                processor_reference = COALESCE(processor_reference, \(bind: event.reference)),
                updated_at = \(bind: now)
            WHERE charge_key = \(bind: key) AND \(Self.refundCondition(ours))
            """, expectingRows: 1)
        if ours.status == .succeeded { try addRefunded(connection, -ours.amount, chargeKey: key, now: now) }
        var detail = fields
        detail["cycle"] = String(charge.cycle)
        detail["refundReference"] = ours.reference ?? event.reference
        detail["amountMinor"] = String(ours.amount)
        detail["refundedMinor"] = String(charge.refunded - (ours.status == .succeeded ? ours.amount : 0))
        detail["failureCode"] = event.reason ?? "failed"
        try appendEvent(
            connection, "subscriptionChargeRefundFailed", checkoutID: subscription.checkoutID,
            orderID: subscription.orderID, self.detail(event, detail), at: now)
        return .applied
    }

    /// The refund of charge `key` an event is about: the one with its provider reference, else the one with our key.
    private func matchingChargeRefund(_ event: ProviderEvent, _ key: String, _ connection: Connection)
        throws(SQLError) -> SubscriptionChargeRefund?
    {
        if let reference = event.reference, !reference.isEmpty,
            let match = try loadChargeRefunds(
                connection, "charge_key = \(bind: key) AND processor_reference = \(bind: reference)"
            ).first
        {
            return match
        }
        guard let refundKey = event.refundKey, !refundKey.isEmpty else { return nil }
        return try loadChargeRefunds(connection, "charge_key = \(bind: key) AND refund_key = \(bind: refundKey)")
            .first
    }

    /// Selects one stored refund row: by our key when it has one, else by the provider's reference.
    private static func refundCondition(_ refund: SubscriptionChargeRefund) -> SQLQuery {
        if let refundKey = refund.refundKey { return "refund_key = \(bind: refundKey)" }
        return "processor_reference = \(bind: refund.reference)"
    }

    /// The amount of charge `key`'s refunds still pending (reserved: not to be given back twice).
    private func pendingChargeRefunds(_ key: String, _ connection: Connection) throws(SQLError) -> Int64 {
        try loadChargeRefunds(connection, "charge_key = \(bind: key) AND status = 'pending'").reduce(0) {
            $0 + $1.amount
        }
    }

    /// The event log's detail for a provider event: where it came from, and `fields`.
    private func detail(_ event: ProviderEvent, _ fields: [String: String]) -> [String: String] {
        var detail = fields
        detail["source"] = "webhook"
        detail["provider"] = event.provider
        detail["providerEventId"] = event.id
        return detail
    }
}
