import ApplePay
import Foundation
import MerchantCore
import Testing

/// Apple's `CardMetadata` as the merchant reads it, from a token's `merchantTokenMetadata` and from an event
/// (merchant-tokens.md §4): Apple's names, Apple's lengths, nothing else.
@Suite("Apple's CardMetadata: fpanSuffix, cardCountry, descriptions, within Apple's limits")
struct CardMetadataTests {
    static let apple = Data(
        #"""
        {"cardArt": [{"name": "Bank card", "type": "background", "url": "https://bank.example/art.png"}],
         "cardMetadata": {"fpanSuffix": "8431", "expirationDate": "12/29", "cardCountry": "us",
                          "shortDescription": "Visa Debit", "longDescription": "Example Bank Visa Debit card"}}
        """#.utf8)

    @Test("a token's merchantTokenMetadata: the card's own last four digits and the other fields")
    func tokenMetadata() throws {
        let info = MerchantTokenInfo(identifier: "DNITHE1", metadata: try JSONValue(parsing: Self.apple))
        #expect(info.card.fpanSuffix == "8431" && info.card.expirationDate == "12/29" && info.card.cardCountry == "US")
        #expect(
            info.card.shortDescription == "Visa Debit" && info.card.longDescription == "Example Bank Visa Debit card")
        #expect(info.cardArtURL == "https://bank.example/art.png")
        let token = NetworkToken(
            primaryAccountNumber: "4761120010000492", expirationDate: "291231",
            authentication: .threeDSecure(cryptogram: Data([1]), eciIndicator: nil), network: "Visa",
            merchantToken: info)
        #expect(PlanPaymentMethod(token: token).cardSuffix == "8431", "never the MPAN's 0492")
    }

    @Test("an event's cardMetadata decodes the same way")
    func eventMetadata() throws {
        let event = try JSONDecoder().decode(
            MerchantTokenEvent.Metadata.self, from: Self.apple)
        #expect(
            event.cardMetadata
                == CardMetadata(
                    fpanSuffix: "8431", expirationDate: "12/29", cardCountry: "US", shortDescription: "Visa Debit",
                    longDescription: "Example Bank Visa Debit card"))
    }

    @Test(
        "values beyond Apple's limits, of another type, or under the old name are dropped",
        arguments: [
            #"{"fpanSuffix": "12345"}"#, #"{"fpanSuffix": "12a4"}"#, #"{"fpanSuffix": 1234}"#, #"{"suffix": "1234"}"#,
            #"{"cardCountry": "USA"}"#, #"{"cardCountry": "U1"}"#, #"{"expirationDate": "2029-12-31"}"#,
            "{\"shortDescription\": \"\(String(repeating: "x", count: 65))\"}",
            "{\"longDescription\": \"\(String(repeating: "x", count: 129))\"}",
        ])
    func limits(json: String) throws {
        #expect(try JSONDecoder().decode(CardMetadata.self, from: Data(json.utf8)) == CardMetadata())
        #expect(CardMetadata(json: try JSONValue(parsing: Data(json.utf8))) == CardMetadata())
    }

    @Test(
        "a device token (no merchant token) shows its PAN's last four digits; a merchant token without fpanSuffix none")
    func withoutMetadata() {
        func token(_ info: MerchantTokenInfo?) -> NetworkToken {
            NetworkToken(
                primaryAccountNumber: "4761120010000492", expirationDate: "291231",
                authentication: .threeDSecure(cryptogram: Data([1]), eciIndicator: nil), network: "Visa",
                merchantToken: info)
        }
        #expect(PlanPaymentMethod(token: token(nil)).cardSuffix == "0492")
        #expect(PlanPaymentMethod(token: token(MerchantTokenInfo(identifier: "DNITHE1"))).cardSuffix == nil)
    }
}
