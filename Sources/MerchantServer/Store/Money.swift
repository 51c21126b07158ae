import ApplePay
import Foundation

/// Money arithmetic for the store: amounts are `Int64` minor units of one currency, converted from and to
/// `Decimal` at the edges. Never `Double`.
///
/// Rounding rule (used for percentage discounts and tax): **half-up**, i.e. half away from zero
/// (`NSDecimalNumber.RoundingMode.plain`): 0.5 minor units become 1, −0.5 become −1.
public enum Money {
    /// Number of minor-unit digits of an ISO 4217 currency (ApplePay's table): 0 for JPY, 2 for USD, 3 for KWD.
    /// An unknown code counts as 2 (configuration validation refuses unknown codes before this matters).
    public static func minorUnitDigits(of currencyCode: String) -> Int {
        Currency(code: currencyCode.uppercased())?.minorUnits ?? 2
    }

    /// Converts a decimal amount to minor units, failing when it has more fractional digits than the currency
    /// allows (for example `1.005` USD) or does not fit in `Int64`.
    public static func minorUnits(exactly amount: Decimal, currencyCode: String) -> Int64? {
        let scaled = amount * power(of: minorUnitDigits(of: currencyCode))
        guard rounded(scaled) == scaled else { return nil }
        return int64(scaled)
    }

    /// Converts a decimal amount to minor units, rounding half-up (away from zero) when it has more digits.
    public static func minorUnits(rounding amount: Decimal, currencyCode: String) -> Int64? {
        int64(rounded(amount * power(of: minorUnitDigits(of: currencyCode))))
    }

    /// The decimal value of an amount in minor units (`1250` USD → `12.5`).
    public static func decimal(minorUnits: Int64, currencyCode: String) -> Decimal {
        Decimal(minorUnits) / power(of: minorUnitDigits(of: currencyCode))
    }

    /// The Apple Pay JS amount string: exactly the currency's digits, `-` for negatives (`1250` USD → `"12.50"`,
    /// `1250` JPY → `"1250"`, `1250` KWD → `"1.250"`).
    public static func string(minorUnits: Int64, currencyCode: String) -> String {
        let digits = minorUnitDigits(of: currencyCode)
        let negative = minorUnits < 0
        let magnitude = minorUnits.magnitude
        guard digits > 0 else { return (negative ? "-" : "") + String(magnitude) }
        var divisor: UInt64 = 1
        for _ in 0..<digits { divisor *= 10 }
        let whole = magnitude / divisor
        var fraction = String(magnitude % divisor)
        fraction = String(repeating: "0", count: digits - fraction.count) + fraction
        return (negative ? "-" : "") + "\(whole).\(fraction)"
    }

    /// Multiplies minor units by a decimal factor (a tax rate, a percentage / 100) and rounds half-up.
    public static func multiply(_ minorUnits: Int64, by factor: Decimal) -> Int64? {
        int64(rounded(Decimal(minorUnits) * factor))
    }

    /// Parses a decimal string such as `"19.99"` or `"-2"`: surrounding spaces and one leading `+` are allowed,
    /// the rest must be ApplePay's amount grammar `-?[0-9]+(\.[0-9]+)?` as a whole (``Currency/parseDecimal(_:)``);
    /// `nil` otherwise (`"1.2.3"`, `"-"`, `"1,5"`).
    public static func parseDecimal(_ text: String) -> Decimal? {
        var trimmed = Substring(text.trimmingCharacters(in: .whitespaces))
        if trimmed.first == "+" {
            trimmed = trimmed.dropFirst()
            if trimmed.first == "-" { return nil }
        }
        return try? Currency.parseDecimal(String(trimmed))
    }

    static func power(of digits: Int) -> Decimal {
        var result = Decimal(1)
        for _ in 0..<max(digits, 0) { result *= 10 }
        return result
    }

    static func rounded(_ value: Decimal) -> Decimal {
        var input = value
        var output = Decimal()
        NSDecimalRound(&output, &input, 0, .plain)
        return output
    }

    static func int64(_ integral: Decimal) -> Int64? {
        guard integral.isFinite, !integral.isNaN else { return nil }
        let text = "\(integral)"
        return Int64(text)
    }
}
