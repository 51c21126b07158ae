import Foundation
import Foundations

/// An ISO 4217 currency: its alphabetic code, numeric code and minor-unit exponent.
///
/// Amounts in Apple Pay are base-10 decimals (`Decimal`) or integers in minor units; never floating point.
/// Conversions between the two are exact: an amount with more decimals than the currency has is refused.
public struct Currency: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The alphabetic code, for example `USD`.
    public let code: String
    /// The numeric code as three digits, for example `840`; payment tokens carry this one.
    public let numericCode: String
    /// The minor-unit exponent: 2 for USD (cents), 0 for JPY, 3 for BHD and KWD.
    public let minorUnits: Int
    /// The currency's English name from ISO 4217.
    public let name: String

    /// The currency with this alphabetic code (upper case, as ISO 4217 and Apple write it), or nil.
    public init?(code: String) {
        guard let index = Currency.byCode[code] else { return nil }
        self.init(row: index)
    }

    /// The currency with this numeric code (`"840"`; leading zeros may be left out: `"8"` is ALL's `"008"`), or nil.
    public init?(numericCode: String) {
        guard !numericCode.isEmpty, numericCode.count <= 3, numericCode.allSatisfy({ $0.isASCII && $0.isNumber }),
            let index = Currency.byNumeric[String(repeating: "0", count: 3 - numericCode.count) + numericCode]
        else { return nil }
        self.init(row: index)
    }

    private init(row index: Int) {
        let row = Currency.table[index]
        code = row.code
        numericCode = row.numeric
        minorUnits = row.minorUnits
        name = row.name
    }

    /// Every currency in the table, sorted by alphabetic code.
    public static var all: [Currency] { table.indices.map { Currency(row: $0) } }

    /// Whether the alphabetic code names a currency in the table.
    public static func isKnown(_ code: String) -> Bool { byCode[code] != nil }

    public var description: String { code }

    // Decoded from and encoded as the alphabetic code alone.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let currency = Currency(code: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "'\(text)' is not an ISO 4217 currency code")
        }
        self = currency
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(code)
    }

    private static let byCode: [String: Int] = Dictionary(
        uniqueKeysWithValues: table.enumerated().map { ($0.element.code, $0.offset) })
    private static let byNumeric: [String: Int] = Dictionary(
        table.enumerated().map { ($0.element.numeric, $0.offset) }, uniquingKeysWith: { first, _ in first })
}

// MARK: - Exact conversions

extension Currency {
    /// The amount in minor units: `12.34` USD is `1234`, `500` JPY is `500`, `1.234` BHD is `1234`.
    /// - Throws: `AmountError.tooManyDecimals` when the amount has more decimals than the currency allows,
    ///   `AmountError.overflow` when the result does not fit in `Int64`, `AmountError.notADecimal` for NaN.
    public func minorUnits(of amount: Decimal) throws(AmountError) -> Int64 {
        guard !amount.isNaN else { throw AmountError(.notADecimal, "the amount is not a number") }
        guard let (units, isExact) = DecimalParts.scale(amount, byPowerOfTen: minorUnits) else {
            throw AmountError(.overflow, "\(amount) \(code) does not fit in 64-bit minor units")
        }
        guard isExact else {
            throw AmountError(.tooManyDecimals, "\(amount) has more decimals than \(code) allows (\(minorUnits))")
        }
        guard let units else { throw AmountError(.overflow, "\(amount) \(code) does not fit in 64-bit minor units") }
        return units
    }

    /// The amount that `units` minor units make: `1234` USD is `12.34`. Always exact.
    public func amount(fromMinorUnits units: Int64) -> Decimal {
        Decimal(sign: units < 0 ? .minus : .plus, exponent: -minorUnits, significand: Decimal(units.magnitude))
    }

    /// Parses one of Apple's decimal amount strings and checks it has at most this currency's decimals.
    ///
    /// The grammar is `-?[0-9]+(\.[0-9]+)?` in ASCII digits: no exponent, no `+`, no spaces, no grouping
    /// separators, no locale (a comma is never a decimal separator).
    /// - Throws: `AmountError.notADecimal`, `.tooManyDecimals` (counted in the text: `"1.500"` is three
    ///   decimals), or `.overflow` for more digits than `Decimal` holds exactly.
    public func parseAmount(_ text: String) throws(AmountError) -> Decimal {
        let value = try Currency.parseDecimal(text)
        let decimals = text.firstIndex(of: ".").map { text.distance(from: $0, to: text.endIndex) - 1 } ?? 0
        guard decimals <= minorUnits else {
            throw AmountError(
                .tooManyDecimals,
                "'\(text)' has \(decimals) decimals; \(code) allows \(minorUnits)")
        }
        return value
    }

    /// Parses a decimal amount string (`-?[0-9]+(\.[0-9]+)?`) without any currency's limit on decimals.
    /// - Throws: `AmountError.notADecimal` or `.overflow` (more than 38 significant digits).
    public static func parseDecimal(_ text: String) throws(AmountError) -> Decimal {
        var digits = Substring(text)
        let negative = digits.first == "-"
        if negative { digits = digits.dropFirst() }
        let parts = digits.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let isDigits = { (part: Substring) in !part.isEmpty && part.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        guard let whole = parts.first, isDigits(whole), parts.count == 1 || isDigits(parts[1]) else {
            throw AmountError(
                .notADecimal,
                "'\(text.prefix(40))' is not a decimal amount: write digits with an optional '-' and '.', "
                    + "as in \"12.34\"")
        }
        let significant = (whole + (parts.count == 2 ? parts[1] : "")).drop { $0 == "0" }
        guard significant.count <= 38 else {
            throw AmountError(.overflow, "'\(text.prefix(40))...' has more digits than an amount can hold exactly")
        }
        var significand = Decimal(0)
        for byte in (whole + (parts.count == 2 ? parts[1] : "")).utf8 {
            significand = significand * 10 + Decimal(Int(byte - 0x30))
        }
        let exponent = parts.count == 2 ? -parts[1].count : 0
        return Decimal(
            sign: negative && significand != 0 ? .minus : .plus, exponent: exponent, significand: significand)
    }
}

/// The domain of ``AmountError``: its codes are ``ErrorCode`` of it.
public enum AmountErrorDomain {}

/// Why an amount could not be parsed or converted. Equality is on the code.
public typealias AmountError = CodedFailure<AmountErrorDomain>

/// The stable codes of ``AmountError``.
extension ErrorCode<AmountError> {
    /// The text is not a plain decimal number.
    public static var notADecimal: Self { Self("notADecimal") }
    /// The amount has more decimals than the currency's minor units.
    public static var tooManyDecimals: Self { Self("tooManyDecimals") }
    /// The amount is too large for 64-bit minor units or for `Decimal`'s 38 digits.
    public static var overflow: Self { Self("overflow") }
}

extension Currency {
    /// US dollar (`USD`, 840, two decimals).
    // USD is a row of the built-in ISO 4217 table (CurrencyTable.swift), so this lookup cannot fail.
    public static var usDollar: Currency { Currency(code: "USD")! }
}
