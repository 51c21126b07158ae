import Foundation
import Testing

@testable import ApplePay

@Suite("Money's integer arithmetic on decimals agrees with Decimal's own")
struct DecimalPartsTests {
    /// The reference: `Decimal`'s multiplication and `.plain` rounding, read back through its text.
    static func reference(_ value: Decimal, timesPowerOfTen shift: Int) -> (value: Int64, isExact: Bool)? {
        var scaled = value
        var power = Decimal(sign: .plus, exponent: shift, significand: 1)
        var product = Decimal()
        guard NSDecimalMultiply(&product, &scaled, &power, .plain) == .noError else { return nil }
        var rounded = Decimal()
        NSDecimalRound(&rounded, &product, 0, .plain)
        guard let whole = Int64(rounded.description) else { return nil }
        return (whole, rounded == product)
    }

    /// Decimals of the sizes a price, a rate or a hostile input has: 1 to 38 digits, exponents from -30 to 20,
    /// both signs, and exact halves.
    static func samples(_ count: Int) -> [Decimal] {
        var generator = SystemRandomNumberGenerator()
        var values: [Decimal] = [0, 1, -1, 0.5, -0.5, 0.125, -0.125, 0.005, 12.345, 9.995, 0.0725]
        values += [Decimal(Int64.max), Decimal(Int64.min), Decimal(UInt64.max), Decimal(string: "1e-30")!]
        values += [Decimal(string: "92233720368547758.07")!, Decimal(string: "-92233720368547758.085")!]
        for _ in 0..<count {
            let length = Int.random(in: 1...38, using: &generator)
            let digits = (0..<length).map { _ in String(Int.random(in: 0...9, using: &generator)) }.joined()
            let sign = Bool.random(using: &generator) ? "-" : ""
            values.append(Decimal(string: "\(sign)\(digits)e\(Int.random(in: -30...20, using: &generator))")!)
            values.append(Decimal(string: "\(sign)\(digits.prefix(6))5e-\(Int.random(in: 1...4, using: &generator))")!)
        }
        return values
    }

    @Test("scaling to minor units: 20,000 decimals times 10^0 to 10^3, the value and whether it was exact")
    func scaling() {
        var mismatches: [String] = []
        for value in Self.samples(10_000) {
            for shift in 0...3 {
                // Parts exist for 64-bit significands only; Money then falls back to Decimal's arithmetic.
                guard let parts = DecimalParts.of(value) else { continue }
                let scaled = parts.rounded(timesPowerOfTen: shift)
                let expected = Self.reference(value, timesPowerOfTen: shift)
                if scaled?.value != expected?.value || scaled?.isExact != expected?.isExact {
                    mismatches.append(
                        "\(value) × 10^\(shift): \(String(describing: scaled)) against \(String(describing: expected))")
                }
            }
            for currency in [Currency(code: "JPY")!, .usDollar, Currency(code: "BHD")!] {
                let money = Money(rounding: value, currency: currency)
                if money?.minorUnits != Self.reference(value, timesPowerOfTen: currency.minorUnits)?.value {
                    mismatches.append("Money(rounding: \(value), \(currency.code)): \(String(describing: money))")
                }
            }
            if mismatches.count > 5 { break }
        }
        #expect(mismatches.isEmpty)
    }

    @Test("multiplying minor units by a rate: as Decimal(units) × rate, rounded")
    func multiplication() {
        var generator = SystemRandomNumberGenerator()
        var mismatches: [String] = []
        for rate in Self.samples(5_000) {
            let units = Int64.random(in: -10_000_000...10_000_000, using: &generator)
            let product = Money(minorUnits: units, currency: .usDollar).multiplied(by: rate)?.minorUnits
            let expected = Self.reference(Decimal(units) * rate, timesPowerOfTen: 0)?.value
            if product != expected {
                mismatches.append(
                    "\(units) × \(rate): \(String(describing: product)) against \(String(describing: expected))")
            }
            if mismatches.count > 5 { break }
        }
        #expect(mismatches.isEmpty)
        #expect(
            Money(minorUnits: 1_000, currency: .usDollar).multiplied(by: Decimal(string: "0.0725")!)?.minorUnits == 73)
        #expect(
            Money(minorUnits: -1_000, currency: .usDollar).multiplied(by: Decimal(string: "0.0725")!)?.minorUnits == -73
        )
        #expect(Money(minorUnits: .max, currency: .usDollar).multiplied(by: 2) == nil)
    }

    @Test("exact minor units: too many decimals and overflow are refused as before")
    func exactness() throws {
        let usd = Currency.usDollar
        #expect(try usd.minorUnits(of: Decimal(string: "12.34")!) == 1234)
        #expect(throws: AmountError.self) { try usd.minorUnits(of: Decimal(string: "12.345")!) }
        #expect(throws: AmountError.self) { try usd.minorUnits(of: Decimal(string: "1e20")!) }
        for value in Self.samples(2_000) {
            let expected = Self.reference(value, timesPowerOfTen: 2)
            let units = try? usd.minorUnits(of: value)
            #expect(units == (expected?.isExact == true ? expected?.value : nil), "\(value)")
        }
    }
}
