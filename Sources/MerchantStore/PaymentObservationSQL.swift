import Foundation
import Foundations
import MerchantCore
import SQLCore

/// Observations of payments merged into the stored order by MerchantCore's ``PaymentStateMachine``, once for every
/// dialect: our charge call's answer, a look-up and a webhook all go through ``merge(_:into:_:)`` in the
/// transaction that locked the order.
extension SQLStore {
    /// What merging did to a locked order.
    struct MergeResult {
        var merge: PaymentMerge
        /// Whether the order's row changed (a move, or a correction that could be made).
        var moved: Bool
    }

    /// Merges `observation` into the locked order `key` (``lockOrderKey(_:_:)``): moves the order and payment,
    /// records a discrepancy (and a `paymentDiscrepancy` event), or does nothing, as the state machine says.
    ///
    /// A correction of a `declined` order to `paid` locks its checkout again. When the checkout has another live
    /// order meanwhile (the customer paid again with another card: the provider captured twice), the order cannot
    /// become a second live one: it stays `declined`, and the discrepancy says `doubleCharge` for a person to refund.
    func merge(_ observation: PaymentObservation, into key: OrderKey, _ connection: Connection) throws(SQLError)
        -> MergeResult
    {
        let merge = PaymentStateMachine.merge(observation, into: key.status, refunded: key.refunded)
        switch merge {
        case .unchanged:
            if let reference = observation.reference, !reference.isEmpty {
                try connection.run(
                    """
                    UPDATE payments SET processor_reference = \(bind: reference)
                    WHERE order_id = \(bind: key.id) AND processor_reference IS NULL
                    """)
            }
            return MergeResult(merge: merge, moved: false)
        case .moves(let step):
            try apply(step, to: key, source: observation.source, connection)
            return MergeResult(merge: merge, moved: true)
        case .disagrees(var discrepancy, let correction):
            var detail: [String: String] = [:]
            if let correction {
                let live = try connection.query(
                    """
                    SELECT id FROM orders WHERE checkout_id = \(bind: key.checkoutID) AND id <> \(bind: key.id) \
                    AND status <> 'declined'
                    """)
                if let other = live.first {
                    discrepancy.corrected = false
                    detail["doubleCharge"] = try other.string("id")
                } else {
                    try apply(correction, to: key, source: observation.source, connection)
                }
            }
            try record(discrepancy, of: key, reference: observation.reference, detail, connection)
            return MergeResult(merge: merge, moved: discrepancy.corrected)
        }
    }

    /// Moves a payment and its order to `step`'s states from the locked `key`'s status; the event in the same
    /// transaction. An outcome's `updated_at` is the clock's time, which the reconciler's "older than" reads; a move of
    /// a paid order (a void seen at the provider) takes the next Wallet version (``nextOrderVersion(_:)``).
    private func apply(
        _ step: PaymentStep, to key: OrderKey, source: PaymentObservation.Source, _ connection: Connection
    ) throws(SQLError) {
        let now = clock().unixMilliseconds
        let walletVersion: Set<OrderStatus> = [.paid, .partiallyRefunded, .refunded]
        let version: SQLQuery = walletVersion.contains(key.status) ? Self.nextOrderVersion(now) : "\(bind: now)"
        try connection.run(
            """
            UPDATE orders SET status = \(bind: step.orderStatus.rawValue), updated_at = \(version)
            WHERE id = \(bind: key.id) AND status = \(bind: key.status.rawValue)
            """, expectingRows: 1)
        try connection.run(
            """
            UPDATE payments SET status = \(bind: step.paymentStatus.rawValue),
                processor_reference = coalesce(\(bind: step.reference), processor_reference),
                failure_code = \(bind: step.failureCode), failure_message = \(bind: step.failureMessage),
                updated_at = \(bind: now)
            WHERE order_id = \(bind: key.id)
            """, expectingRows: 1)
        var detail = ["status": step.orderStatus.rawValue, "from": key.status.rawValue, "source": source.rawValue]
        detail["failureCode"] = step.failureCode
        detail["processorReference"] = step.reference
        try appendEvent(connection, step.eventKind, checkoutID: key.checkoutID, orderID: key.id, detail, at: now)
    }

    private func record(
        _ discrepancy: PaymentDiscrepancy, of key: OrderKey, reference: String?, _ extra: [String: String],
        _ connection: Connection
    ) throws(SQLError) {
        let now = clock().unixMilliseconds
        var detail = extra
        detail["processorReference"] = reference
        let id = "dsc_" + timeOrderedHex(milliseconds: now)
        try connection.run(
            """
            INSERT INTO payment_discrepancies (id, order_id, checkout_id, recorded, provider, source, corrected,
                detail_json, detected_at)
            VALUES (\(bind: id), \(bind: key.id), \(bind: key.checkoutID), \(bind: discrepancy.recorded.rawValue), \
            \(bind: discrepancy.provider), \(bind: discrepancy.source.rawValue), \(bind: discrepancy.corrected ? 1 : 0), \
            \(bind: try storedJSON(detail)), \(bind: now))
            """)
        detail["discrepancyId"] = id
        detail["recorded"] = discrepancy.recorded.rawValue
        detail["provider"] = discrepancy.provider
        detail["source"] = discrepancy.source.rawValue
        detail["corrected"] = discrepancy.corrected ? "true" : "false"
        try appendEvent(connection, "paymentDiscrepancy", checkoutID: key.checkoutID, orderID: key.id, detail, at: now)
    }

    /// Merges an observation into the order `orderID` in a transaction of its own; `nil` when there is no such order.
    func observe(_ observation: PaymentObservation, orderID: String, what: String) async throws(OrderStoreError)
        -> (order: Order, moved: Bool)?
    {
        try await write(what) { connection throws(SQLError) -> (order: Order, moved: Bool)? in
            guard let key = try self.lockOrderKey(connection, orderID) else { return nil }
            let result = try self.merge(observation, into: key, connection)
            guard let order = try self.loadOrder(connection, where: "o.id = \(bind: orderID)") else {
                throw SQLError(.other, "the order just merged cannot be read back")
            }
            return (order, result.moved)
        }
    }

    public func discrepancies(openOnly: Bool, limit: Int) async throws(OrderStoreError) -> [DiscrepancyRecord] {
        try await read("read discrepancies") { connection throws(SQLError) -> [DiscrepancyRecord] in
            try self.loadDiscrepancies(
                connection, where: openOnly ? "resolved_at IS NULL" : "1 = 1", limit: limit)
        }
    }

    public func resolveDiscrepancy(id: String, resolution: String) async throws(OrderStoreError) -> DiscrepancyRecord? {
        try await write("resolve discrepancy") { connection throws(SQLError) -> DiscrepancyRecord? in
            guard let open = try self.loadDiscrepancies(connection, where: "id = \(bind: id)", limit: 1).first else {
                return nil
            }
            guard open.resolvedAt == nil else { return open }
            let now = self.clock().unixMilliseconds
            try connection.run(
                """
                UPDATE payment_discrepancies SET resolved_at = \(bind: now), resolution = \(bind: resolution)
                WHERE id = \(bind: id) AND resolved_at IS NULL
                """, expectingRows: 1)
            try self.appendEvent(
                connection, "discrepancyResolved", checkoutID: open.checkoutID, orderID: open.orderID,
                ["discrepancyId": id, "resolution": resolution], at: now)
            return try self.loadDiscrepancies(connection, where: "id = \(bind: id)", limit: 1).first
        }
    }

    private func loadDiscrepancies(_ connection: Connection, where condition: SQLQuery, limit: Int)
        throws(SQLError) -> [DiscrepancyRecord]
    {
        var records: [DiscrepancyRecord] = []
        for row in try connection.query(
            """
            SELECT id, order_id, checkout_id, recorded, provider, source, corrected, detail_json, detected_at,
                resolved_at, resolution
            FROM payment_discrepancies WHERE \(condition)
            ORDER BY detected_at, id LIMIT \(bind: max(1, limit))
            """)
        {
            let text = try row.string("detail_json")
            let detail = try decodeStored([String: String].self, text, fast: StoredJSON.stringMap)
            records.append(
                DiscrepancyRecord(
                    id: try row.string("id"), orderID: try row.string("order_id"),
                    checkoutID: try row.string("checkout_id"), recorded: try row.string("recorded"),
                    provider: try row.string("provider"), source: try row.string("source"),
                    corrected: try row.int64("corrected") == 1, processorReference: detail["processorReference"],
                    doubleChargeOrderID: detail["doubleCharge"],
                    detectedAt: Date(unixMilliseconds: try row.int64("detected_at")),
                    resolvedAt: try row.optionalInt64("resolved_at").map { Date(unixMilliseconds: $0) },
                    resolution: try row.optionalString("resolution")))
        }
        return records
    }
}
