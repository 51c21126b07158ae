/// Byte-level ASCII for the protocol text the program reads (header names, URLs, hex, country codes): no Unicode
/// rules, no allocation.
public enum ASCII {
    /// The value of a hex digit of either case, or `nil`.
    @inlinable
    public static func hexDigitValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// `byte` with `a`–`z` made `A`–`Z`.
    @inlinable
    public static func uppercased(_ byte: UInt8) -> UInt8 { (0x61...0x7A).contains(byte) ? byte - 0x20 : byte }

    /// Whether two texts are the same bytes but for ASCII case.
    @inlinable
    public static func equalIgnoringCase(_ lhs: some Sequence<UInt8>, _ rhs: some Sequence<UInt8>) -> Bool {
        var left = lhs.makeIterator()
        var right = rhs.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return true
            case (let a?, let b?): if a != b, uppercased(a) != uppercased(b) { return false }
            default: return false
            }
        }
    }
}
