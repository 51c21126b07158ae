import Foundation
import Synchronization

/// A decimal as a 64-bit significand and a power of ten (`-12.345` is 12345, negative, exponent -3), for the
/// integer arithmetic that money needs: scaling to minor units and multiplying by a rate, rounded half away from
/// zero (`NSDecimalRound`'s `.plain`) with the same results as `Decimal`'s own arithmetic.
///
/// Reading a `Decimal`'s digits costs about 14,000 instructions (its text is the only public way to them), so the
/// parts of each distinct value are kept once read: a store's prices and rates are a few values used on every
/// checkout.
struct DecimalParts: Sendable {
    var significand: UInt64
    var isNegative: Bool
    var exponent: Int

    /// The parts of `value`; `nil` for NaN or a significand wider than 64 bits.
    static func of(_ value: Decimal) -> DecimalParts? {
        guard !value.isNaN else { return nil }
        guard let key = Key(value) else { return read(value) }
        if let known = cache.withLock({ $0[key] }) { return known }
        let parts = read(value)
        cache.withLock { entries in
            // Bounded: amounts read from requests must not grow it; past the bound a value is read every time.
            if entries.count < cacheLimit { entries[key] = parts }
        }
        return parts
    }

    /// `value` times 10^`shift`, rounded to a whole number half away from zero, and whether that was exact; the
    /// value `nil` when it does not fit in `Int64`, and `nil` altogether for NaN or a product `Decimal` cannot hold.
    /// The one place money is scaled: integer arithmetic for a 64-bit significand, `Decimal`'s own otherwise.
    static func scale(_ value: Decimal, byPowerOfTen shift: Int) -> (value: Int64?, isExact: Bool)? {
        if let parts = of(value) {
            // A 64-bit significand that overflows was scaled up, not rounded: exact.
            return parts.rounded(timesPowerOfTen: shift).map { ($0.value, $0.isExact) } ?? (nil, true)
        }
        guard value.isFinite, !value.isNaN else { return nil }
        var scaled = value
        var power = Decimal(sign: .plus, exponent: shift, significand: 1)
        var product = Decimal()
        guard NSDecimalMultiply(&product, &scaled, &power, .plain) == .noError else { return nil }
        var rounded = Decimal()
        NSDecimalRound(&rounded, &product, 0, .plain)
        // Decimal's description is plain digits with no exponent; Int64(_:) refuses anything out of range.
        return (Int64(rounded.description), rounded == product)
    }

    /// `units` times `factor`, rounded half away from zero; `nil` when it does not fit in `Int64`.
    static func multiply(_ units: Int64, by factor: Decimal) -> Int64? {
        if let parts = of(factor), let product = parts.multiplying(units) { return product }
        // A factor wider than 64 bits, or a product that is: Decimal's own arithmetic says what fits.
        return scale(Decimal(units) * factor, byPowerOfTen: 0)?.value
    }

    /// This value times 10^`shift`, rounded half away from zero, and whether the rounding was exact; `nil` when it
    /// does not fit in `Int64`.
    func rounded(timesPowerOfTen shift: Int) -> (value: Int64, isExact: Bool)? {
        Self.rounded(magnitude: significand, negative: isNegative, exponent: exponent + shift)
    }

    /// `units` times this value, rounded half away from zero; `nil` when it does not fit in `Int64`.
    func multiplying(_ units: Int64) -> Int64? {
        let (high, low) = units.magnitude.multipliedFullWidth(by: significand)
        guard high == 0 else { return nil }
        return Self.rounded(magnitude: low, negative: (units < 0) != isNegative && low != 0, exponent: exponent)?.value
    }

    private static func rounded(magnitude: UInt64, negative: Bool, exponent: Int) -> (value: Int64, isExact: Bool)? {
        var whole = magnitude
        var isExact = true
        if exponent >= 0 {
            for _ in 0..<exponent where whole != 0 {
                let (product, overflow) = whole.multipliedReportingOverflow(by: 10)
                guard !overflow else { return nil }
                whole = product
            }
        } else if -exponent > 19 {
            // 10^20 is more than twice any 64-bit significand: the value rounds to zero.
            whole = 0
            isExact = magnitude == 0
        } else {
            var divisor: UInt64 = 1
            for _ in 0..<(-exponent) { divisor *= 10 }
            let remainder = magnitude % divisor
            whole = magnitude / divisor
            isExact = remainder == 0
            if remainder >= divisor - remainder { whole += 1 }
        }
        guard whole <= UInt64(Int64.max) + (negative ? 1 : 0) else { return nil }
        return (negative ? Int64(truncatingIfNeeded: 0 &- whole) : Int64(whole), isExact)
    }

    /// Reads the digits of `value`'s text, which is plain digits with an optional `-` and `.` (no exponent).
    private static func read(_ value: Decimal) -> DecimalParts? {
        var significand: UInt64 = 0
        var exponent = 0
        var isNegative = false
        var afterPoint = false
        for byte in value.description.utf8 {
            switch byte {
            case UInt8(ascii: "-"): isNegative = true
            case UInt8(ascii: "."): afterPoint = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                let (shifted, overflow) = significand.multipliedReportingOverflow(by: 10)
                let (sum, carry) = shifted.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
                guard !overflow, !carry else { return nil }
                significand = sum
                if afterPoint { exponent -= 1 }
            default: return nil
            }
        }
        return DecimalParts(significand: significand, isNegative: isNegative && significand != 0, exponent: exponent)
    }

    /// A decimal's bytes: equal bytes are an equal value (an equal value in other bytes is only a second entry).
    private struct Key: Hashable {
        var low: UInt64
        var high: UInt64
        var tail: UInt32

        init?(_ value: Decimal) {
            guard MemoryLayout<Decimal>.size == 20 else { return nil }
            var parts = (UInt64(0), UInt64(0), UInt32(0))
            withUnsafeBytes(of: value) { source in
                withUnsafeMutableBytes(of: &parts) { target in
                    target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source.prefix(20)))
                }
            }
            (low, high, tail) = parts
        }
    }

    private static let cacheLimit = 1024
    private static let cache = Mutex<[Key: DecimalParts?]>([:])
}
