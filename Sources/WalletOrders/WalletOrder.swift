import Foundation
import Foundations

/// `order.json` of a Wallet order package (Apple's Wallet Orders schema, version 1): the fields this server fills.
public struct WalletOrder: Sendable, Hashable, Codable {
    /// An amount of money: a decimal string and an ISO 4217 code.
    public struct CurrencyAmount: Sendable, Hashable, Codable {
        public var amount: String
        public var currency: String
        public init(amount: String, currency: String) {
            self.amount = amount
            self.currency = currency
        }
    }

    public struct Merchant: Sendable, Hashable, Codable {
        public var merchantIdentifier: String
        public var displayName: String
        public var url: String
        /// A file in the package (e.g. `logo.png`), when there is one.
        public var logo: String?
        public init(merchantIdentifier: String, displayName: String, url: String, logo: String? = nil) {
            self.merchantIdentifier = merchantIdentifier
            self.displayName = displayName
            self.url = url
            self.logo = logo
        }
    }

    public struct LineItem: Sendable, Hashable, Codable {
        public var title: String
        public var quantity: Int
        public var price: CurrencyAmount?
        public var sku: String?
        public init(title: String, quantity: Int, price: CurrencyAmount?, sku: String?) {
            self.title = title
            self.quantity = quantity
            self.price = price
            self.sku = sku
        }
    }

    public struct SummaryItem: Sendable, Hashable, Codable {
        public var label: String
        public var value: CurrencyAmount
        public init(label: String, value: CurrencyAmount) {
            self.label = label
            self.value = value
        }
    }

    public struct Payment: Sendable, Hashable, Codable {
        public var total: CurrencyAmount
        /// One of Apple's values: `pending`, `authorized`, `paid`, `refunded`, `declined`, `voided` (deprecated by
        /// Apple but still read, and required by iOS 16).
        public var status: String
        public var summaryItems: [SummaryItem]
        /// The cards, as the customer knows them: strings such as `Visa 0492` (deprecated by Apple, still shown).
        public var paymentMethods: [String]
        public init(total: CurrencyAmount, status: String, summaryItems: [SummaryItem], paymentMethods: [String]) {
            self.total = total
            self.status = status
            self.summaryItems = summaryItems
            self.paymentMethods = paymentMethods
        }
    }

    /// A shipping fulfilment: its status and, once shipped, the carrier and tracking number.
    public struct Fulfillment: Sendable, Hashable, Codable {
        public var fulfillmentType: String
        public var fulfillmentIdentifier: String
        /// `open`, `processing`, `onTheWay`, `outForDelivery`, `delivered`, `shipped`, `issue`, `cancelled`.
        public var status: String
        public var carrier: String?
        public var trackingNumber: String?
        public var trackingURL: String?
        public var deliveredAt: String?
        public init(
            fulfillmentIdentifier: String, status: String, carrier: String? = nil, trackingNumber: String? = nil,
            trackingURL: String? = nil, deliveredAt: String? = nil
        ) {
            self.fulfillmentType = "shipping"
            self.fulfillmentIdentifier = fulfillmentIdentifier
            self.status = status
            self.carrier = carrier
            self.trackingNumber = trackingNumber
            self.trackingURL = trackingURL
            self.deliveredAt = deliveredAt
        }
    }

    public var schemaVersion: Int = 1
    public var orderType: String = "ecommerce"
    public var orderTypeIdentifier: String
    public var orderIdentifier: String
    public var orderNumber: String
    /// `open`, `completed` or `cancelled`.
    public var status: String
    public var merchant: Merchant
    /// RFC 3339 in UTC with milliseconds: `updatedAt` grows with every change, however close together.
    public var createdAt: String
    public var updatedAt: String
    /// The customer's page for the order (HTML, no login).
    public var orderManagementURL: String
    public var lineItems: [LineItem]
    public var payment: Payment
    public var fulfillments: [Fulfillment]
    /// Where Wallet registers for updates and downloads new versions: an `https://` URL (Apple refuses others).
    public var webServiceURL: String?
    /// What Wallet sends as `Authorization: AppleOrder <token>`: at least 16 characters, this order's own.
    public var authenticationToken: String?

    public init(
        orderTypeIdentifier: String, orderIdentifier: String, orderNumber: String, status: String, merchant: Merchant,
        createdAt: Date, updatedAt: Date, orderManagementURL: String, lineItems: [LineItem], payment: Payment,
        fulfillments: [Fulfillment], webServiceURL: String? = nil, authenticationToken: String? = nil
    ) {
        self.orderTypeIdentifier = orderTypeIdentifier
        self.orderIdentifier = orderIdentifier
        self.orderNumber = orderNumber
        self.status = status
        self.merchant = merchant
        self.createdAt = WalletOrder.timestamp(createdAt)
        self.updatedAt = WalletOrder.timestamp(updatedAt)
        self.orderManagementURL = orderManagementURL
        self.lineItems = lineItems
        self.payment = payment
        self.fulfillments = fulfillments
        self.webServiceURL = webServiceURL
        self.authenticationToken = authenticationToken
    }

    /// A date as `order.json` writes it: RFC 3339 in UTC with milliseconds (`2026-11-30T16:51:19.042Z`).
    public static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(unixMilliseconds: date.unixMilliseconds))
    }
}
