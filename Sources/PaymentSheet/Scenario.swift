import ApplePay
import Foundation
import Foundations

/// A payment-sheet scenario: the request (or the cart to check out on a merchant server), the wallet, the
/// store settings for the in-process merchant server and the user's actions. Read with `Scenario.load(from:)`,
/// which names the bad field of an invalid document. To pay an existing checkout on a merchant server, the wallet and actions are
/// enough: neither `paymentRequest` nor `checkout` is then needed.
///
/// ```json
/// {"description": "...", "initiative": "web",
///  "paymentRequest": {ApplePayPaymentRequest}, "checkout": {"items": [{"sku": "COFFEE-250", "quantity": 2}]},
///  "wallet": {"device": {...}, "cards": [{"network": "visa", "type": "debit", "issuingCountry": "US",
///             "devicePAN": "4761120010000492", "expirationDate": "291231", "billingContact": {...}}],
///             "contacts": [{ApplePayPaymentContact}]},
///  "merchant": {"lineItems": [...], "shippingZones": [...], "coupons": [...], "lateEvents": {...}},
///  "actions": [{"action": "selectShippingContact", "contact": 0}, {"action": "authorize"}]}
/// ```
public struct Scenario: Sendable {
    public var description: String?
    /// `web` (merchant validation first) or `inApp`; nil lets the runner choose.
    public var initiative: SessionInitiative?
    /// The request the sheet shows without `--merchant-url` (the in-process server prices it).
    public var paymentRequest: PaymentRequest?
    /// The cart to create a checkout with on a merchant server (`--merchant-url` without `--checkout`).
    public var checkout: ScenarioCheckout?
    public var wallet: Wallet
    public var merchant: ScenarioMerchantRules
    public var actions: [UserAction]
    /// The sheet's timeout per answer; 30 seconds unless the scenario says otherwise.
    public var timeout: Duration

    /// Reads and checks a scenario file.
    /// - Throws: `PaymentSheetError` `invalidScenario` whose `field` names the bad member (for example
    ///   `wallet.cards[0].devicePAN`) and whose message says what is wrong.
    public static func load(from url: URL) throws(PaymentSheetError) -> Scenario {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw PaymentSheetError(.invalidScenario, "cannot read \(url.path)", field: "")
        }
        return try parse(data)
    }

    /// Parses and checks a scenario document; see `load(from:)`.
    public static func parse(_ data: Data) throws(PaymentSheetError) -> Scenario {
        let document: ScenarioDocument
        guard (try? JSONSerialization.jsonObject(with: data)) is [String: Any] else {
            throw PaymentSheetError(.invalidScenario, "a scenario is a JSON object ({...})", field: "")
        }
        do {
            document = try JSONDecoder().decode(ScenarioDocument.self, from: data)
        } catch let error as PaymentSheetError {
            throw error
        } catch let error as DecodingError {
            throw Self.problem(from: error)
        } catch {
            throw PaymentSheetError(.invalidScenario, "the scenario could not be read", field: "")
        }
        return try document.checked()
    }

    static func problem(from error: DecodingError) -> PaymentSheetError {
        switch error {
        case .keyNotFound(let key, let context):
            return PaymentSheetError(
                .invalidScenario, "'\(key.stringValue)' is required here", field: path(context.codingPath + [key]))
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return PaymentSheetError(
                .invalidScenario, "wrong type: \(context.debugDescription)", field: path(context.codingPath))
        case .dataCorrupted(let context):
            return PaymentSheetError(.invalidScenario, context.debugDescription, field: path(context.codingPath))
        @unknown default:
            return PaymentSheetError(.invalidScenario, "the scenario could not be read", field: "")
        }
    }

    static func path(_ keys: [any CodingKey]) -> String { FieldPath.text(keys) }
}

/// `checkout`: the cart for `POST /v1/checkouts`.
public struct ScenarioCheckout: Sendable, Codable, Hashable {
    public var items: [ScenarioCartItem]
}

/// One cart line: `{"sku", "quantity"}`.
public struct ScenarioCartItem: Sendable, Codable, Hashable {
    public var sku: String
    public var quantity: Int

    public init(sku: String, quantity: Int) {
        self.sku = sku
        self.quantity = quantity
    }
}

/// The store a scenario is played against without `--merchant-url`: the merchant server's own API, in process,
/// with a store configuration made from these settings (the `applepay` tool's `InProcessMerchant`). Without them
/// (`"merchant": {}`) the store sells the request's line items (or its total) and ships anywhere for free.
public struct ScenarioMerchantRules: Sendable, Codable, Hashable {
    /// The goods, as summary items: each one a catalog product bought once (its label the product name). When
    /// absent, the request's line items (or its total) are the goods.
    public var lineItems: [PaymentSummaryItem]?
    /// Where the merchant ships, first match wins; absent means it ships anywhere, free and untaxed.
    public var shippingZones: [ScenarioShippingZone]?
    public var coupons: [ScenarioCoupon]?
    /// Seconds the merchant takes to answer an event, by Apple Pay JS event name (`shippingcontactselected`,
    /// `paymentauthorized`, ...). Time passes on the session's clock, so 45 s costs nothing in real time.
    public var lateEvents: [String: Int]?
}

/// A shipping zone: countries (ISO 3166-1 alpha-2), optionally only some administrative areas, its methods and
/// tax rate.
public struct ScenarioShippingZone: Sendable, Codable, Hashable {
    public var name: String?
    public var countries: [String]
    public var administrativeAreas: [String]?
    public var methods: [ShippingMethod]
    /// A decimal fraction as a string, for example `"0.0725"`.
    public var taxRate: String?

}

/// A coupon: a percentage or an amount off the goods, optionally a minimum, or expired.
public struct ScenarioCoupon: Sendable, Codable, Hashable {
    public var code: String
    public var label: String?
    /// For example `"10"` for 10% off.
    public var percentOff: String?
    /// For example `"5.00"`.
    public var amountOff: String?
    /// The goods must come to at least this much.
    public var minimumTotal: String?
    /// An expired coupon is answered with `couponCodeExpired`.
    public var expired: Bool?
}

// MARK: - The document

struct ScenarioDocument: Decodable {
    struct DeviceDocument: Decodable {
        var canMakePayments: Bool?
        var supportedNetworks: [PaymentNetwork]?
        var supportedCapabilities: [MerchantCapability]?
    }

    struct CardDocument: Decodable {
        var identifier: String?
        var network: PaymentNetwork
        var type: PaymentMethodType?
        var issuingCountry: String?
        var devicePAN: String
        var expirationDate: String
        var displayName: String?
        var cardholderName: String?
        var billingContact: Contact?
    }

    struct WalletDocument: Decodable {
        var device: DeviceDocument?
        var cards: [CardDocument]
        var contacts: [Contact]?
    }

    struct ActionDocument: Decodable {
        enum ContactReference: Decodable {
            case index(Int)
            case contact(Contact)

            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let index = try? container.decode(Int.self) {
                    self = .index(index)
                } else {
                    self = .contact(try container.decode(Contact.self))
                }
            }
        }

        var action: String
        var contact: ContactReference?
        var identifier: String?
        var card: String?
        var couponCode: String?
    }

    var description: String?
    var initiative: String?
    var timeoutSeconds: Int?
    var paymentRequest: PaymentRequest?
    var checkout: ScenarioCheckout?
    var wallet: WalletDocument
    var merchant: ScenarioMerchantRules?
    var actions: [ActionDocument]

    func invalid(_ field: String, _ message: String) -> PaymentSheetError {
        PaymentSheetError(.invalidScenario, message, field: field)
    }

    func checked() throws(PaymentSheetError) -> Scenario {
        // Neither a paymentRequest nor a checkout is needed to pay an existing checkout (`--checkout`); the runner
        // says which one a mode lacks.
        if let request = paymentRequest, let problem = request.validate().errors.first {
            throw invalid(
                "paymentRequest" + (problem.path.isEmpty ? "" : "." + problem.path),
                "\(problem.code): \(problem.message)")
        }
        if let checkout {
            if checkout.items.isEmpty {
                throw invalid("checkout.items", "the cart is empty; add {\"sku\", \"quantity\"} items")
            }
            for (index, item) in checkout.items.enumerated() where item.quantity < 1 {
                throw invalid("checkout.items[\(index)].quantity", "the quantity must be at least 1")
            }
        }
        var initiative: SessionInitiative?
        if let text = self.initiative {
            guard let value = SessionInitiative(rawValue: text) else {
                throw invalid("initiative", "'\(text)' is not an initiative; use web or inApp")
            }
            initiative = value
        }
        if let seconds = timeoutSeconds, seconds < 1 || seconds > 600 {
            throw invalid("timeoutSeconds", "the timeout must be 1 to 600 seconds")
        }

        // The wallet.
        var cards: [WalletCard] = []
        for (index, card) in wallet.cards.enumerated() {
            let path = "wallet.cards[\(index)]"
            if let type = card.type, ![.credit, .debit, .prepaid, .store].contains(type) {
                throw invalid("\(path).type", "'\(type)' is not a card type; use credit, debit, prepaid or store")
            }
            if !card.network.isKnown {
                throw invalid("\(path).network", "'\(card.network)' is not an Apple Pay network")
            }
            do {
                cards.append(
                    try WalletCard(
                        network: card.network, type: card.type ?? .debit, issuingCountry: card.issuingCountry ?? "US",
                        devicePAN: card.devicePAN, expirationDate: card.expirationDate, displayName: card.displayName,
                        cardholderName: card.cardholderName, billingContact: card.billingContact,
                        identifier: card.identifier))
            } catch {
                throw invalid(error.field.map { "\(path).\($0)" } ?? path, error.message)
            }
            if cards.dropLast().contains(where: { $0.identifier == cards.last?.identifier }) {
                throw invalid(
                    "\(path).identifier",
                    "two cards are named '\(cards.last?.identifier ?? "")'; give one an identifier")
            }
        }
        if cards.isEmpty { throw invalid("wallet.cards", "the wallet holds no card; add one") }
        var device = Device()
        if let document = wallet.device {
            device.canMakePayments = document.canMakePayments ?? true
            if let networks = document.supportedNetworks { device.supportedNetworks = Set(networks) }
            if let capabilities = document.supportedCapabilities { device.supportedCapabilities = Set(capabilities) }
        }
        let contacts = wallet.contacts ?? []

        // The merchant's rules.
        let rules = merchant ?? ScenarioMerchantRules()
        for (index, item) in (rules.lineItems ?? []).enumerated() where item.decimalAmount == nil {
            throw invalid(
                "merchant.lineItems[\(index)].amount", "the amount must be a decimal string such as \"12.50\"")
        }
        for (zoneIndex, zone) in (rules.shippingZones ?? []).enumerated() {
            let path = "merchant.shippingZones[\(zoneIndex)]"
            if zone.countries.isEmpty { throw invalid("\(path).countries", "list at least one country code") }
            for (index, country) in zone.countries.enumerated() where !Country.isKnown(country) {
                throw invalid("\(path).countries[\(index)]", "'\(country)' is not an ISO 3166-1 alpha-2 code")
            }
            for (index, method) in zone.methods.enumerated() where (method.decimalAmount ?? -1) < 0 {
                throw invalid("\(path).methods[\(index)].amount", "the amount must be a decimal string, zero or more")
            }
            if let rate = zone.taxRate, (try? Currency.parseDecimal(rate)) == nil {
                throw invalid("\(path).taxRate", "the tax rate must be a decimal string such as \"0.0725\"")
            }
        }
        for (index, coupon) in (rules.coupons ?? []).enumerated() {
            let path = "merchant.coupons[\(index)]"
            if coupon.code.isEmpty { throw invalid("\(path).code", "the coupon code is empty") }
            for (name, value) in [
                ("percentOff", coupon.percentOff), ("amountOff", coupon.amountOff),
                ("minimumTotal", coupon.minimumTotal),
            ] {
                if let value, (try? Currency.parseDecimal(value)).map({ $0 >= 0 }) != true {
                    throw invalid("\(path).\(name)", "must be a decimal string, zero or more, such as \"10\"")
                }
            }
        }
        let events: Set<String> = [
            "validatemerchant", "paymentmethodselected", "shippingcontactselected", "shippingmethodselected",
            "couponcodechanged", "paymentauthorized",
        ]
        for (event, seconds) in rules.lateEvents ?? [:] {
            guard events.contains(event) else {
                throw invalid("merchant.lateEvents.\(event)", "'\(event)' is not an event the merchant answers")
            }
            if seconds < 0 || seconds > 3600 { throw invalid("merchant.lateEvents.\(event)", "give 0 to 3600 seconds") }
        }

        // The actions.
        var actions: [UserAction] = []
        for (index, action) in self.actions.enumerated() {
            let path = "actions[\(index)]"
            switch action.action {
            case "selectShippingContact":
                switch action.contact {
                case .index(let contactIndex):
                    guard contacts.indices.contains(contactIndex) else {
                        throw invalid(
                            "\(path).contact", "the wallet has no contact \(contactIndex) (it has \(contacts.count))")
                    }
                    actions.append(.selectShippingContact(contacts[contactIndex]))
                case .contact(let contact):
                    actions.append(.selectShippingContact(contact))
                case nil:
                    throw invalid(
                        "\(path).contact", "give a contact: an index into wallet.contacts, or a contact object")
                }
            case "selectShippingMethod":
                guard let identifier = action.identifier else {
                    throw invalid("\(path).identifier", "give the shipping method's identifier")
                }
                actions.append(.selectShippingMethod(identifier: identifier))
            case "selectCard":
                guard let card = action.card else {
                    throw invalid("\(path).card", "give the card's identifier or display name")
                }
                guard cards.contains(where: { $0.identifier == card }) else {
                    throw invalid("\(path).card", "the wallet holds no card '\(card)'")
                }
                actions.append(.selectCard(identifier: card))
            case "enterCouponCode":
                guard let code = action.couponCode else { throw invalid("\(path).couponCode", "give the coupon code") }
                actions.append(.enterCouponCode(code))
            case "authorize": actions.append(.authorize)
            case "cancel": actions.append(.cancel)
            default:
                throw invalid(
                    "\(path).action",
                    "'\(action.action)' is not an action; use selectShippingContact, selectShippingMethod, selectCard, "
                        + "enterCouponCode, authorize or cancel")
            }
        }
        return Scenario(
            description: description, initiative: initiative, paymentRequest: paymentRequest, checkout: checkout,
            wallet: Wallet(device: device, cards: cards, contacts: contacts), merchant: rules, actions: actions,
            timeout: .seconds(timeoutSeconds ?? 30))
    }
}
