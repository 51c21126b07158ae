import Foundation

/// A way to ship the order: Apple Pay JS `ApplePayShippingMethod`.
public struct ShippingMethod: Sendable, Hashable, Codable {
    /// A short description shown on the sheet, for example "Standard Shipping".
    public var label: String
    /// More detail shown beneath the label, for example "Arrives in 5 to 7 days".
    public var detail: String?
    /// The shipping cost as a decimal string; must not be negative.
    public var amount: String
    /// The merchant's identifier for the method; not shown, unique within a request.
    public var identifier: String
    /// The expected delivery window (Apple Pay JS v12).
    public var dateComponentsRange: DateComponentsRange?

    public init(
        label: String, detail: String? = nil, amount: String, identifier: String,
        dateComponentsRange: DateComponentsRange? = nil
    ) {
        self.label = label
        self.detail = detail
        self.amount = amount
        self.identifier = identifier
        self.dateComponentsRange = dateComponentsRange
    }

    /// The amount parsed as a decimal, or nil when it is not one.
    public var decimalAmount: Decimal? { try? Currency.parseDecimal(amount) }
}

/// A range of calendar dates: Apple Pay JS `ApplePayDateComponentsRange`.
public struct DateComponentsRange: Sendable, Hashable, Codable {
    public var startDateComponents: DateComponents
    public var endDateComponents: DateComponents

    public init(startDateComponents: DateComponents, endDateComponents: DateComponents) {
        self.startDateComponents = startDateComponents
        self.endDateComponents = endDateComponents
    }

    /// A calendar date's parts: Apple Pay JS `ApplePayDateComponents`.
    public struct DateComponents: Sendable, Hashable, Codable {
        public var years: Int?
        public var months: Int?
        public var days: Int?
        public var hours: Int?

        public init(years: Int? = nil, months: Int? = nil, days: Int? = nil, hours: Int? = nil) {
            self.years = years
            self.months = months
            self.days = days
            self.hours = hours
        }
    }
}
