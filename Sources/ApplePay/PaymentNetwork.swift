/// A payment network, by its Apple Pay JS name (`supportedNetworks`, `ApplePayPaymentMethod.network`).
///
/// Unknown names decode and are kept, so a newer network never breaks decoding; `validate()` reports them.
public struct PaymentNetwork: OpenStringEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let amex: PaymentNetwork = "amex"
    public static let bancomat: PaymentNetwork = "bancomat"
    public static let bancontact: PaymentNetwork = "bancontact"
    public static let bankAxept: PaymentNetwork = "bankAxept"
    public static let barcode: PaymentNetwork = "barcode"
    public static let cartesBancaires: PaymentNetwork = "cartesBancaires"
    public static let chinaUnionPay: PaymentNetwork = "chinaUnionPay"
    public static let conecs: PaymentNetwork = "conecs"
    public static let dankort: PaymentNetwork = "dankort"
    public static let discover: PaymentNetwork = "discover"
    public static let eftpos: PaymentNetwork = "eftpos"
    public static let electron: PaymentNetwork = "electron"
    public static let elo: PaymentNetwork = "elo"
    public static let girocard: PaymentNetwork = "girocard"
    public static let himyan: PaymentNetwork = "himyan"
    public static let idCredit: PaymentNetwork = "idCredit"
    public static let interac: PaymentNetwork = "interac"
    public static let jaywan: PaymentNetwork = "jaywan"
    public static let jcb: PaymentNetwork = "jcb"
    public static let mada: PaymentNetwork = "mada"
    public static let maestro: PaymentNetwork = "maestro"
    public static let masterCard: PaymentNetwork = "masterCard"
    public static let meeza: PaymentNetwork = "meeza"
    public static let mir: PaymentNetwork = "mir"
    public static let nanaco: PaymentNetwork = "nanaco"
    public static let napas: PaymentNetwork = "napas"
    public static let pagoBancomat: PaymentNetwork = "pagoBancomat"
    public static let postFinance: PaymentNetwork = "postFinance"
    public static let privateLabel: PaymentNetwork = "privateLabel"
    public static let quicPay: PaymentNetwork = "quicPay"
    public static let suica: PaymentNetwork = "suica"
    public static let tmoney: PaymentNetwork = "tmoney"
    public static let visa: PaymentNetwork = "visa"
    public static let vPay: PaymentNetwork = "vPay"
    public static let waon: PaymentNetwork = "waon"

    /// Every network Apple lists for Apple Pay (web and native), by Apple Pay JS name.
    public static let known: [PaymentNetwork] = [
        .amex, .bancomat, .bancontact, .bankAxept, .barcode, .cartesBancaires, .chinaUnionPay, .conecs, .dankort,
        .discover, .eftpos, .electron, .elo, .girocard, .himyan, .idCredit, .interac, .jaywan, .jcb, .mada,
        .maestro, .masterCard, .meeza, .mir, .nanaco, .napas, .pagoBancomat, .postFinance, .privateLabel,
        .quicPay, .suica, .tmoney, .visa, .vPay, .waon,
    ]

    /// The known network whose name differs from this one only in letter case (`mastercard` → `masterCard`).
    public var caseInsensitiveMatch: PaymentNetwork? {
        Self.known.first { $0.rawValue.lowercased() == rawValue.lowercased() }
    }
}

/// One merchant capability, by its Apple Pay JS name.
public struct MerchantCapability: OpenStringEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// 3-D Secure: required in every request.
    public static let supports3DS: MerchantCapability = "supports3DS"
    /// EMV: only for China UnionPay cards.
    public static let supportsEMV: MerchantCapability = "supportsEMV"
    public static let supportsCredit: MerchantCapability = "supportsCredit"
    public static let supportsDebit: MerchantCapability = "supportsDebit"
    /// Disbursements to the card (instant funds out).
    public static let instantFundsOut: MerchantCapability = "instantFundsOut"

    public static let known: [MerchantCapability] = [
        .supports3DS, .supportsEMV, .supportsCredit, .supportsDebit, .instantFundsOut,
    ]

    /// PassKit's `PKMerchantCapability` bit, or 0 for an unknown capability.
    public var nativeBit: Int {
        switch self {
        case .supports3DS: 1
        case .supportsEMV: 2
        case .supportsCredit: 4
        case .supportsDebit: 8
        case .instantFundsOut: 128
        default: 0
        }
    }
}

/// `merchantCapabilities`: a JSON array of capability names, order and unknown names kept.
public struct MerchantCapabilities: Sendable, Hashable, Codable, ExpressibleByArrayLiteral {
    /// The capabilities in the order written.
    public var values: [MerchantCapability]

    public init(_ values: [MerchantCapability]) { self.values = values }
    public init(arrayLiteral elements: MerchantCapability...) { values = elements }

    public func contains(_ capability: MerchantCapability) -> Bool { values.contains(capability) }

    /// PassKit's `PKMerchantCapability` bit mask (3DS 1, EMV 2, credit 4, debit 8, instantFundsOut 128).
    public var nativeValue: Int { values.reduce(0) { $0 | $1.nativeBit } }

    public init(from decoder: any Decoder) throws {
        values = try decoder.singleValueContainer().decode([MerchantCapability].self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(values)
    }
}

/// A field of a contact the sheet can ask for (`requiredShippingContactFields`, `requiredBillingContactFields`).
public struct ContactField: OpenStringEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let email: ContactField = "email"
    public static let name: ContactField = "name"
    public static let phone: ContactField = "phone"
    public static let phoneticName: ContactField = "phoneticName"
    public static let postalAddress: ContactField = "postalAddress"

    public static let known: [ContactField] = [.email, .name, .phone, .phoneticName, .postalAddress]
}

/// How the items are delivered (`shippingType`).
public struct ShippingType: OpenStringEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let shipping: ShippingType = "shipping"
    public static let delivery: ShippingType = "delivery"
    public static let storePickup: ShippingType = "storePickup"
    public static let servicePickup: ShippingType = "servicePickup"

    public static let known: [ShippingType] = [.shipping, .delivery, .storePickup, .servicePickup]
}

/// Whether the customer may edit the shipping contact (`shippingContactEditingMode`, Apple Pay JS v12).
///
/// Apple's pages name the editable mode both `available` and `enabled`; both are accepted and kept as written.
public struct ShippingContactEditingMode: OpenStringEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let available: ShippingContactEditingMode = "available"
    public static let enabled: ShippingContactEditingMode = "enabled"
    public static let storePickup: ShippingContactEditingMode = "storePickup"

    public static let known: [ShippingContactEditingMode] = [.available, .enabled, .storePickup]
}
