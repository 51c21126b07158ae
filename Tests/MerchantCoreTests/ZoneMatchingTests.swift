import Foundation
import Testing

@testable import MerchantCore

/// The zone rules' comparisons give the answers of the plain expressions they replace (`uppercased()`, Foundation's
/// trimming, spaces filtered out), for ASCII and for text that takes the slow path.
@Suite("Zone matching")
struct ZoneMatchingTests {
    static let texts = [
        "", " ", "\t", "gb", "GB", "Gb", "gB ", " GB", "g b", "ca", "CA", " ca\t", "\tCA ", "ny", "sw1a 1aa", "SW1",
        "sw1", "SW 1", "SW1A1AA", "ec", "EC1", "e", "straße", "STRASSE", "strasse", "Île-de-France", "ÎLE-DE-FRANCE",
        "île-de-france", "\u{00A0}CA\u{00A0}", "CA\u{00A0}", "ß", "SS", "i", "İ", "\r\n", "A\r\n", "A\r", "ＣＡ", "ca\n",
        "~", "{", "[", "@", "`",
    ]

    @Test func sameLettersAsUppercased() {
        for text in Self.texts {
            for rule in Self.texts {
                #expect(ZoneMatching.same(text, rule) == (text.uppercased() == rule.uppercased()), "\(text) \(rule)")
            }
        }
    }

    @Test func sameAreaAsTrimmedAndUppercased() {
        for area in Self.texts {
            for rule in Self.texts {
                let plain = area.trimmingCharacters(in: .whitespaces).uppercased() == rule.uppercased()
                #expect(ZoneMatching.sameArea(area, rule) == plain, "\(area) \(rule)")
            }
        }
    }

    @Test func postalPrefixAsFilteredHasPrefix() {
        for code in Self.texts {
            for prefix in Self.texts {
                let plain = code.uppercased().filter { $0 != " " }.hasPrefix(prefix.uppercased().filter { $0 != " " })
                #expect(ZoneMatching.postalCode(code, hasPrefix: prefix) == plain, "\(code) \(prefix)")
            }
        }
    }
}
