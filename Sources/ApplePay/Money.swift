import Foundation

/// An amount of money: whole minor units of one ISO 4217 currency (`1250` USD is 12.50 dollars, `1250` JPY is
/// 1,250 yen). Never floating point; converted to and from `Decimal` and Apple Pay JS amount strings exactly.
public struct Money: Sendable, Hashable, CustomStringConvertible {
    /// The amount in minor units of ``currency``.
    public var minorUnits: Int64
    public var currency: Currency

    public init(minorUnits: Int64, currency: Currency) {
        self.minorUnits = minorUnits
        self.currency = currency
    }

    /// Zero in `currency`.
    public static func zero(_ currency: Currency) -> Money { Money(minorUnits: 0, currency: currency) }

    /// The exact amount of a decimal value (`12.5` USD → 1250 minor units).
    /// - Throws: `AmountError` when `amount` has more decimals than the currency allows or overflows.
    public init(exactly amount: Decimal, currency: Currency) throws(AmountError) {
        self.init(minorUnits: try currency.minorUnits(of: amount), currency: currency)
    }

    /// An Apple Pay JS amount string in `currency` (`"12.50"`).
    /// - Throws: `AmountError` for text outside Apple's grammar, too many decimals, or overflow.
    public init(parsing text: String, currency: Currency) throws(AmountError) {
        try self.init(exactly: try currency.parseAmount(text), currency: currency)
    }

    /// The decimal value (`1250` USD → `12.5`).
    public var decimal: Decimal { currency.amount(fromMinorUnits: minorUnits) }

    /// The Apple Pay JS amount string: exactly the currency's digits, `-` for negatives (`1250` USD → `"12.50"`,
    /// `1250` JPY → `"1250"`, `1250` KWD → `"1.250"`).
    public var amountString: String {
        let digits = currency.minorUnits
        let negative = minorUnits < 0
        let magnitude = minorUnits.magnitude
        guard digits > 0 else { return (negative ? "-" : "") + String(magnitude) }
        var divisor: UInt64 = 1
        for _ in 0..<digits { divisor *= 10 }
        let fraction = String(magnitude % divisor)
        let padded = String(repeating: "0", count: digits - fraction.count) + fraction
        return (negative ? "-" : "") + "\(magnitude / divisor).\(padded)"
    }

    /// `12.50 USD`.
    public var description: String { "\(amountString) \(currency.code)" }
}

// MARK: - Rounding arithmetic

extension Money {
    /// The amount of a decimal value rounded to whole minor units **half-up** (half away from zero: 0.125 USD is
    /// 13 cents, -0.125 is -13); `nil` when it does not fit in `Int64`.
    public init?(rounding amount: Decimal, currency: Currency) {
        guard let units = DecimalParts.scale(amount, byPowerOfTen: currency.minorUnits)?.value else { return nil }
        self.init(minorUnits: units, currency: currency)
    }

    /// This amount times a decimal factor (a tax rate, a percentage / 100), rounded half-up; `nil` on overflow.
    public func multiplied(by factor: Decimal) -> Money? {
        DecimalParts.multiply(minorUnits, by: factor).map { Money(minorUnits: $0, currency: currency) }
    }
}
