import ApplePay
import Foundation
import Foundations
import Sandbox

/// A card in the simulated Wallet.
///
/// `description`, `dump` and debuggers show the display name (for example "Visa 0492") and non-secret fields only;
/// the device PAN is never printed.
public struct WalletCard: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// How scripts and transcripts name the card; defaults to `displayName`.
    public var identifier: String
    public var network: PaymentNetwork
    /// credit, debit, prepaid or store.
    public var type: PaymentMethodType
    /// ISO 3166-1 alpha-2 code of the issuing country, matched against the request's `supportedCountries`.
    public var issuingCountry: String
    /// The device account number placed in the token. Secret: never logged or written to a transcript.
    public var devicePAN: String
    /// `applicationExpirationDate`: YYMMDD.
    public var expirationDate: String
    /// What the sheet and the merchant see, for example "Visa 0492".
    public var displayName: String
    public var cardholderName: String?
    /// The card's billing contact, given to the merchant (only the requested fields) on authorization.
    public var billingContact: Contact?

    /// - Throws: `PaymentSheetError.Code.invalidCard` when the PAN is not 12–19 digits passing the Luhn check, the
    ///   expiration is not YYMMDD, or the issuing country is not an ISO 3166-1 code; its `field` names which
    ///   (`devicePAN`, `expirationDate` or `issuingCountry`).
    public init(
        network: PaymentNetwork, type: PaymentMethodType = .debit, issuingCountry: String = "US", devicePAN: String,
        expirationDate: String, displayName: String? = nil, cardholderName: String? = nil,
        billingContact: Contact? = nil, identifier: String? = nil
    ) throws(PaymentSheetError) {
        guard SandboxCard.isValidDevicePAN(devicePAN) else {
            throw PaymentSheetError(
                .invalidCard, "the device PAN must be 12 to 19 digits and pass the Luhn check", field: "devicePAN")
        }
        guard SandboxCard.isValidExpirationDate(expirationDate) else {
            throw PaymentSheetError(
                .invalidCard, "the expiration date must be YYMMDD, for example 291231", field: "expirationDate")
        }
        guard Country.isKnown(issuingCountry) else {
            throw PaymentSheetError(
                .invalidCard, "issuing country '\(issuingCountry.prefix(8))' is not an ISO 3166-1 alpha-2 code",
                field: "issuingCountry")
        }
        self.network = network
        self.type = type
        self.issuingCountry = issuingCountry
        self.devicePAN = devicePAN
        self.expirationDate = expirationDate
        let name = displayName ?? "\(Self.networkDisplayName(network)) \(devicePAN.suffix(4))"
        self.displayName = name
        self.cardholderName = cardholderName
        self.billingContact = billingContact
        self.identifier = identifier ?? name
    }

    /// The last four digits of the device PAN: all a transcript may show of it.
    public var lastFour: String { String(devicePAN.suffix(4)) }

    public var description: String { "WalletCard(\(displayName))" }

    /// What `dump` and debuggers see: everything but the device PAN and its expiration date.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "identifier": identifier, "displayName": displayName, "network": network, "type": type,
                "issuingCountry": issuingCountry, "lastFour": lastFour,
            ])
    }

    /// The card as the merchant sees it before authorization: display name, network and type, no number.
    public var paymentMethod: PaymentMethod { PaymentMethod(displayName: displayName, network: network, type: type) }

    static func networkDisplayName(_ network: PaymentNetwork) -> String {
        let names: [PaymentNetwork: String] = [
            .visa: "Visa", .masterCard: "Mastercard", .amex: "Amex", .discover: "Discover", .jcb: "JCB",
            .chinaUnionPay: "UnionPay", .interac: "Interac", .maestro: "Maestro", .cartesBancaires: "CB",
        ]
        if let name = names[network] { return name }
        return network.rawValue.prefix(1).uppercased() + network.rawValue.dropFirst()
    }
}

/// The device the sheet runs on: whether it can pay at all, and which networks and capabilities it supports.
public struct Device: Sendable, Hashable {
    /// False for a device without Apple Pay (no secure element, region not supported, restricted by a profile).
    public var canMakePayments: Bool
    /// The networks the device supports.
    public var supportedNetworks: Set<PaymentNetwork>
    /// The capabilities the device supports (3-D Secure, EMV, ...).
    public var supportedCapabilities: Set<MerchantCapability>

    public init(
        canMakePayments: Bool = true, supportedNetworks: Set<PaymentNetwork> = Set(PaymentNetwork.known),
        supportedCapabilities: Set<MerchantCapability> = Set(MerchantCapability.known)
    ) {
        self.canMakePayments = canMakePayments
        self.supportedNetworks = supportedNetworks
        self.supportedCapabilities = supportedCapabilities
    }
}

/// The simulated Wallet: a device, the cards in it and the saved shipping contacts.
public struct Wallet: Sendable, Hashable {
    public var device: Device
    /// The cards, the default first.
    public var cards: [WalletCard]
    /// Saved contacts the user can ship to, the default first.
    public var contacts: [Contact]

    public init(device: Device = Device(), cards: [WalletCard] = [], contacts: [Contact] = []) {
        self.device = device
        self.cards = cards
        self.contacts = contacts
    }

    /// `canMakePayments()`: whether the device supports Apple Pay at all, whatever cards it holds.
    public func canMakePayments() -> Bool { device.canMakePayments }

    /// `canMakePayments(usingNetworks:capabilities:)`: whether some card in the wallet can pay on one of the
    /// networks with the capabilities.
    ///
    /// Apple's rules: the network must be in the list and supported by the device; `supportsCredit` and
    /// `supportsDebit` filter card types (credit cards need `supportsCredit`, debit and prepaid cards need
    /// `supportsDebit`; neither means every type; store cards are not filtered by them); the device must support
    /// one of the requested cryptogram kinds (`supports3DS`, or `supportsEMV`); and when `supportedCountries` is
    /// given and not empty, the card's issuing country must be in it.
    public func canMakePayments(
        usingNetworks networks: [PaymentNetwork], capabilities: MerchantCapabilities,
        supportedCountries: [String]? = nil
    ) -> Bool {
        !eligibleCards(networks: networks, capabilities: capabilities, supportedCountries: supportedCountries).isEmpty
    }

    /// The cards that can pay for `request`, in wallet order.
    public func eligibleCards(for request: PaymentRequest) -> [WalletCard] {
        eligibleCards(
            networks: request.supportedNetworks, capabilities: request.merchantCapabilities,
            supportedCountries: request.supportedCountries)
    }

    /// The cards that can pay on the networks with the capabilities; see `canMakePayments(usingNetworks:...)`.
    public func eligibleCards(
        networks: [PaymentNetwork], capabilities: MerchantCapabilities, supportedCountries: [String]? = nil
    ) -> [WalletCard] {
        guard device.canMakePayments else { return [] }
        let cryptograms: [MerchantCapability] = [.supports3DS, .supportsEMV]
        guard cryptograms.contains(where: { capabilities.contains($0) && device.supportedCapabilities.contains($0) })
        else { return [] }
        let countries = Set(supportedCountries ?? [])
        return cards.filter { card in
            guard networks.contains(card.network), device.supportedNetworks.contains(card.network) else { return false }
            if !countries.isEmpty && !countries.contains(card.issuingCountry) { return false }
            return Self.typeAllowed(card.type, by: capabilities)
        }
    }

    /// Whether `supportsCredit` / `supportsDebit` allow a card type (neither: every type).
    static func typeAllowed(_ type: PaymentMethodType, by capabilities: MerchantCapabilities) -> Bool {
        let credit = capabilities.contains(.supportsCredit)
        let debit = capabilities.contains(.supportsDebit)
        if !credit && !debit { return true }
        switch type {
        case .credit: return credit
        case .debit, .prepaid: return debit
        default: return true
        }
    }
}
