import ApplePay
import Foundation
import Foundations
import PaymentSheet
import Testing

@Suite("Wallet: canMakePayments")
struct WalletTests {
    @Test("canMakePayments() follows the device only")
    func deviceOnly() throws {
        #expect(Wallet(cards: []).canMakePayments())
        #expect(!Wallet(device: Device(canMakePayments: false), cards: [try Fixture.visa()]).canMakePayments())
        #expect(
            !Wallet(device: Device(canMakePayments: false), cards: [try Fixture.visa()])
                .canMakePayments(usingNetworks: [.visa], capabilities: [.supports3DS]))
    }

    @Test("networks: the card's network must be requested and supported by the device")
    func networks() throws {
        let wallet = Wallet(cards: [try Fixture.visa()])
        #expect(wallet.canMakePayments(usingNetworks: [.visa], capabilities: [.supports3DS]))
        #expect(!wallet.canMakePayments(usingNetworks: [.amex, .masterCard], capabilities: [.supports3DS]))
        let noVisa = Wallet(device: Device(supportedNetworks: [.masterCard]), cards: [try Fixture.visa()])
        #expect(!noVisa.canMakePayments(usingNetworks: [.visa], capabilities: [.supports3DS]))
    }

    @Test("supportsCredit / supportsDebit filter card types; neither means every type")
    func cardTypes() throws {
        let debit = Wallet(cards: [try Fixture.visa(type: .debit)])
        let credit = Wallet(cards: [try Fixture.visa(type: .credit)])
        let prepaid = Wallet(cards: [try Fixture.visa(type: .prepaid)])
        #expect(debit.canMakePayments(usingNetworks: [.visa], capabilities: [.supports3DS]))
        #expect(credit.canMakePayments(usingNetworks: [.visa], capabilities: [.supports3DS]))
        #expect(!debit.canMakePayments(usingNetworks: [.visa], capabilities: [.supports3DS, .supportsCredit]))
        #expect(credit.canMakePayments(usingNetworks: [.visa], capabilities: [.supports3DS, .supportsCredit]))
        #expect(debit.canMakePayments(usingNetworks: [.visa], capabilities: [.supports3DS, .supportsDebit]))
        #expect(!credit.canMakePayments(usingNetworks: [.visa], capabilities: [.supports3DS, .supportsDebit]))
        #expect(prepaid.canMakePayments(usingNetworks: [.visa], capabilities: [.supports3DS, .supportsDebit]))
        #expect(!prepaid.canMakePayments(usingNetworks: [.visa], capabilities: [.supports3DS, .supportsCredit]))
        #expect(
            credit.canMakePayments(
                usingNetworks: [.visa], capabilities: [.supports3DS, .supportsCredit, .supportsDebit]))
    }

    @Test("supportedCountries filters by issuing country")
    func countries() throws {
        let wallet = Wallet(cards: [try Fixture.visa(country: "US"), try Fixture.masterCard()])  // GB Mastercard
        #expect(
            wallet.canMakePayments(
                usingNetworks: [.visa, .masterCard], capabilities: [.supports3DS], supportedCountries: ["GB"]))
        #expect(
            !wallet.canMakePayments(
                usingNetworks: [.visa], capabilities: [.supports3DS], supportedCountries: ["GB", "FR"]))
        #expect(wallet.canMakePayments(usingNetworks: [.visa], capabilities: [.supports3DS], supportedCountries: []))
        var request = Fixture.request()
        request.supportedCountries = ["GB"]
        #expect(wallet.eligibleCards(for: request).map(\.displayName) == ["Mastercard 1471"])
    }

    @Test("the device must support a requested cryptogram kind")
    func capabilities() throws {
        let wallet = Wallet(device: Device(supportedCapabilities: [.supportsEMV]), cards: [try Fixture.visa()])
        #expect(!wallet.canMakePayments(usingNetworks: [.visa], capabilities: [.supports3DS]))
        #expect(wallet.canMakePayments(usingNetworks: [.visa], capabilities: [.supports3DS, .supportsEMV]))
    }

    @Test("cards: Luhn, expiry and country are checked; description never shows the PAN")
    func cards() throws {
        #expect(throws: PaymentSheetError(.invalidCard, "")) {
            try WalletCard(network: .visa, devicePAN: "4761120010000493", expirationDate: "291231")
        }
        #expect(throws: PaymentSheetError(.invalidCard, "")) {
            try WalletCard(network: .visa, devicePAN: "4761120010000492", expirationDate: "291331")
        }
        #expect(throws: PaymentSheetError(.invalidCard, "")) {
            try WalletCard(
                network: .visa, issuingCountry: "XX", devicePAN: "4761120010000492", expirationDate: "291231")
        }
        // The failing parameter is a field of the error, never something to find in the message.
        func field(_ make: () throws(PaymentSheetError) -> WalletCard) -> String? {
            do { _ = try make() } catch { return error.field }
            return nil
        }
        #expect(
            field { () throws(PaymentSheetError) in
                try WalletCard(network: .visa, devicePAN: "4761120010000493", expirationDate: "291231")
            } == "devicePAN")
        #expect(
            field { () throws(PaymentSheetError) in
                try WalletCard(network: .visa, devicePAN: "4761120010000492", expirationDate: "291331")
            } == "expirationDate")
        #expect(
            field { () throws(PaymentSheetError) in
                try WalletCard(
                    network: .visa, issuingCountry: "XX", devicePAN: "4761120010000492", expirationDate: "291231")
            } == "issuingCountry")
        let card = try Fixture.visa()
        #expect(card.displayName == "Visa 0492")
        #expect(card.lastFour == "0492")
        #expect(!String(describing: card).contains("4761120010000492"))
        #expect(card.paymentMethod == PaymentMethod(displayName: "Visa 0492", network: .visa, type: .debit))
    }

    @Test("dump, debug descriptions and enclosing values never show the PAN or the token")
    func noSecretsInReflection() async throws {
        let card = try Fixture.visa()
        let wallet = Wallet(cards: [card])
        let request = TokenIssueRequest(
            card: card, amount: 1, currencyCode: "USD", applicationData: nil, now: Date())
        let sandbox = try await SharedSandbox.get()
        let issued = try SandboxTokenIssuer(sandbox: sandbox).issueToken(request)
        let data = try #require(issued.token["paymentData"]?["data"]?.stringValue)
        for value in [card, wallet, request, issued] as [Any] {
            var dumped = ""
            dump(value, to: &dumped)
            for text in [dumped, String(reflecting: value), "\([value])"] {
                #expect(!text.contains("4761120010000492"), "\(text)")
                #expect(!text.contains(data.prefix(20)), "\(text)")
            }
        }
    }
}
