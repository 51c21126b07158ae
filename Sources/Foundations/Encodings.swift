import Foundation

/// Bytes in lowercase hex, written directly: `String(format: "%02x")` per byte is a Foundation formatter call each,
/// and this runs for every payment (the root fingerprint, the Wallet order token).
public func lowercaseHex(_ bytes: some Sequence<UInt8>) -> String {
    let digits: StaticString = "0123456789abcdef"
    var out: [UInt8] = []
    out.reserveCapacity(bytes.underestimatedCount * 2)
    digits.withUTF8Buffer { digits in
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
    }
    return String(decoding: out, as: UTF8.self)
}

/// Bytes of a hexadecimal text (either case), or nil when it is not an even number of hex digits.
public func bytes(fromHex text: String) -> Data? {
    let utf8 = Array(text.utf8)
    guard utf8.count % 2 == 0 else { return nil }
    var out = Data(capacity: utf8.count / 2)
    var index = 0
    while index < utf8.count {
        guard let high = ASCII.hexDigitValue(utf8[index]), let low = ASCII.hexDigitValue(utf8[index + 1]) else {
            return nil
        }
        out.append(high << 4 | low)
        index += 2
    }
    return out
}

/// Base64 with the URL and file-name alphabet and no padding (RFC 4648 §5), as JWTs and Apple's push tokens use it.
public enum Base64URL {
    /// The unpadded base64url text of `data`.
    public static func encode(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of base64url text, padded or not; `nil` when it is not base64url.
    public static func decode(_ text: some StringProtocol) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}

/// Compares two strings in time that depends only on their lengths, not on where they differ; an empty expected
/// value never matches.
public func constantTimeEqual(_ given: String, _ expected: String) -> Bool {
    let x = Array(given.utf8)
    let y = Array(expected.utf8)
    var difference = UInt8(x.count == y.count ? 0 : 1)
    let count = max(x.count, y.count)
    for index in 0..<count {
        let p = index < x.count ? x[index] : 0
        let q = index < y.count ? y[index] : 0
        difference |= p ^ q
    }
    return difference == 0 && !y.isEmpty
}

extension Date {
    /// Milliseconds since 1970, rounded to the nearest: how the stores keep times.
    public var unixMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }

    /// The time `milliseconds` after 1970.
    public init(unixMilliseconds milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

/// 24 lowercase hex digits that sort by time: `milliseconds` since 1970 in 11 digits (until the year 2527), then 52
/// random bits. Identifiers (checkouts, orders, payments, ...) are made of it, so that the rows a busy server inserts
/// one after the other land on the last pages of each index instead of on a random page each: fewer pages written
/// and synced per commit, and fewer read. The time it tells is the row's creation, which the row holds anyway; an
/// identifier is not a secret (secrets are ``randomHex(bytes:)`` alone).
public func timeOrderedHex(milliseconds: Int64) -> String {
    // 44 bits of time and 52 of chance: 96 bits, twelve bytes, written big-endian so that the hex sorts as the time.
    let time = UInt64(clamping: max(0, milliseconds)) & 0xFFF_FFFF_FFFF
    var generator = SystemRandom()
    let random = generator.next() & 0xF_FFFF_FFFF_FFFF
    let high = (time << 20 | random >> 32).bigEndian
    let low = UInt32(truncatingIfNeeded: random).bigEndian
    return withUnsafeBytes(of: high) { high in withUnsafeBytes(of: low) { low in lowercaseHex(Array(high) + low) } }
}
