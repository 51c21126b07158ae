import Foundation
import MerchantCore
import SQLite

/// Wallet order records on SQLite (migration 005): fulfilment steps and device registrations.
extension SQLiteOrderStore {
    public func recordFulfillment(orderID: String, _ step: FulfillmentStep) async throws(OrderStoreError) -> Order {
        nonisolated(unsafe) var result: Order?
        nonisolated(unsafe) var conflict: OrderStatus?
        try await write("record fulfillment") { [self] connection throws(SQLiteError) in
            guard let order = try loadOrder(connection, where: "o.id = ?", .text(orderID)) else { return }
            guard [.paid, .partiallyRefunded, .refunded].contains(order.status) else {
                conflict = order.status
                return
            }
            // At least the next whole second: HTTP dates have second resolution.
            let previous = millis(order.updatedAt)
            let now = max(millis(step.at), (previous / 1000 + 1) * 1000)
            try connection.run(
                "INSERT INTO fulfillments (order_id, status, carrier, tracking_number, at) VALUES (?, ?, ?, ?, ?)",
                .text(orderID), .text(step.status.rawValue), Value(step.carrier), Value(step.trackingNumber),
                .integer(now))
            try connection.run("UPDATE orders SET updated_at = ? WHERE id = ?", .integer(now), .text(orderID))
            try appendEvent(
                connection, "fulfillment", checkoutID: order.checkoutID, orderID: orderID,
                ["status": step.status.rawValue], at: now)
            result = try loadOrder(connection, where: "o.id = ?", .text(orderID))
        }
        if let conflict { throw OrderStoreError(.conflict, "order \(orderID) is \(conflict.rawValue), not paid") }
        guard let result else { throw OrderStoreError(.notFound, "no order \(orderID)") }
        return result
    }

    public func fulfillments(orderID: String) throws(OrderStoreError) -> [FulfillmentStep] {
        try read("read fulfillments") { connection throws(SQLiteError) in
            try connection.query(
                "SELECT status, carrier, tracking_number, at FROM fulfillments WHERE order_id = ? ORDER BY sequence",
                .text(orderID)
            ).map { row throws(SQLiteError) in
                let text = try row.string("status")
                guard let status = FulfillmentStep.Status(rawValue: text) else {
                    throw SQLiteError(.typeMismatch, "unknown fulfillment status \(text)")
                }
                return FulfillmentStep(
                    status: status, carrier: try row.optionalString("carrier"),
                    trackingNumber: try row.optionalString("tracking_number"), at: date(try row.int64("at")))
            }
        }
    }

    public func registerDevice(_ registration: DeviceRegistration) async throws(OrderStoreError) -> Bool {
        nonisolated(unsafe) var isNew = false
        try await write("register device") { [self] connection throws(SQLiteError) in
            let now = millis(clock())
            let existing = try connection.query(
                """
                SELECT push_token FROM device_registrations
                WHERE device_identifier = ? AND order_type_identifier = ? AND order_id = ?
                """, .text(registration.deviceIdentifier), .text(registration.orderTypeIdentifier),
                .text(registration.orderID))
            if existing.isEmpty {
                isNew = true
                try connection.run(
                    """
                    INSERT INTO device_registrations (device_identifier, order_type_identifier, order_id, push_token,
                        created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                    """, .text(registration.deviceIdentifier), .text(registration.orderTypeIdentifier),
                    .text(registration.orderID), .text(registration.pushToken), .integer(now), .integer(now))
            } else {
                try connection.run(
                    """
                    UPDATE device_registrations SET push_token = ?, updated_at = ?
                    WHERE device_identifier = ? AND order_type_identifier = ? AND order_id = ?
                    """, .text(registration.pushToken), .integer(now), .text(registration.deviceIdentifier),
                    .text(registration.orderTypeIdentifier), .text(registration.orderID))
            }
        }
        return isNew
    }

    public func unregisterDevice(deviceIdentifier: String, orderTypeIdentifier: String, orderID: String)
        async throws(OrderStoreError) -> Bool
    {
        var removed = 0
        try await write("unregister device") { [self] connection throws(SQLiteError) in
            removed = try connection.run(
                """
                DELETE FROM device_registrations
                WHERE device_identifier = ? AND order_type_identifier = ? AND order_id = ?
                """, .text(deviceIdentifier), .text(orderTypeIdentifier), .text(orderID))
        }
        return removed > 0
    }

    public func registrations(deviceIdentifier: String?, orderTypeIdentifier: String, orderID: String?)
        throws(OrderStoreError) -> [DeviceRegistration]
    {
        try read("read registrations") { connection throws(SQLiteError) in
            try connection.query(
                """
                SELECT device_identifier, order_type_identifier, order_id, push_token FROM device_registrations
                WHERE order_type_identifier = ?1 AND (?2 IS NULL OR device_identifier = ?2)
                    AND (?3 IS NULL OR order_id = ?3) ORDER BY created_at
                """,
                .text(orderTypeIdentifier), Value(deviceIdentifier), Value(orderID)
            ).map { row throws(SQLiteError) in
                DeviceRegistration(
                    deviceIdentifier: try row.string("device_identifier"), pushToken: try row.string("push_token"),
                    orderTypeIdentifier: try row.string("order_type_identifier"), orderID: try row.string("order_id"))
            }
        }
    }
}

private func millis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
private func date(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1000) }
