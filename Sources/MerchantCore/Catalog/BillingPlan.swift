import ApplePay
import Foundation

/// How a catalog product bills after checkout: a subscription, a stored-value top-up, or a payment taken later.
/// A product with a plan is sold alone (one plan per checkout, as Apple requires one special request per payment
/// request) and is paid with a merchant token.
///
/// JSON (the `plan` of a product): `{"kind": "recurring", "intervalUnit": "month", "intervalCount": 1,
/// "trial"?: {"price": "1.00", "intervalUnit": "month", "intervalCount": 1}, "endDate"?: ISO 8601,
/// "description"?}`, `{"kind": "automaticReload", "thresholdAmount": "5.00", "description"?}` (the reload amount
/// is the product's price), `{"kind": "deferred", "billingDate": ISO 8601, "freeCancellationDate"?: ISO 8601,
/// "freeCancellationTimeZone"?: IANA name, "description"?}` (the amount is the product's price).
public enum BillingPlan: Sendable, Equatable, Codable {
    case recurring(RecurringPlan)
    case automaticReload(AutomaticReloadPlan)
    case deferred(DeferredPlan)

    /// `recurring`, `automaticReload` or `deferred`.
    public var kind: String {
        switch self {
        case .recurring: "recurring"
        case .automaticReload: "automaticReload"
        case .deferred: "deferred"
        }
    }

    /// What the sheet shows as `paymentDescription` (the plan's own, else the product's name).
    public var description: String? {
        switch self {
        case .recurring(let plan): plan.description
        case .automaticReload(let plan): plan.description
        case .deferred(let plan): plan.description
        }
    }

    private enum CodingKeys: String, CodingKey {
        case kind, description, intervalUnit, intervalCount, trial, endDate, thresholdAmount, reloadAmount
        case billingDate, freeCancellationDate, freeCancellationTimeZone
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let description = try c.decodeIfPresent(String.self, forKey: .description)
        func date(_ key: CodingKeys) throws -> Date? {
            guard let text = try c.decodeIfPresent(String.self, forKey: key) else { return nil }
            guard let value = BillingPlan.parseDate(text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: c, debugDescription: "\(key.stringValue) must be ISO 8601, e.g. 2030-01-31")
            }
            return value
        }
        switch try c.decode(String.self, forKey: .kind) {
        case "recurring":
            self = .recurring(
                RecurringPlan(
                    intervalUnit: RecurringIntervalUnit(rawValue: try c.decode(String.self, forKey: .intervalUnit)),
                    intervalCount: try c.decodeIfPresent(Int.self, forKey: .intervalCount) ?? 1,
                    trial: try c.decodeIfPresent(RecurringPlan.Trial.self, forKey: .trial),
                    endDate: try date(.endDate), description: description))
        case "automaticReload":
            self = .automaticReload(
                AutomaticReloadPlan(thresholdAmount: try decodeDecimal(c, .thresholdAmount), description: description))
        case "deferred":
            guard let billingDate = try date(.billingDate) else {
                throw DecodingError.keyNotFound(
                    CodingKeys.billingDate, .init(codingPath: c.codingPath, debugDescription: "billingDate is required")
                )
            }
            self = .deferred(
                DeferredPlan(
                    billingDate: billingDate, freeCancellationDate: try date(.freeCancellationDate),
                    freeCancellationTimeZone: try c.decodeIfPresent(String.self, forKey: .freeCancellationTimeZone),
                    description: description))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .kind, in: c,
                debugDescription: "kind must be \"recurring\", \"automaticReload\" or \"deferred\"")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .kind)
        try c.encodeIfPresent(description, forKey: .description)
        switch self {
        case .recurring(let plan):
            try c.encode(plan.intervalUnit.rawValue, forKey: .intervalUnit)
            try c.encode(plan.intervalCount, forKey: .intervalCount)
            try c.encodeIfPresent(plan.trial, forKey: .trial)
            try c.encodeIfPresent(plan.endDate.map(Self.formatDate), forKey: .endDate)
        case .automaticReload(let plan):
            try c.encode("\(plan.thresholdAmount)", forKey: .thresholdAmount)
        case .deferred(let plan):
            try c.encode(Self.formatDate(plan.billingDate), forKey: .billingDate)
            try c.encodeIfPresent(plan.freeCancellationDate.map(Self.formatDate), forKey: .freeCancellationDate)
            try c.encodeIfPresent(plan.freeCancellationTimeZone, forKey: .freeCancellationTimeZone)
        }
    }

    /// ISO 8601 with time (`2030-01-31T00:00:00Z`) or a plain date (`2030-01-31`, midnight UTC).
    package static func parseDate(_ text: String) -> Date? {
        if let date = ISO8601DateFormatter().date(from: text) { return date }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        return formatter.date(from: text)
    }

    /// `2030-01-31T00:00:00Z`. A format style is a value: no formatter object (an ICU one) is built per call, which
    /// cost half of `GET /v1/products`' CPU.
    package static func formatDate(_ date: Date) -> String { date.formatted(.iso8601) }
}

/// A subscription: the product's price every `intervalCount` `intervalUnit`s, after an optional trial.
public struct RecurringPlan: Sendable, Equatable {
    /// A first period at its own price (charged at checkout) before the regular billing starts.
    public struct Trial: Sendable, Equatable, Codable {
        /// Charged at checkout; above zero (the processor keeps the card with a real charge).
        public var price: Decimal
        public var intervalUnit: RecurringIntervalUnit
        public var intervalCount: Int
    }

    public var intervalUnit: RecurringIntervalUnit
    public var intervalCount: Int
    public var trial: Trial?
    /// No charge is due after this date.
    public var endDate: Date?
    public var description: String?

    public init(
        intervalUnit: RecurringIntervalUnit, intervalCount: Int = 1, trial: Trial? = nil, endDate: Date? = nil,
        description: String? = nil
    ) {
        self.intervalUnit = intervalUnit
        self.intervalCount = intervalCount
        self.trial = trial
        self.endDate = endDate
        self.description = description
    }
}

extension RecurringPlan.Trial {
    private enum CodingKeys: String, CodingKey { case price, intervalUnit, intervalCount }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        price = try decodeDecimal(c, .price)
        intervalUnit = RecurringIntervalUnit(rawValue: try c.decode(String.self, forKey: .intervalUnit))
        intervalCount = try c.decodeIfPresent(Int.self, forKey: .intervalCount) ?? 1
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode("\(price)", forKey: .price)
        try c.encode(intervalUnit.rawValue, forKey: .intervalUnit)
        try c.encode(intervalCount, forKey: .intervalCount)
    }
}

/// A stored-value top-up: the product's price is reloaded whenever the merchant reports the balance below
/// ``thresholdAmount``.
public struct AutomaticReloadPlan: Sendable, Equatable {
    public var thresholdAmount: Decimal
    public var description: String?
}

/// A payment taken later: the product's price on ``billingDate``, unless cancelled before then (free of charge
/// until ``freeCancellationDate`` when there is one).
public struct DeferredPlan: Sendable, Equatable {
    public var billingDate: Date
    public var freeCancellationDate: Date?
    /// IANA time zone of ``freeCancellationDate`` (Apple requires both or neither); UTC when absent.
    public var freeCancellationTimeZone: String?
    public var description: String?
}

/// Billing-cycle dates in UTC on the Gregorian calendar, counted from an anchor so that they never drift
/// (the 31st of January monthly gives 28 February, 31 March, 30 April, ...).
public enum BillingCalendar {
    static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        return calendar
    }()

    /// `anchor` plus `count` × `intervalCount` units.
    public static func date(_ anchor: Date, plus count: Int, _ unit: RecurringIntervalUnit, every intervalCount: Int)
        -> Date
    {
        let value = count * intervalCount
        let component: Calendar.Component
        switch unit {
        case .year: component = .year
        case .day: component = .day
        case .hour: component = .hour
        case .minute: component = .minute
        default: component = .month
        }
        return calendar.date(byAdding: component, value: value, to: anchor) ?? anchor
    }
}
