import Foundation
import Foundations

/// A shipping step recorded by the admin API (`POST /admin/v1/orders/{id}/fulfillments`).
public struct FulfillmentStep: Sendable, Equatable, Codable {
    /// The steps a shipment goes through, as Wallet names them.
    public enum Status: String, Sendable, Codable, CaseIterable {
        case shipped
        case outForDelivery
        case delivered
    }

    public var status: Status
    /// Required for `shipped`; kept by later steps.
    public var carrier: String?
    public var trackingNumber: String?
    public var at: Date

    public init(status: Status, carrier: String? = nil, trackingNumber: String? = nil, at: Date) {
        self.status = status
        self.carrier = carrier
        self.trackingNumber = trackingNumber
        self.at = at
    }
    private enum CodingKeys: String, CodingKey { case status, carrier, trackingNumber, at }

    /// `at` as ISO 8601 text, as the rest of the API writes times.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(status, forKey: .status)
        try container.encodeIfPresent(carrier, forKey: .carrier)
        try container.encodeIfPresent(trackingNumber, forKey: .trackingNumber)
        try container.encode(at.formatted(.iso8601), forKey: .at)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        status = try container.decode(Status.self, forKey: .status)
        carrier = try container.decodeIfPresent(String.self, forKey: .carrier)
        trackingNumber = try container.decodeIfPresent(String.self, forKey: .trackingNumber)
        let text = try container.decode(String.self, forKey: .at)
        guard let date = ISO8601DateFormatter().date(from: text) else {
            throw DecodingError.dataCorruptedError(forKey: .at, in: container, debugDescription: "not ISO 8601")
        }
        at = date
    }
}

/// A device registered for an order's updates through the orders web service.
public struct DeviceRegistration: Sendable, Equatable {
    public var deviceIdentifier: String
    public var pushToken: String
    public var orderTypeIdentifier: String
    public var orderID: String

    public init(deviceIdentifier: String, pushToken: String, orderTypeIdentifier: String, orderID: String) {
        self.deviceIdentifier = deviceIdentifier
        self.pushToken = pushToken
        self.orderTypeIdentifier = orderTypeIdentifier
        self.orderID = orderID
    }
}

/// The store calls behind Wallet orders. Every ``OrderStore`` gets these; a store that does not keep Wallet data
/// yet answers `storage` ("not supported") through the default implementations below, so the rest keeps working.
public protocol WalletOrderStore: Sendable {
    /// Appends a fulfilment step and moves the order's `updatedAt` forward (to at least the next whole second, so
    /// HTTP's second-resolution `If-Modified-Since` sees every change). Only for orders that were paid.
    /// - Throws: `notFound` for an unknown order, `conflict` for an order that was never paid.
    func recordFulfillment(orderID: String, _ step: FulfillmentStep) async throws(OrderStoreError) -> Order
    /// The order's fulfilment steps, oldest first.
    func fulfillments(orderID: String) async throws(OrderStoreError) -> [FulfillmentStep]
    /// Registers (or re-registers with a new push token) a device for an order. Returns true when it is new.
    func registerDevice(_ registration: DeviceRegistration) async throws(OrderStoreError) -> Bool
    /// Removes a registration; returns whether there was one.
    func unregisterDevice(deviceIdentifier: String, orderTypeIdentifier: String, orderID: String)
        async throws(OrderStoreError) -> Bool
    /// The registrations of a device (for one order type), or of an order (every device), when the other is nil.
    func registrations(deviceIdentifier: String?, orderTypeIdentifier: String, orderID: String?)
        async throws(OrderStoreError) -> [DeviceRegistration]
}

extension WalletOrderStore {
    public func recordFulfillment(orderID: String, _ step: FulfillmentStep) async throws(OrderStoreError) -> Order {
        throw Self.unsupported
    }
    public func fulfillments(orderID: String) async throws(OrderStoreError) -> [FulfillmentStep] { [] }
    public func registerDevice(_ registration: DeviceRegistration) async throws(OrderStoreError) -> Bool {
        throw Self.unsupported
    }
    public func unregisterDevice(deviceIdentifier: String, orderTypeIdentifier: String, orderID: String)
        async throws(OrderStoreError) -> Bool
    { throw Self.unsupported }
    public func registrations(deviceIdentifier: String?, orderTypeIdentifier: String, orderID: String?)
        async throws(OrderStoreError) -> [DeviceRegistration]
    { [] }

    static var unsupported: OrderStoreError {
        OrderStoreError(.storage, "this order store does not keep Wallet order data (fulfilments, registrations)")
    }
}
