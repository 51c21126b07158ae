import ApplePay
import Foundation
import Testing

@Suite("Money")
struct MoneyTests {
    private static func currency(_ code: String) -> Currency { Currency(code: code)! }

    @Test(
        "amount strings have exactly the currency's decimals",
        arguments: [
            (1250 as Int64, "USD", "12.50"), (-5, "USD", "-0.05"), (0, "USD", "0.00"), (1250, "JPY", "1250"),
            (1250, "KWD", "1.250"), (-1, "BHD", "-0.001"), (Int64.max, "USD", "92233720368547758.07"),
        ])
    func amountStrings(minor: Int64, currency: String, text: String) {
        #expect(Money(minorUnits: minor, currency: Self.currency(currency)).amountString == text)
    }

    @Test("decimal ↔ minor units: exact conversion refuses extra decimals; rounding is half-up")
    func conversions() throws {
        let usd = Self.currency("USD")
        #expect(try Money(exactly: try #require(Decimal(string: "12.34")), currency: usd).minorUnits == 1234)
        #expect((try? Money(exactly: try #require(Decimal(string: "12.345")), currency: usd)) == nil)
        #expect(try Money(exactly: 500, currency: Self.currency("JPY")).minorUnits == 500)
        #expect(Money(rounding: try #require(Decimal(string: "0.125")), currency: usd)?.minorUnits == 13)
        #expect(Money(rounding: try #require(Decimal(string: "0.135")), currency: usd)?.minorUnits == 14)
        #expect(Money(rounding: try #require(Decimal(string: "-0.125")), currency: usd)?.minorUnits == -13)
        #expect(Money(rounding: try #require(Decimal(string: "1e30")), currency: usd) == nil)
        #expect(
            Money(minorUnits: 25, currency: usd).multiplied(by: try #require(Decimal(string: "0.1")))?.minorUnits == 3)
        #expect(Money(minorUnits: 1234, currency: Self.currency("KWD")).decimal == Decimal(string: "1.234"))
        #expect((try? Money(parsing: "1,5", currency: usd)) == nil)
        #expect((try? Money(parsing: "0x10", currency: usd)) == nil)
        #expect(try Money(parsing: "19.99", currency: usd).minorUnits == 1999)
        #expect(Money(minorUnits: 1999, currency: usd).description == "19.99 USD")
    }
}
