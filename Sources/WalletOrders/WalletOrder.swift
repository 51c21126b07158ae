import Foundation

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
        public var price: CurrencyAmount
        public var sku: String?
        public init(title: String, quantity: Int, price: CurrencyAmount, sku: String?) {
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

    /// The card, as the customer knows it: a display name such as "Visa" and the last four digits.
    public struct PaymentMethod: Sendable, Hashable, Codable {
        public var displayName: String
        public var suffix: String?
        public init(displayName: String, suffix: String?) {
            self.displayName = displayName
            self.suffix = suffix
        }
    }

    public struct Payment: Sendable, Hashable, Codable {
        public var total: CurrencyAmount
        /// `paid`, `pending`, `refunded`, `partiallyRefunded`, `cancelled`.
        public var status: String
        public var summaryItems: [SummaryItem]
        public var paymentMethods: [PaymentMethod]
        public init(total: CurrencyAmount, status: String, summaryItems: [SummaryItem], paymentMethods: [PaymentMethod])
        {
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
        /// `processing`, `onTheWay`, `shipped`, `outForDelivery`, `delivered`, `cancelled`, `issue`, `delayed`.
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
    /// ISO 8601 with seconds, UTC.
    public var createdAt: String
    public var updatedAt: String
    public var orderManagementURL: String
    public var lineItems: [LineItem]
    public var payment: Payment
    public var fulfillments: [Fulfillment]

    public init(
        orderTypeIdentifier: String, orderIdentifier: String, orderNumber: String, status: String, merchant: Merchant,
        createdAt: Date, updatedAt: Date, orderManagementURL: String, lineItems: [LineItem], payment: Payment,
        fulfillments: [Fulfillment]
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
    }

    /// A date as `order.json` writes it: ISO 8601 in UTC with whole seconds.
    public static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)))
    }

    /// Problems with the order against the schema's rules this project checks (required values, known enums,
    /// times, URLs); empty when it conforms.
    public func schemaProblems() -> [String] {
        var problems: [String] = []
        if schemaVersion != 1 { problems.append("schemaVersion must be 1") }
        if orderType != "ecommerce" { problems.append("orderType must be ecommerce") }
        if !orderTypeIdentifier.hasPrefix("order.") { problems.append("orderTypeIdentifier must start with order.") }
        if orderIdentifier.isEmpty || orderIdentifier.count > 64 {
            problems.append("orderIdentifier: 1 to 64 characters")
        }
        if orderNumber.isEmpty { problems.append("orderNumber is empty") }
        if !["open", "completed", "cancelled"].contains(status) { problems.append("status \(status) is not allowed") }
        let formatter = ISO8601DateFormatter()
        for (name, value) in [("createdAt", createdAt), ("updatedAt", updatedAt)]
        where formatter.date(from: value) == nil {
            problems.append("\(name) is not an ISO 8601 date")
        }
        for (name, value) in [("orderManagementURL", orderManagementURL), ("merchant.url", merchant.url)] {
            if URL(string: value)?.scheme == nil { problems.append("\(name) is not a URL") }
        }
        if merchant.displayName.isEmpty || merchant.merchantIdentifier.isEmpty {
            problems.append("merchant needs displayName and merchantIdentifier")
        }
        if lineItems.isEmpty { problems.append("lineItems is empty") }
        let fulfillmentStatuses = [
            "processing", "onTheWay", "shipped", "outForDelivery", "delivered", "cancelled", "issue", "delayed",
        ]
        for fulfillment in fulfillments where !fulfillmentStatuses.contains(fulfillment.status) {
            problems.append("fulfillment status \(fulfillment.status) is not allowed")
        }
        let amountPattern = /^-?[0-9]+(\.[0-9]+)?$/
        for amount in [payment.total] + lineItems.map(\.price) + payment.summaryItems.map(\.value) {
            if (try? amountPattern.wholeMatch(in: amount.amount)) == nil || amount.currency.count != 3 {
                problems.append("amount \(amount.amount) \(amount.currency) is not a decimal amount and currency")
            }
        }
        return problems
    }
}
