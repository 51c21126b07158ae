import ApplePay
import Foundation
import Foundations
import Testing

@Suite("ISO 4217 table and exact amounts")
struct CurrencyTests {
    @Test("the table has every active currency, each with a valid code, numeric code and exponent")
    func tableShape() {
        let all = Currency.all
        #expect(all.count == 167)
        #expect(Set(all.map(\.code)).count == all.count)
        #expect(Set(all.map(\.numericCode)).count == all.count)
        for currency in all {
            #expect(currency.code.count == 3 && currency.code.allSatisfy { $0.isASCII && $0.isUppercase })
            #expect(currency.numericCode.count == 3 && currency.numericCode.allSatisfy { $0.isASCII && $0.isNumber })
            #expect([0, 2, 3, 4].contains(currency.minorUnits))
        }
        for withdrawn in ["HRK", "ZWL", "ANG", "XAU", "XXX", "XTS"] { #expect(Currency(code: withdrawn) == nil) }
    }

    @Test(
        "alphabetic and numeric codes look up the same currency",
        arguments: [
            ("USD", "840", 2), ("EUR", "978", 2), ("JPY", "392", 0), ("BHD", "048", 3), ("KWD", "414", 3),
            ("GBP", "826", 2), ("CLF", "990", 4), ("KRW", "410", 0), ("TND", "788", 3), ("XCG", "532", 2),
            ("ZWG", "924", 2), ("CHF", "756", 2), ("ISK", "352", 0), ("XOF", "952", 0),
        ])
    func lookups(code: String, numeric: String, minorUnits: Int) throws {
        let currency = try #require(Currency(code: code))
        #expect(currency.numericCode == numeric)
        #expect(currency.minorUnits == minorUnits)
        #expect(Currency(numericCode: numeric) == currency)
    }

    @Test("lookups refuse what is not a code", arguments: ["usd", "US", "USDD", "", "ABC", " USD"])
    func unknownCodes(text: String) {
        #expect(Currency(code: text) == nil)
        #expect(!Currency.isKnown(text))
    }

    @Test("numeric codes: leading zeros optional, anything else refused")
    func numericCodes() {
        #expect(Currency(numericCode: "48")?.code == "BHD")
        #expect(Currency(numericCode: "048")?.code == "BHD")
        for bad in ["", "0840", "84a", "-840", "999", "８４０"] { #expect(Currency(numericCode: bad) == nil) }
    }

    @Test(
        "minor units: exact both ways for 0, 2 and 3 decimal currencies",
        arguments: [
            ("JPY", "500", Int64(500)), ("JPY", "0", 0), ("JPY", "-1200", -1200),
            ("USD", "12.34", 1234), ("USD", "0.01", 1), ("USD", "1.5", 150), ("USD", "-3.50", -350),
            ("USD", "92233720368547758.07", Int64.max),
            ("BHD", "1.234", 1234), ("BHD", "0.001", 1), ("KWD", "10.5", 10500), ("KWD", "-0.125", -125),
            ("CLF", "1.2345", 12345),
        ])
    func minorUnits(code: String, text: String, units: Int64) throws {
        let currency = try #require(Currency(code: code))
        let amount = try Currency.parseDecimal(text)
        #expect(try currency.minorUnits(of: amount) == units)
        #expect(currency.amount(fromMinorUnits: units) == amount)
    }

    @Test(
        "minor units: more decimals than the currency allows is refused, never rounded",
        arguments: [
            ("JPY", "1.5"), ("JPY", "0.1"), ("USD", "12.345"), ("USD", "0.001"), ("BHD", "1.2345"),
            ("KWD", "0.0001"),
        ])
    func tooManyDecimals(code: String, text: String) throws {
        let currency = try #require(Currency(code: code))
        let amount = try Currency.parseDecimal(text)
        #expect(throws: AmountError(.tooManyDecimals, "")) { try currency.minorUnits(of: amount) }
        #expect(throws: AmountError(.tooManyDecimals, "")) { try currency.parseAmount(text) }
    }

    @Test("minor units: an amount beyond Int64 is an overflow error")
    func overflow() throws {
        let usd = try #require(Currency(code: "USD"))
        #expect(throws: AmountError(.overflow, "")) {
            try usd.minorUnits(of: Currency.parseDecimal("92233720368547758.08"))
        }
        #expect(throws: AmountError(.overflow, "")) {
            try usd.minorUnits(of: Currency.parseDecimal("-92233720368547758.09"))
        }
        #expect(try usd.minorUnits(of: Currency.parseDecimal("-92233720368547758.08")) == Int64.min)
        #expect(usd.amount(fromMinorUnits: Int64.min) == (try Currency.parseDecimal("-92233720368547758.08")))
    }

    @Test(
        "parseAmount accepts Apple's decimal strings",
        arguments: [
            ("0", "0"), ("1", "1"), ("1.5", "1.5"), ("12.34", "12.34"), ("-3.50", "-3.5"), ("007.10", "7.1"),
            ("-0.00", "0"),
        ])
    func parsesDecimals(text: String, expected: String) throws {
        let usd = try #require(Currency(code: "USD"))
        #expect(try usd.parseAmount(text) == Decimal(string: expected, locale: Locale(identifier: "en_US_POSIX")))
    }

    @Test(
        "parseAmount refuses exponents, signs, spaces, commas and non-ASCII digits",
        arguments: [
            "", "-", ".", "1.", ".5", "+1", "1e2", "1E2", "1,00", "1 000", " 1", "1 ", "0x10", "NaN",
            "Infinity", "١٢", "12.3.4", "--1", "1-", "ten",
        ])
    func refusesNonDecimals(text: String) throws {
        let usd = try #require(Currency(code: "USD"))
        #expect(throws: AmountError(.notADecimal, "")) { try usd.parseAmount(text) }
    }

    @Test("parseAmount counts decimals in the text: 1.500 is three decimals for USD")
    func countsWrittenDecimals() throws {
        let usd = try #require(Currency(code: "USD"))
        #expect(throws: AmountError(.tooManyDecimals, "")) { try usd.parseAmount("1.500") }
        #expect(try Currency(code: "BHD")?.parseAmount("1.500") == Decimal(string: "1.5"))
        #expect(throws: AmountError(.tooManyDecimals, "")) { try Currency(code: "JPY")?.parseAmount("100.0") }
    }

    @Test("more than 38 significant digits is refused rather than rounded")
    func tooManyDigits() {
        #expect(throws: AmountError(.overflow, "")) { try Currency.parseDecimal(String(repeating: "9", count: 39)) }
        #expect((try? Currency.parseDecimal("000" + String(repeating: "9", count: 38))) != nil)
    }

    @Test("formatAmount pads to the currency's decimals")
    func formatting() throws {
        let usd = try #require(Currency(code: "USD"))
        #expect(try PaymentSummaryItem(label: "x", amount: "12.34").minorUnits(in: usd) == 1234)
        #expect(try PaymentSummaryItem(label: "x", amount: nil, type: .pending).minorUnits(in: usd) == nil)
        #expect(throws: AmountError(.tooManyDecimals, "")) {
            try PaymentSummaryItem(label: "x", amount: "1.234").minorUnits(in: usd)
        }
        #expect(usd.format(Decimal(string: "12.5")!) == "12.50")
        #expect(usd.format(Decimal(7)) == "7.00")
        #expect(try #require(Currency(code: "JPY")).format(Decimal(7)) == "7")
        #expect(try #require(Currency(code: "KWD")).format(Decimal(string: "1.2")!) == "1.200")
        #expect(PaymentSummaryItem(label: "x", amount: Decimal(string: "0.1")!, currency: usd).amount == "0.10")
    }

    @Test("a currency encodes as its code and refuses unknown codes when decoded")
    func coding() throws {
        let data = try JSONEncoder().encode([Currency(code: "EUR")])
        #expect(String(decoding: data, as: UTF8.self) == "[\"EUR\"]")
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Currency].self, from: Data("[\"EUX\"]".utf8)) }
    }
}

@Suite("ISO 3166-1 table")
struct CountryTests {
    @Test("the table has all 249 officially assigned alpha-2 codes")
    func table() {
        let all = Country.all
        #expect(all.count == 249)
        #expect(Set(all.map(\.code)).count == 249)
        #expect(all.allSatisfy { $0.code.count == 2 && $0.alpha3.count == 3 && $0.numericCode.count == 3 })
    }

    @Test(
        "known and unknown codes",
        arguments: [
            ("US", true), ("GB", true), ("AX", true), ("SS", true), ("XK", false),
            ("UK", false), ("us", false), ("XX", false), ("", false), ("USA", false),
        ])
    func known(code: String, expected: Bool) {
        #expect(Country.isKnown(code) == expected)
        #expect((Country(code: code) != nil) == expected)
    }

    @Test("a country carries its alpha-3 and numeric codes")
    func details() throws {
        let germany = try #require(Country(code: "DE"))
        #expect(germany.alpha3 == "DEU")
        #expect(germany.numericCode == "276")
    }
}
