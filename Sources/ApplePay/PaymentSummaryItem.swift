import Foundation

/// Whether an amount is known (`final`) or an estimate still to be settled (`pending`).
public struct SummaryItemType: OpenStringEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let final: SummaryItemType = "final"
    public static let pending: SummaryItemType = "pending"

    public static let known: [SummaryItemType] = [.final, .pending]
}

/// When an item is paid (`paymentTiming`, Apple Pay JS v14): its kind.
public struct PaymentTiming: OpenStringEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let immediate: PaymentTiming = "immediate"
    public static let recurring: PaymentTiming = "recurring"
    public static let deferred: PaymentTiming = "deferred"
    public static let automaticReload: PaymentTiming = "automaticReload"

    public static let known: [PaymentTiming] = [.immediate, .recurring, .deferred, .automaticReload]
}

/// The unit of a recurring item's interval (`recurringPaymentIntervalUnit`).
public struct RecurringIntervalUnit: OpenStringEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let year: RecurringIntervalUnit = "year"
    public static let month: RecurringIntervalUnit = "month"
    public static let day: RecurringIntervalUnit = "day"
    public static let hour: RecurringIntervalUnit = "hour"
    public static let minute: RecurringIntervalUnit = "minute"

    public static let known: [RecurringIntervalUnit] = [.year, .month, .day, .hour, .minute]
}

/// A line of the payment sheet, or its total: Apple Pay JS `ApplePayLineItem`.
///
/// Amounts and dates are kept as the strings the JSON carries, so that a request whose amount is not a
/// decimal still decodes and `PaymentRequest.validate()` can say where; `decimalAmount` and the `*Date`
/// accessors parse them.
public struct PaymentSummaryItem: Sendable, Hashable, Codable {
    /// `final` (the default when absent) or `pending`.
    public var type: SummaryItemType?
    /// What the line says; the total's label is the business name.
    public var label: String
    /// The amount as a decimal string, for example `"12.34"`; a pending item may leave it out.
    public var amount: String?
    /// The item's kind: immediate, recurring, deferred or automatic reload.
    public var paymentTiming: PaymentTiming?
    /// Recurring items: the first payment's date (ISO 8601, as `JSON.stringify` writes a `Date`).
    public var recurringPaymentStartDate: String?
    /// Recurring items: the interval's unit.
    public var recurringPaymentIntervalUnit: RecurringIntervalUnit?
    /// Recurring items: how many units between payments (default 1).
    public var recurringPaymentIntervalCount: Int?
    /// Recurring items: the last payment's date.
    public var recurringPaymentEndDate: String?
    /// Deferred items: when the payment will be taken.
    public var deferredPaymentDate: String?
    /// Automatic reload items: the balance below which `amount` is reloaded.
    public var automaticReloadPaymentThresholdAmount: String?

    /// A summary item with the fields most items need.
    public init(label: String, amount: String?, type: SummaryItemType? = nil) {
        self.label = label
        self.amount = amount
        self.type = type
    }

    /// A final item with a decimal amount, written with the currency's decimals (`12.5` USD → `"12.50"`).
    public init(label: String, amount: Decimal, currency: Currency) {
        self.init(label: label, amount: currency.format(amount), type: nil)
    }

    /// Whether the item is pending (`type` is `pending`); absent means final.
    public var isPending: Bool { type == .pending }

    /// The amount parsed as a decimal (no limit on decimals), or nil when absent or not a decimal.
    public var decimalAmount: Decimal? { amount.flatMap { try? Currency.parseDecimal($0) } }

    /// The recurring start date parsed, or nil.
    public var recurringStart: Date? { recurringPaymentStartDate.flatMap(parseAppleDate) }
    /// The recurring end date parsed, or nil.
    public var recurringEnd: Date? { recurringPaymentEndDate.flatMap(parseAppleDate) }
    /// The deferred date parsed, or nil.
    public var deferredDate: Date? { deferredPaymentDate.flatMap(parseAppleDate) }
}

extension Currency {
    /// Writes a decimal amount the way Apple Pay JS expects: plain digits, padded to the currency's decimals
    /// (`12.5` USD → `"12.50"`, `7` JPY → `"7"`). An amount with more decimals than the currency allows keeps
    /// them all, so that validation reports it rather than a silent rounding.
    public func format(_ amount: Decimal) -> String {
        var text = amount.description
        let decimals = text.firstIndex(of: ".").map { text.distance(from: $0, to: text.endIndex) - 1 } ?? 0
        if decimals < minorUnits {
            if decimals == 0 { text += "." }
            text += String(repeating: "0", count: minorUnits - decimals)
        }
        return text
    }
}

extension PaymentSummaryItem {
    /// The amount parsed with the currency's rules (at most its decimals), or nil when the item has none.
    /// - Throws: `AmountError` when the amount is not a decimal or has too many decimals.
    public func amount(in currency: Currency) throws(AmountError) -> Decimal? {
        guard let amount else { return nil }
        return try currency.parseAmount(amount)
    }

    /// The amount in the currency's minor units (`"12.34"` USD → `1234`), or nil when the item has none.
    /// - Throws: `AmountError` when the amount is not a decimal, has too many decimals or overflows.
    public func minorUnits(in currency: Currency) throws(AmountError) -> Int64? {
        guard let value = try amount(in: currency) else { return nil }
        return try currency.minorUnits(of: value)
    }
}

/// Parses a date as Apple Pay JS sends it: ISO 8601 with or without fractional seconds, or a plain `YYYY-MM-DD`.
func parseAppleDate(_ text: String) -> Date? {
    if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) {
        return date
    }
    if let date = try? Date(text, strategy: Date.ISO8601FormatStyle()) { return date }
    if let date = try? Date(text, strategy: Date.ISO8601FormatStyle().year().month().day()) { return date }
    return nil
}
