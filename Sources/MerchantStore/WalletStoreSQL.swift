import Foundation
import Foundations
import MerchantCore
import SQLCore

/// Wallet order records (``WalletOrderStore``): the fulfilment steps of an order and the devices registered for its
/// updates.
///
/// Across instances: a fulfilment step locks its order's row, so two instances recording steps of one order write
/// them one after the other and each moves `updated_at` past the previous one; a registration is an
/// `INSERT ... ON CONFLICT DO NOTHING` on its primary key (an update when the key was there), so two instances
/// registering the same device write one row and one of them reports it new.
extension SQLStore {
    /// The `updated_at` an order gets when it changes at `now`: `now`, or the start of the second after its current
    /// `updated_at` when that is later. Every version of an order thus has a whole second of its own, so HTTP's
    /// second-resolution `If-Modified-Since` (what Wallet sends back from `Last-Modified`) tells any two versions
    /// apart, however close together they were written; `updatedAt` grows with each change (Apple requires it) and
    /// runs at most a second per change ahead of the clock in a burst. Every change of a paid order uses it (refunds,
    /// voids, fulfilment steps); a payment's outcome (pending or unknown to paid or declined) comes before any Wallet
    /// version exists and keeps the clock's time, which the reconciler's age cut-off reads.
    static func nextOrderVersion(_ now: Int64) -> SQLQuery {
        """
        CASE WHEN (updated_at / 1000 + 1) * 1000 > \(bind: now) THEN (updated_at / 1000 + 1) * 1000 \
        ELSE \(bind: now) END
        """
    }

    public func recordFulfillment(orderID: String, _ step: FulfillmentStep) async throws(OrderStoreError) -> Order {
        try await write("record fulfillment") { connection throws(SQLError) -> Result<Order, OrderStoreError> in
            guard let order = try self.lockOrder(connection, orderID) else {
                return .failure(OrderStoreError(.notFound, "no order \(orderID)"))
            }
            guard [.paid, .partiallyRefunded, .refunded].contains(order.status) else {
                return .failure(OrderStoreError(.conflict, "order \(orderID) is \(order.status.rawValue), not paid"))
            }
            // At least the next whole second, as nextOrderVersion: HTTP dates have second resolution.
            let previous = order.updatedAt.unixMilliseconds
            let now = max(step.at.unixMilliseconds, (previous / 1000 + 1) * 1000)
            try connection.run(
                """
                INSERT INTO fulfillments (order_id, status, carrier, tracking_number, at)
                VALUES (\(bind: orderID), \(bind: step.status.rawValue), \(bind: step.carrier), \
                \(bind: step.trackingNumber), \(bind: now))
                """)
            try connection.run(
                "UPDATE orders SET updated_at = \(bind: now) WHERE id = \(bind: orderID)", expectingRows: 1)
            try self.appendEvent(
                connection, "fulfillment", checkoutID: order.checkoutID, orderID: orderID,
                ["status": step.status.rawValue], at: now)
            guard let updated = try self.loadOrder(connection, where: "o.id = \(bind: orderID)") else {
                throw SQLError(.other, "the order just updated cannot be read back")
            }
            return .success(updated)
        }.get()
    }

    public func fulfillments(orderID: String) async throws(OrderStoreError) -> [FulfillmentStep] {
        try await read("read fulfillments") { connection throws(SQLError) -> [FulfillmentStep] in
            var steps: [FulfillmentStep] = []
            for row in try connection.query(
                """
                SELECT status, carrier, tracking_number, at FROM fulfillments
                WHERE order_id = \(bind: orderID) ORDER BY sequence
                """)
            {
                let text = try row.string("status")
                guard let status = FulfillmentStep.Status(rawValue: text) else {
                    throw SQLError(.typeMismatch, "unknown fulfillment status \(text)")
                }
                steps.append(
                    FulfillmentStep(
                        status: status, carrier: try row.optionalString("carrier"),
                        trackingNumber: try row.optionalString("tracking_number"),
                        at: Date(unixMilliseconds: try row.int64("at"))))
            }
            return steps
        }
    }

    public func registerDevice(_ registration: DeviceRegistration) async throws(OrderStoreError) -> Bool {
        try await write("register device") { connection throws(SQLError) -> Bool in
            let now = self.clock().unixMilliseconds
            let inserted = try connection.run(
                """
                INSERT INTO device_registrations (device_identifier, order_type_identifier, order_id, push_token,
                    created_at, updated_at)
                VALUES (\(bind: registration.deviceIdentifier), \(bind: registration.orderTypeIdentifier), \
                \(bind: registration.orderID), \(bind: registration.pushToken), \(bind: now), \(bind: now))
                \(raw: connection.dialect.onConflictDoNothing("device_identifier", "order_type_identifier", "order_id"))
                """)
            guard inserted == 0 else { return true }
            try connection.run(
                """
                UPDATE device_registrations SET push_token = \(bind: registration.pushToken), updated_at = \(bind: now)
                WHERE device_identifier = \(bind: registration.deviceIdentifier)
                    AND order_type_identifier = \(bind: registration.orderTypeIdentifier)
                    AND order_id = \(bind: registration.orderID)
                """)
            return false
        }
    }

    public func unregisterDevice(deviceIdentifier: String, orderTypeIdentifier: String, orderID: String)
        async throws(OrderStoreError) -> Bool
    {
        try await write("unregister device") { connection throws(SQLError) -> Bool in
            try connection.run(
                """
                DELETE FROM device_registrations
                WHERE device_identifier = \(bind: deviceIdentifier) AND order_type_identifier = \(bind: orderTypeIdentifier)
                    AND order_id = \(bind: orderID)
                """) > 0
        }
    }

    public func registrations(deviceIdentifier: String?, orderTypeIdentifier: String, orderID: String?)
        async throws(OrderStoreError) -> [DeviceRegistration]
    {
        var condition: SQLQuery = "order_type_identifier = \(bind: orderTypeIdentifier)"
        if let deviceIdentifier { condition.append(" AND device_identifier = \(bind: deviceIdentifier)") }
        if let orderID { condition.append(" AND order_id = \(bind: orderID)") }
        let chosen = condition
        return try await read("read registrations") { connection throws(SQLError) -> [DeviceRegistration] in
            var registrations: [DeviceRegistration] = []
            for row in try connection.query(
                """
                SELECT device_identifier, order_type_identifier, order_id, push_token FROM device_registrations
                WHERE \(chosen) ORDER BY created_at, device_identifier, order_id
                """)
            {
                registrations.append(
                    DeviceRegistration(
                        deviceIdentifier: try row.string("device_identifier"), pushToken: try row.string("push_token"),
                        orderTypeIdentifier: try row.string("order_type_identifier"),
                        orderID: try row.string("order_id")))
            }
            return registrations
        }
    }
}
