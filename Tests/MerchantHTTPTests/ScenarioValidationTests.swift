import ApplePay
import Foundation
import Foundations
import HTTPCore
import Logging
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantSandbox
import MerchantStore
import MerchantTestSupport
import PaymentSheet
import PaymentToken
import TestSupport
import Testing

/// Plays every `scenarios/*.json` through the checkout API in process (`MerchantAPI.respond(to:)`, the demo store,
/// an in-memory SQLite store) and checks that every payment request and every update the server answers, decoded
/// as the ApplePay type a page would read, passes `validate()` with no error-severity problem. Updates are checked
/// as the sheet sees them: folded into the request it shows (`request.applying(update).validate()`).
@Suite("Scenarios through the checkout API follow Apple's rules")
struct ScenarioValidationTests {
    static let scenarioFiles: [String] =
        ((try? FileManager.default.contentsOfDirectory(atPath: Repository.scenarios.path)) ?? [])
        .filter { $0.hasSuffix(".json") }.sorted()

    @Test("the scenarios folder has scenarios to play")
    func scenariosExist() {
        #expect(Self.scenarioFiles.count >= 5, "\(Self.scenarioFiles)")
    }

    @Test(
        "every request and update the server emits for a scenario passes ApplePay's validate()",
        arguments: scenarioFiles)
    func play(_ file: String) async throws {
        let scenario = try Scenario.load(from: Repository.scenarios.appendingPathComponent(file))
        let configuration = StoreConfiguration.demo
        // Scenarios written for the in-process merchant have no cart: buy the first product, still play the rest.
        let firstProduct = try #require(configuration.products.first)
        let cart = scenario.checkout?.items ?? [ScenarioCartItem(sku: firstProduct.sku, quantity: 1)]
        var sheet = try await SheetPlayer.start(file: file, configuration: configuration, cart: cart)

        // The sheet opens with the wallet's first contact and card, as PaymentSession does.
        if let contact = scenario.wallet.contacts.first { try await sheet.selectShippingContact(contact) }
        if let card = scenario.wallet.cards.first { try await sheet.selectCard(card) }

        var couponCodes = Set(scenario.merchant.coupons?.map(\.code) ?? [])
        for action in scenario.actions {
            switch action {
            case .selectShippingContact(let contact): try await sheet.selectShippingContact(contact)
            case .selectShippingMethod(let identifier): try await sheet.selectShippingMethod(identifier)
            case .selectCard(let identifier):
                let card = try #require(scenario.wallet.cards.first { $0.identifier == identifier })
                try await sheet.selectCard(card)
            case .enterCouponCode(let code):
                couponCodes.insert(code)
                try await sheet.enterCouponCode(code)
            case .authorize, .cancel: break
            }
        }

        // Then every contact, every method offered for it, every coupon (and none) and every card.
        for contact in scenario.wallet.contacts {
            try await sheet.selectShippingContact(contact)
            for method in sheet.request.shippingMethods ?? [] {
                try await sheet.selectShippingMethod(method.identifier)
            }
        }
        for code in couponCodes.sorted() + [""] { try await sheet.enterCouponCode(code) }
        for card in scenario.wallet.cards { try await sheet.selectCard(card) }
        try await sheet.refetch()
        #expect(sheet.checked >= 4, "\(file): only \(sheet.checked) answers were checked")
    }
}

/// The sheet's side of one checkout: posts its events to the API and validates each answer against the request
/// it currently shows.
private struct SheetPlayer {
    let file: String
    let api: MerchantAPI
    let checkoutID: String
    /// Its client secret, sent as `Checkout-Secret` with every checkout route.
    let checkoutSecret: String
    /// The request as the sheet shows it: the server's request with every update so far applied.
    var request: PaymentRequest
    /// How many requests and updates were validated.
    var checked = 0

    private struct Created: Decodable {
        var id: String
        /// Only in the creation answer.
        var clientSecret: String?
        var paymentRequest: PaymentRequest
    }

    static func start(file: String, configuration: StoreConfiguration, cart: [ScenarioCartItem]) async throws
        -> SheetPlayer
    {
        let api = MerchantAPI(
            services: MerchantServices(
                configuration: configuration, store: try SQLiteOrderStore(path: ":memory:"),
                processor: SandboxProcessor(), tokenOpener: NoPayments(),
                validator: MerchantValidator(
                    merchantIdentifier: configuration.merchantIdentifier, displayName: configuration.storeName,
                    domain: nil, gatewayBaseURL: "https://apple-pay-gateway.apple.com", identity: nil),
                logger: .silent))
        struct Body: Encodable { var items: [ScenarioCartItem] }
        let created = try await send(api, .post, "/v1/checkouts", Body(items: cart), expecting: 201, file: file)
        let answer = try JSONDecoder().decode(Created.self, from: created.body)
        var player = SheetPlayer(
            file: file, api: api, checkoutID: answer.id, checkoutSecret: try #require(answer.clientSecret),
            request: answer.paymentRequest)
        player.check(answer.paymentRequest, "POST /v1/checkouts")
        return player
    }

    mutating func selectShippingContact(_ contact: Contact) async throws {
        let redacted = ContactRedaction.redacted(contact)
        try await post("shipping-contact", redacted, as: ShippingContactUpdate.self)
    }

    mutating func selectShippingMethod(_ identifier: String) async throws {
        struct Body: Encodable { var identifier: String }
        // A method the current address's zone does not offer is refused (400 unknownShippingMethod): no update.
        let offered = request.shippingMethods?.contains { $0.identifier == identifier } ?? false
        try await post(
            "shipping-method", Body(identifier: identifier), as: ShippingMethodUpdate.self,
            allowingRefusal: !offered)
    }

    mutating func selectCard(_ card: WalletCard) async throws {
        try await post("payment-method", card.paymentMethod, as: PaymentMethodUpdate.self)
    }

    mutating func enterCouponCode(_ code: String) async throws {
        struct Body: Encodable { var couponCode: String }
        try await post("coupon", Body(couponCode: code), as: CouponCodeUpdate.self)
    }

    /// `GET /v1/checkouts/{id}`: the request of the checkout as it now stands.
    mutating func refetch() async throws {
        let response = try await Self.send(
            api, .get, "/v1/checkouts/\(checkoutID)", String?.none, secret: checkoutSecret, expecting: 200, file: file)
        check(try JSONDecoder().decode(Created.self, from: response.body).paymentRequest, "GET /v1/checkouts/{id}")
    }

    private mutating func post<Update: PaymentRequestUpdate & Decodable>(
        _ route: String, _ body: some Encodable, as type: Update.Type, allowingRefusal: Bool = false
    ) async throws {
        let path = "/v1/checkouts/\(checkoutID)/\(route)"
        let response = try await Self.send(
            api, .post, path, body, secret: checkoutSecret, expecting: allowingRefusal ? nil : 200, file: file)
        guard response.status == 200 else { return }
        let update = try JSONDecoder().decode(Update.self, from: response.body)
        request = request.applying(update)
        check(request, "POST \(route)")
    }

    private mutating func check(_ request: PaymentRequest, _ what: String) {
        checked += 1
        let errors = request.validate().errors
        #expect(errors.isEmpty, "\(file), \(what): \(errors)")
    }

    private static func send(
        _ api: MerchantAPI, _ method: HTTPMethod, _ path: String, _ body: (some Encodable)?, secret: String? = nil,
        expecting status: Int?, file: String
    ) async throws -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        if let secret { headers.add(name: "Checkout-Secret", value: secret) }
        let data = try body.map { try JSONEncoder().encode($0) } ?? Data()
        let response = await api.respond(
            to: HTTPRequest(method: method, path: path, headers: headers, body: data))
        if let status {
            #expect(
                response.status == status,
                "\(file): \(method.rawValue) \(path) answered \(response.status) \(String(decoding: response.body, as: UTF8.self))"
            )
        }
        return response
    }
}

/// No payment is made while playing scenarios: the token opener refuses everything.
private struct NoPayments: PaymentTokenOpening {
    func open(_ token: Data, expecting expectations: PaymentTokenExpectations) throws(PaymentTokenError)
        -> OpenedPaymentToken
    {
        throw PaymentTokenError(.malformedToken, "no payments in the scenario validation test")
    }
}
