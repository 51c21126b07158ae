import Foundation
import Foundations

/// The comparisons a shipping zone's rules make (``ShippingZone/covers(_:)``): letters compared without case, an
/// area with the blanks around it trimmed, a postal code without its spaces. Printable ASCII, which covers every
/// country code and nearly every area and postal code, is compared byte by byte without allocating; anything else
/// goes through `uppercased()` and Foundation's trimming, which give the same answers for ASCII.
enum ZoneMatching {
    /// Whether `text` and `rule` are the same letters, case aside (`"gb"` and `"GB"`).
    static func same(_ text: String, _ rule: String) -> Bool {
        if let answer = asciiSame(Substring(text), rule) { return answer }
        return text.uppercased() == rule.uppercased()
    }

    /// Whether `area`, the blanks around it trimmed, is `rule` case aside.
    static func sameArea(_ area: String, _ rule: String) -> Bool {
        if let trimmed = asciiTrimmed(area), let answer = asciiSame(trimmed, rule) { return answer }
        return area.trimmingCharacters(in: .whitespaces).uppercased() == rule.uppercased()
    }

    /// Whether `postalCode` starts with `prefix`, both without their spaces, case aside (`"sw1a 1aa"` and `"SW1"`).
    static func postalCode(_ postalCode: String, hasPrefix prefix: String) -> Bool {
        if isPrintableASCII(postalCode.utf8), isPrintableASCII(prefix.utf8) {
            var code = postalCode.utf8.lazy.filter { $0 != space }.makeIterator()
            for byte in prefix.utf8 where byte != space {
                guard let next = code.next(), ASCII.uppercased(next) == ASCII.uppercased(byte) else { return false }
            }
            return true
        }
        return postalCode.uppercased().filter { $0 != " " }.hasPrefix(prefix.uppercased().filter { $0 != " " })
    }

    private static let space = UInt8(ascii: " ")

    /// `nil` unless both are printable ASCII.
    private static func asciiSame(_ text: Substring, _ rule: String) -> Bool? {
        guard isPrintableASCII(text.utf8), isPrintableASCII(rule.utf8) else { return nil }
        return ASCII.equalIgnoringCase(text.utf8, rule.utf8)
    }

    /// The text without the spaces and tabs around it, or `nil` unless it is ASCII with no other control character
    /// (so that `CharacterSet.whitespaces`, Unicode's spaces and the tab, would trim exactly these).
    private static func asciiTrimmed(_ text: String) -> Substring? {
        let blank: (UInt8) -> Bool = { $0 == space || $0 == UInt8(ascii: "\t") }
        guard text.utf8.allSatisfy({ blank($0) || (0x20...0x7E).contains($0) }) else { return nil }
        let bytes = text.utf8
        guard let first = bytes.firstIndex(where: { !blank($0) }), let last = bytes.lastIndex(where: { !blank($0) })
        else { return Substring() }
        return text[first...last]
    }

    private static func isPrintableASCII(_ bytes: some Sequence<UInt8>) -> Bool {
        bytes.allSatisfy { (0x20...0x7E).contains($0) }
    }
}
