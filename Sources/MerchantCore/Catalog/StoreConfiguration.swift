import ApplePay
import Foundation
import Foundations

/// Everything a store sells and how it charges, decoded from the server's JSON configuration file.
///
/// Money in the file is written as decimal strings (`"19.99"`; JSON numbers are accepted too) in the store's
/// currency; rates and percentages likewise (`"0.0825"`, `"10"`). Field names follow Apple Pay JS where one
/// exists (`countryCode`, `supportedNetworks`, `merchantCapabilities`, `requiredShippingContactFields`).
/// Load a file with ``load(from:)``; ``validate()`` runs on every load and reports the first problem with a
/// stable code (``problems()`` lists them all). ``demo`` is the built-in configuration used when `applepay serve` gets no file.
public struct StoreConfiguration: Codable, Sendable, Equatable {
    /// The business name: the label of the total line on the sheet and the merchant-validation display name.
    public var storeName: String
    /// The Apple Pay merchant identifier (`merchant.com.example`).
    public var merchantIdentifier: String
    /// ISO 3166-1 alpha-2 code of the merchant's principal place of business.
    public var countryCode: String
    /// ISO 4217 alphabetic code of the one currency the store sells in.
    public var currencyCode: String
    /// ``currencyCode`` as a `Currency` (validated when the configuration is loaded; USD if it was not).
    public var currency: Currency { Currency(code: currencyCode) ?? .usDollar }
    /// Apple Pay JS network names in order of preference (`visa`, `masterCard`, `amex`, ...).
    public var supportedNetworks: [String]
    /// Apple Pay JS capabilities; `supports3DS` is always added to the payment request even if missing here.
    public var merchantCapabilities: [String]
    /// Contact fields asked for the shipping contact (`postalAddress`, `name`, `email`, `phone`).
    public var requiredShippingContactFields: [String]
    /// Contact fields asked for the billing contact (usually `postalAddress`).
    public var requiredBillingContactFields: [String]
    /// The catalog.
    public var products: [Product]
    /// Shipping zones, first match wins: list the specific ones (a state, a postal prefix) before the broad ones.
    public var shippingZones: [ShippingZone]
    /// Coupon codes the sheet accepts.
    public var coupons: [Coupon]
    /// Surcharges by payment method type (`credit`, ...), applied when the sheet reports that type.
    public var paymentMethodFees: [PaymentMethodFee]
    /// Contents of `/.well-known/apple-developer-merchantid-domain-association`, when the store serves it.
    public var domainAssociation: String?
    /// Merchant validation against Apple's payment session endpoint (Apple Pay on the web).
    public var merchantValidation: MerchantValidationSettings
    /// How payments are sent to the processor.
    public var processor: ProcessorSettings
    /// This server's public base URL (no trailing slash): the `managementURL` and `tokenNotificationURL` of plan
    /// checkouts are under it. Not part of the catalog's JSON: the server sets it from its one public URL
    /// (MerchantServer's `publicURL`: `applepay serve --public-url`, the file's `server.publicURL`, by default the
    /// server's own address), which also gives the Wallet web service its URL. Default `https://localhost:8080`
    /// for a catalog used without a server (in-process tests).
    public var publicBaseURL: String

    /// Creates a configuration; see the property documentation for each field.
    public init(
        storeName: String, merchantIdentifier: String, countryCode: String, currencyCode: String,
        supportedNetworks: [String], merchantCapabilities: [String] = ["supports3DS"],
        requiredShippingContactFields: [String] = ["postalAddress", "name", "email"],
        requiredBillingContactFields: [String] = ["postalAddress"], products: [Product],
        shippingZones: [ShippingZone], coupons: [Coupon] = [], paymentMethodFees: [PaymentMethodFee] = [],
        domainAssociation: String? = nil,
        merchantValidation: MerchantValidationSettings = MerchantValidationSettings(),
        processor: ProcessorSettings = ProcessorSettings(), publicBaseURL: String = "https://localhost:8080"
    ) {
        self.publicBaseURL = publicBaseURL
        self.storeName = storeName
        self.merchantIdentifier = merchantIdentifier
        self.countryCode = countryCode
        self.currencyCode = currencyCode
        self.supportedNetworks = supportedNetworks
        self.merchantCapabilities = merchantCapabilities
        self.requiredShippingContactFields = requiredShippingContactFields
        self.requiredBillingContactFields = requiredBillingContactFields
        self.products = products
        self.shippingZones = shippingZones
        self.coupons = coupons
        self.paymentMethodFees = paymentMethodFees
        self.domainAssociation = domainAssociation
        self.merchantValidation = merchantValidation
        self.processor = processor
    }

    private enum CodingKeys: String, CodingKey {
        case storeName, merchantIdentifier, countryCode, currencyCode, supportedNetworks, merchantCapabilities
        case requiredShippingContactFields, requiredBillingContactFields, products, shippingZones, coupons
        case paymentMethodFees
        case domainAssociation, merchantValidation, processor
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        storeName = try c.decode(String.self, forKey: .storeName)
        merchantIdentifier = try c.decode(String.self, forKey: .merchantIdentifier)
        countryCode = try c.decode(String.self, forKey: .countryCode)
        currencyCode = try c.decode(String.self, forKey: .currencyCode)
        supportedNetworks = try c.decode([String].self, forKey: .supportedNetworks)
        merchantCapabilities = try c.decodeIfPresent([String].self, forKey: .merchantCapabilities) ?? ["supports3DS"]
        requiredShippingContactFields =
            try c.decodeIfPresent([String].self, forKey: .requiredShippingContactFields)
            ?? ["postalAddress", "name", "email"]
        requiredBillingContactFields =
            try c.decodeIfPresent([String].self, forKey: .requiredBillingContactFields) ?? ["postalAddress"]
        products = try c.decode([Product].self, forKey: .products)
        shippingZones = try c.decodeIfPresent([ShippingZone].self, forKey: .shippingZones) ?? []
        coupons = try c.decodeIfPresent([Coupon].self, forKey: .coupons) ?? []
        paymentMethodFees = try c.decodeIfPresent([PaymentMethodFee].self, forKey: .paymentMethodFees) ?? []
        domainAssociation = try c.decodeIfPresent(String.self, forKey: .domainAssociation)
        merchantValidation =
            try c.decodeIfPresent(MerchantValidationSettings.self, forKey: .merchantValidation)
            ?? MerchantValidationSettings()
        processor = try c.decodeIfPresent(ProcessorSettings.self, forKey: .processor) ?? ProcessorSettings()
        publicBaseURL = "https://localhost:8080"
    }

    /// Reads, decodes and validates a configuration file.
    /// - Throws: ``StoreConfigurationError`` with code `unreadable`, `malformed` or one of the validation codes.
    public static func load(from url: URL) throws(StoreConfigurationError) -> StoreConfiguration {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw StoreConfigurationError(.unreadable, "cannot read the configuration file \(url.path)")
        }
        return try decode(data)
    }

    /// Decodes and validates a configuration from JSON bytes.
    /// - Throws: ``StoreConfigurationError``.
    public static func decode(_ data: Data) throws(StoreConfigurationError) -> StoreConfiguration {
        let configuration: StoreConfiguration
        do {
            configuration = try JSONDecoder().decode(StoreConfiguration.self, from: data)
        } catch let error as StoreConfigurationError {
            throw error
        } catch let DecodingError.keyNotFound(key, context) {
            throw StoreConfigurationError(
                .malformed, "missing field \(pathText(context.codingPath + [key]))",
                field: FieldPath.text(context.codingPath + [key]))
        } catch let DecodingError.typeMismatch(_, context) {
            throw StoreConfigurationError(
                .malformed, "wrong type at \(pathText(context.codingPath))", field: FieldPath.text(context.codingPath))
        } catch let DecodingError.valueNotFound(_, context) {
            throw StoreConfigurationError(
                .malformed, "null at \(pathText(context.codingPath))", field: FieldPath.text(context.codingPath))
        } catch let DecodingError.dataCorrupted(context) {
            throw StoreConfigurationError(
                .malformed, "invalid value at \(pathText(context.codingPath)): \(context.debugDescription)",
                field: context.codingPath.isEmpty ? nil : FieldPath.text(context.codingPath))
        } catch {
            throw StoreConfigurationError(.malformed, "the configuration is not valid JSON of the expected shape")
        }
        try configuration.validate()
        return configuration
    }

    private static func pathText(_ path: [any CodingKey]) -> String {
        path.isEmpty ? "(top level)" : FieldPath.text(path)
    }

    /// The product with this SKU, if the catalog has it.
    public func product(sku: String) -> Product? { products.first { $0.sku == sku } }

    /// Checks the rules that JSON decoding cannot: one currency, amounts exact in its minor units, unique SKUs,
    /// zone and method identifiers and coupon codes, non-negative prices, rates between 0 and 1.
    /// - Throws: ``StoreConfigurationError`` naming the first of ``problems()``.
    public func validate() throws(StoreConfigurationError) {
        if let first = problems().first { throw first }
    }

    /// Every rule ``validate()`` checks that this configuration breaks, in the order of the file, each with the
    /// failing field's path (`products[1].price`); empty when the configuration is valid.
    public func problems() -> [StoreConfigurationError] {
        var found: [StoreConfigurationError] = []
        func report(_ code: StoreConfigurationError.Code, _ field: String, _ message: String) {
            found.append(StoreConfigurationError(code, message, field: field))
        }
        if storeName.trimmingCharacters(in: .whitespaces).isEmpty || storeName.count > 64 {
            report(.invalidStoreName, "storeName", "storeName must be 1 to 64 characters (Apple's display-name limit)")
        }
        if merchantIdentifier.isEmpty {
            report(.invalidMerchantIdentifier, "merchantIdentifier", "merchantIdentifier is empty")
        }
        if !Country.isKnown(countryCode) {
            report(.invalidCountry, "countryCode", "countryCode must be an ISO 3166-1 alpha-2 code such as \"US\"")
        }
        if !Currency.isKnown(currencyCode) {
            report(.invalidCurrency, "currencyCode", "currencyCode must be an ISO 4217 code such as \"USD\"")
        }
        if supportedNetworks.isEmpty {
            report(.noNetworks, "supportedNetworks", "supportedNetworks must not be empty")
        }
        if products.isEmpty { report(.emptyCatalog, "products", "the catalog has no products") }
        var skus = Set<String>()
        for (index, product) in products.enumerated() {
            let path = "products[\(index)]"
            if product.sku.isEmpty || !skus.insert(product.sku).inserted {
                report(.duplicateSKU, "\(path).sku", "product SKU \"\(product.sku)\" is empty or appears twice")
            }
            if product.currencyCode != currencyCode {
                report(
                    .currencyMismatch, "\(path).currencyCode",
                    "product \(product.sku) is priced in \(product.currencyCode), the store sells in \(currencyCode)")
            }
            checkAmount(product.price, "\(path).price", "price of product \(product.sku)", into: &found)
            if let plan = product.plan { checkPlan(plan, product: product, path: "\(path).plan", into: &found) }
        }
        var zoneIDs = Set<String>()
        for (index, zone) in shippingZones.enumerated() {
            let path = "shippingZones[\(index)]"
            if zone.identifier.isEmpty || !zoneIDs.insert(zone.identifier).inserted {
                report(
                    .duplicateIdentifier, "\(path).identifier",
                    "shipping zone identifier \"\(zone.identifier)\" is empty or appears twice")
            }
            if zone.countries.isEmpty {
                report(.invalidZone, "\(path).countries", "shipping zone \(zone.identifier) lists no countries")
            }
            for (unknown, country) in zone.countries.enumerated() where !Country.isKnown(country.uppercased()) {
                report(
                    .invalidZone, "\(path).countries[\(unknown)]",
                    "shipping zone \(zone.identifier): \"\(country)\" is not an ISO 3166-1 alpha-2 code")
            }
            if zone.methods.isEmpty {
                report(.invalidZone, "\(path).methods", "shipping zone \(zone.identifier) has no methods")
            }
            if zone.taxRate < 0 || zone.taxRate > 1 {
                report(
                    .invalidRate, "\(path).taxRate",
                    "taxRate of zone \(zone.identifier) must be between 0 and 1 (\"0.0825\" for 8.25%)")
            }
            var methodIDs = Set<String>()
            for (methodIndex, method) in zone.methods.enumerated() {
                let methodPath = "\(path).methods[\(methodIndex)]"
                if method.identifier.isEmpty || !methodIDs.insert(method.identifier).inserted {
                    report(
                        .duplicateIdentifier, "\(methodPath).identifier",
                        "method \"\(method.identifier)\" in zone \(zone.identifier) is empty or appears twice")
                }
                checkAmount(
                    method.amount, "\(methodPath).amount",
                    "amount of method \(method.identifier) in zone \(zone.identifier)", into: &found)
                if let estimate = method.deliveryEstimate,
                    estimate.minimumDays < 0 || estimate.maximumDays < estimate.minimumDays
                {
                    report(
                        .invalidZone, "\(methodPath).deliveryEstimate",
                        "deliveryEstimate of method \(method.identifier) must have 0 ≤ minimumDays ≤ maximumDays")
                }
            }
        }
        var codes = Set<String>()
        for (index, coupon) in coupons.enumerated() {
            let path = "coupons[\(index)]"
            if coupon.code.isEmpty || !codes.insert(coupon.code.uppercased()).inserted {
                report(.duplicateIdentifier, "\(path).code", "coupon code \"\(coupon.code)\" is empty or appears twice")
            }
            switch coupon.discount {
            case .percent(let percent):
                if percent <= 0 || percent > 100 {
                    report(.invalidRate, "\(path).value", "coupon \(coupon.code): percent must be in (0, 100]")
                }
            case .fixed(let amount):
                checkAmount(amount, "\(path).value", "amount of coupon \(coupon.code)", into: &found)
            }
            if let minimum = coupon.minimumTotal {
                checkAmount(minimum, "\(path).minimumTotal", "minimumTotal of coupon \(coupon.code)", into: &found)
            }
        }
        var feeTypes = Set<String>()
        for (index, fee) in paymentMethodFees.enumerated() {
            let path = "paymentMethodFees[\(index)]"
            if !PaymentMethodFee.types.contains(fee.type) || !feeTypes.insert(fee.type).inserted {
                report(
                    .duplicateIdentifier, "\(path).type",
                    "payment method fee type \"\(fee.type)\" must be one of \(PaymentMethodFee.types.sorted()) and appear once"
                )
            }
            if fee.percent <= 0 || fee.percent > 10 {
                report(
                    .invalidRate, "\(path).percent", "payment method fee for \(fee.type): percent must be in (0, 10]")
            }
        }
        found += processor.problems(at: "processor")
        return found
    }

    private func checkPlan(
        _ plan: BillingPlan, product: Product, path: String, into found: inout [StoreConfigurationError]
    ) {
        func report(_ field: String, _ message: String) {
            found.append(
                StoreConfigurationError(.invalidPlan, "product \(product.sku): \(message)", field: "\(path).\(field)"))
        }
        if product.price <= 0 { report("kind", "a product with a plan needs a price above zero") }
        switch plan {
        case .recurring(let recurring):
            let units: [RecurringIntervalUnit] = [.year, .month, .day, .hour, .minute]
            if !units.contains(recurring.intervalUnit) {
                report("intervalUnit", "intervalUnit must be year, month, day, hour or minute")
            }
            if !(1...1000).contains(recurring.intervalCount) {
                report("intervalCount", "intervalCount must be 1 to 1000")
            }
            if let trial = recurring.trial {
                if !units.contains(trial.intervalUnit) || !(1...1000).contains(trial.intervalCount) {
                    report("trial", "the trial needs an intervalUnit and an intervalCount of 1 to 1000")
                }
                if trial.price > 0 {
                    checkAmount(
                        trial.price, "\(path).trial.price", "trial price of product \(product.sku)", into: &found)
                } else {
                    report("trial.price", "the trial price must be above zero (it is charged at checkout)")
                }
            }
        case .automaticReload(let reload):
            if reload.thresholdAmount < 0 {
                report("thresholdAmount", "thresholdAmount is negative")
            } else {
                checkAmount(
                    reload.thresholdAmount, "\(path).thresholdAmount", "threshold of product \(product.sku)",
                    into: &found)
            }
        case .deferred(let deferred):
            switch (deferred.freeCancellationDate, deferred.freeCancellationTimeZone) {
            case (nil, nil): break
            case (let date?, let zone):
                if let zone, TimeZone(identifier: zone) == nil {
                    report("freeCancellationTimeZone", "\"\(zone.prefix(40))\" is not an IANA time zone")
                }
                if date > deferred.billingDate {
                    report("freeCancellationDate", "the free cancellation date is after the billing date")
                }
            case (nil, _?):
                report("freeCancellationDate", "freeCancellationTimeZone is set without freeCancellationDate")
            }
        }
    }

    private func checkAmount(
        _ amount: Decimal, _ field: String, _ what: String, into found: inout [StoreConfigurationError]
    ) {
        if amount < 0 {
            found.append(StoreConfigurationError(.invalidAmount, "\(what) is negative", field: field))
        } else if (try? Money(exactly: amount, currency: currency)) == nil {
            found.append(
                StoreConfigurationError(
                    .invalidAmount, "\(what) (\(amount)) has more than \(currency.minorUnits) decimals for \(currency)",
                    field: field))
        }
    }
}

/// A product in the catalog.
public struct Product: Codable, Sendable, Equatable {
    /// Stock-keeping unit: the identifier checkouts refer to.
    public var sku: String
    /// The name shown as the line item's label.
    public var name: String
    /// Unit price in ``currencyCode``.
    public var price: Decimal
    /// ISO 4217 code; must be the store's currency.
    public var currencyCode: String
    /// How the product bills after checkout, when it is a subscription, a top-up or a deferred payment.
    public var plan: BillingPlan?

    public init(sku: String, name: String, price: Decimal, currencyCode: String, plan: BillingPlan? = nil) {
        self.sku = sku
        self.name = name
        self.price = price
        self.currencyCode = currencyCode
        self.plan = plan
    }

    private enum CodingKeys: String, CodingKey { case sku, name, price, currencyCode, plan }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        sku = try c.decode(String.self, forKey: .sku)
        name = try c.decode(String.self, forKey: .name)
        price = try decodeDecimal(c, .price)
        currencyCode = try c.decode(String.self, forKey: .currencyCode)
        plan = try c.decodeIfPresent(BillingPlan.self, forKey: .plan)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sku, forKey: .sku)
        try c.encode(name, forKey: .name)
        try c.encode(
            Currency(code: currencyCode).flatMap { Money(rounding: price, currency: $0)?.amountString }
                ?? "\(price)",
            forKey: .price)
        try c.encode(currencyCode, forKey: .currencyCode)
        try c.encodeIfPresent(plan, forKey: .plan)
    }
}

/// A region served by the same shipping methods and taxed at the same rate.
///
/// An address is in the zone when its country code is in ``countries`` and, if given, its administrative area
/// (state) is in ``administrativeAreas`` and its postal code (upper-cased, spaces removed) starts with one of
/// ``postalCodePrefixes``. Comparisons ignore case.
public struct ShippingZone: Codable, Sendable, Equatable {
    /// Stable identifier of the zone.
    public var identifier: String
    /// Human name, for logs and the configuration author.
    public var name: String
    /// ISO 3166-1 alpha-2 codes.
    public var countries: [String]
    /// States or provinces (`CA`, `NY`); empty means any.
    public var administrativeAreas: [String]
    /// Postal-code prefixes (`94`, `SW1`); empty means any.
    public var postalCodePrefixes: [String]
    /// Methods offered in this zone; the first is the default selection.
    public var methods: [ShippingRate]
    /// Sales tax rate for the zone, a fraction (`0.0825` is 8.25%).
    public var taxRate: Decimal

    public init(
        identifier: String, name: String, countries: [String], administrativeAreas: [String] = [],
        postalCodePrefixes: [String] = [], methods: [ShippingRate], taxRate: Decimal = 0
    ) {
        self.identifier = identifier
        self.name = name
        self.countries = countries
        self.administrativeAreas = administrativeAreas
        self.postalCodePrefixes = postalCodePrefixes
        self.methods = methods
        self.taxRate = taxRate
    }

    private enum CodingKeys: String, CodingKey {
        case identifier, name, countries, administrativeAreas, postalCodePrefixes, methods, taxRate
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        identifier = try c.decode(String.self, forKey: .identifier)
        name = try c.decodeIfPresent(String.self, forKey: .name) ?? identifier
        countries = try c.decode([String].self, forKey: .countries)
        administrativeAreas = try c.decodeIfPresent([String].self, forKey: .administrativeAreas) ?? []
        postalCodePrefixes = try c.decodeIfPresent([String].self, forKey: .postalCodePrefixes) ?? []
        methods = try c.decode([ShippingRate].self, forKey: .methods)
        taxRate = c.contains(.taxRate) ? try decodeDecimal(c, .taxRate) : 0
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(identifier, forKey: .identifier)
        try c.encode(name, forKey: .name)
        try c.encode(countries, forKey: .countries)
        try c.encode(administrativeAreas, forKey: .administrativeAreas)
        try c.encode(postalCodePrefixes, forKey: .postalCodePrefixes)
        try c.encode(methods, forKey: .methods)
        try c.encode("\(taxRate)", forKey: .taxRate)
    }

    /// Whether the (possibly redacted) address lies in this zone.
    public func covers(_ address: ShippingAddress) -> Bool {
        guard let country = address.countryCode, countries.contains(where: { ZoneMatching.same(country, $0) })
        else { return false }
        if !administrativeAreas.isEmpty {
            guard let area = address.administrativeArea,
                administrativeAreas.contains(where: { ZoneMatching.sameArea(area, $0) })
            else { return false }
        }
        if !postalCodePrefixes.isEmpty {
            guard let postal = address.postalCode,
                postalCodePrefixes.contains(where: { ZoneMatching.postalCode(postal, hasPrefix: $0) })
            else { return false }
        }
        return true
    }
}

/// One shipping method of a zone.
public struct ShippingRate: Codable, Sendable, Equatable {
    /// Unique within the zone; the sheet sends it back when the customer picks the method.
    public var identifier: String
    /// Shown on the sheet (`Standard`).
    public var label: String
    /// Shown under the label (`Arrives in 3–5 days`).
    public var detail: String
    /// Price in the store's currency.
    public var amount: Decimal
    /// Delivery window, becomes Apple Pay JS `dateComponentsRange`.
    public var deliveryEstimate: DeliveryEstimate?

    public init(
        identifier: String, label: String, detail: String, amount: Decimal, deliveryEstimate: DeliveryEstimate? = nil
    ) {
        self.identifier = identifier
        self.label = label
        self.detail = detail
        self.amount = amount
        self.deliveryEstimate = deliveryEstimate
    }

    private enum CodingKeys: String, CodingKey { case identifier, label, detail, amount, deliveryEstimate }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        identifier = try c.decode(String.self, forKey: .identifier)
        label = try c.decode(String.self, forKey: .label)
        detail = try c.decodeIfPresent(String.self, forKey: .detail) ?? ""
        amount = try decodeDecimal(c, .amount)
        deliveryEstimate = try c.decodeIfPresent(DeliveryEstimate.self, forKey: .deliveryEstimate)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(identifier, forKey: .identifier)
        try c.encode(label, forKey: .label)
        try c.encode(detail, forKey: .detail)
        try c.encode("\(amount)", forKey: .amount)
        try c.encodeIfPresent(deliveryEstimate, forKey: .deliveryEstimate)
    }
}

/// A delivery window in whole days from the day of the checkout.
public struct DeliveryEstimate: Codable, Sendable, Equatable {
    public var minimumDays: Int
    public var maximumDays: Int
}

/// A coupon code: a percentage or a fixed amount off the items, optionally expiring and with a minimum.
public struct Coupon: Codable, Sendable, Equatable {
    /// The discount a coupon gives.
    public enum Discount: Sendable, Equatable {
        /// Percent of the items subtotal, in (0, 100].
        case percent(Decimal)
        /// A fixed amount in the store's currency, capped at the items subtotal.
        case fixed(Decimal)
    }

    /// The code the customer types; matched ignoring case.
    public var code: String
    /// Label of the negative line item (`Coupon WELCOME10`).
    public var label: String
    public var discount: Discount
    /// After this instant the code answers `couponCodeExpired`.
    public var expiresAt: Date?
    /// Minimum items subtotal for the coupon to apply; below it the code answers `couponCodeInvalid`.
    public var minimumTotal: Decimal?

    public init(
        code: String, label: String? = nil, discount: Discount, expiresAt: Date? = nil, minimumTotal: Decimal? = nil
    ) {
        self.code = code
        self.label = label ?? "Coupon \(code)"
        self.discount = discount
        self.expiresAt = expiresAt
        self.minimumTotal = minimumTotal
    }

    private enum CodingKeys: String, CodingKey { case code, label, kind, value, expiresAt, minimumTotal }

    /// JSON: `{"code", "label"?, "kind": "percent"|"fixed", "value": "10", "expiresAt"?: ISO 8601, "minimumTotal"?}`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        code = try c.decode(String.self, forKey: .code)
        label = try c.decodeIfPresent(String.self, forKey: .label) ?? "Coupon \(code)"
        let value = try decodeDecimal(c, .value)
        switch try c.decode(String.self, forKey: .kind) {
        case "percent": discount = .percent(value)
        case "fixed": discount = .fixed(value)
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .kind, in: c, debugDescription: "kind must be \"percent\" or \"fixed\"")
        }
        if let text = try c.decodeIfPresent(String.self, forKey: .expiresAt) {
            guard let date = ISO8601DateFormatter().date(from: text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .expiresAt, in: c, debugDescription: "expiresAt must be ISO 8601, e.g. 2030-01-31T23:59:59Z"
                )
            }
            expiresAt = date
        } else {
            expiresAt = nil
        }
        minimumTotal = c.contains(.minimumTotal) ? try decodeDecimal(c, .minimumTotal) : nil
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(code, forKey: .code)
        try c.encode(label, forKey: .label)
        switch discount {
        case .percent(let value):
            try c.encode("percent", forKey: .kind)
            try c.encode("\(value)", forKey: .value)
        case .fixed(let value):
            try c.encode("fixed", forKey: .kind)
            try c.encode("\(value)", forKey: .value)
        }
        try c.encodeIfPresent(expiresAt.map { ISO8601DateFormatter().string(from: $0) }, forKey: .expiresAt)
        try c.encodeIfPresent(minimumTotal.map { "\($0)" }, forKey: .minimumTotal)
    }
}

/// A surcharge for one payment method type, a percentage of the amount before tax. Not taxed itself.
public struct PaymentMethodFee: Codable, Sendable, Equatable {
    /// The Apple Pay JS payment method types a fee may apply to.
    public static let types: Set<String> = ["credit", "debit", "prepaid", "store", "eMoney"]

    /// `credit`, `debit`, `prepaid`, `store` or `eMoney`.
    public var type: String
    /// Label of the line item (`Credit card surcharge`).
    public var label: String
    /// Percent of subtotal − discount + shipping, in (0, 10].
    public var percent: Decimal
}

extension PaymentMethodFee {
    private enum CodingKeys: String, CodingKey { case type, label, percent }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        type = try c.decode(String.self, forKey: .type)
        label = try c.decode(String.self, forKey: .label)
        percent = try decodeDecimal(c, .percent)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .type)
        try c.encode(label, forKey: .label)
        try c.encode("\(percent)", forKey: .percent)
    }
}

/// Merchant validation settings (Apple Pay on the web). The HTTP layer owns the request itself.
public struct MerchantValidationSettings: Codable, Sendable, Equatable {
    /// Base URL of Apple's gateway; tests point it at a local TLS server.
    /// Default: `https://apple-pay-gateway.apple.com`.
    public var gatewayBaseURL: String = "https://apple-pay-gateway.apple.com"
    /// The domain sent as `initiativeContext` (the site the button is on), e.g. `shop.example.com`.
    public var domain: String?
    /// `displayName` sent to Apple (≤ 64 characters); defaults to the store name.
    public var displayName: String?
    /// Path of the Merchant Identity certificate (PEM) used as TLS client certificate.
    public var identityCertificatePath: String?
    /// Path of its private key (PEM, mode 0600).
    public var identityKeyPath: String?

    /// Apple's gateway, the other settings unset.
    public init() {}

    private enum CodingKeys: String, CodingKey {
        case gatewayBaseURL, domain, displayName, identityCertificatePath, identityKeyPath
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        gatewayBaseURL = try c.decodeIfPresent(String.self, forKey: .gatewayBaseURL) ?? Self().gatewayBaseURL
        domain = try c.decodeIfPresent(String.self, forKey: .domain)
        displayName = try c.decodeIfPresent(String.self, forKey: .displayName)
        identityCertificatePath = try c.decodeIfPresent(String.self, forKey: .identityCertificatePath)
        identityKeyPath = try c.decodeIfPresent(String.self, forKey: .identityKeyPath)
    }
}

/// The processor kinds the server can run: `sandbox` (the sandbox processor, which only sandbox mode runs), `http` (a
/// service speaking docs/PROCESSOR-PROTOCOL.md) and the provider connectors `stripe`, `adyen` and `checkout`
/// (docs/PROCESSORS.md). The server's `ProcessorChoice` is this kind with the settings it carries.
public enum ProcessorKind: String, CaseIterable, Sendable, Hashable {
    case sandbox, http, stripe, adyen, checkout
}

/// Which kind of processor receives payments, and how long a call may take: the `"processor"` section of the
/// configuration file. The server (MerchantServer's `ProcessorChoice`) reads the rest of the section, such as the
/// `url` of an `http` processor.
public struct ProcessorSettings: Codable, Sendable, Equatable {
    /// The names of the ``ProcessorKind``s.
    public static let kinds = Set(ProcessorKind.allCases.map(\.rawValue))

    /// One of ``kinds``, as the file gives it; validation refuses any other, so that a payment never goes to the
    /// sandbox by mistake.
    public var kind: String
    /// ``kind`` when it is one of ``kinds``.
    public var knownKind: ProcessorKind? { ProcessorKind(rawValue: kind) }
    /// Upper bound for one processor call; on timeout the order ends `failed`. In (0, 30].
    public var timeoutSeconds: Double

    public init(kind: String = "sandbox", timeoutSeconds: Double = 10) {
        self.kind = kind
        self.timeoutSeconds = timeoutSeconds
    }

    private enum CodingKeys: String, CodingKey { case kind, timeoutSeconds }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decodeIfPresent(String.self, forKey: .kind) ?? "sandbox"
        timeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .timeoutSeconds) ?? 10
    }

    /// The rules the settings break, with their paths under `path` (`processor.kind`); empty when valid.
    public func problems(at path: String) -> [StoreConfigurationError] {
        var found: [StoreConfigurationError] = []
        if !Self.kinds.contains(kind) {
            found.append(
                StoreConfigurationError(
                    .invalidProcessor, "\(path).kind \"\(kind.prefix(40))\" is not one of \(Self.kinds.sorted())",
                    field: "\(path).kind"))
        }
        // Written so that NaN fails too.
        if !(timeoutSeconds > 0 && timeoutSeconds <= 30) {
            found.append(
                StoreConfigurationError(
                    .invalidProcessor, "\(path).timeoutSeconds must be in (0, 30]: the sheet gives up after 30 s",
                    field: "\(path).timeoutSeconds"))
        }
        return found
    }

    /// ``timeoutSeconds`` as a `Duration` (zero when it is not a positive number; at most a day, so that an
    /// unvalidated value cannot overflow the conversion).
    public var timeout: Duration {
        guard timeoutSeconds > 0 else { return .zero }
        return .milliseconds(Int64((min(timeoutSeconds, 86_400) * 1000).rounded()))
    }
}

/// The domain of ``StoreConfigurationError``: its codes are ``ErrorCode`` of it.
public enum StoreConfigurationErrorDomain {}

/// A configuration file that cannot be used, with a stable ``FieldFailure/code``
/// (``StoreConfigurationError.Code``), the failing ``FieldFailure/field`` (its path in the configuration JSON:
/// `products[1].price`, `shippingZones[0].taxRate`; `nil` when the file as a whole is at fault: unreadable, not
/// JSON) and a message naming it.
public typealias StoreConfigurationError = FieldFailure<StoreConfigurationErrorDomain>

/// The stable codes of ``StoreConfigurationError``.
extension ErrorCode<StoreConfigurationError> {
    public static var unreadable: Self { Self("unreadable") }
    public static var malformed: Self { Self("malformed") }
    public static var invalidStoreName: Self { Self("invalidStoreName") }
    public static var invalidMerchantIdentifier: Self { Self("invalidMerchantIdentifier") }
    public static var invalidCountry: Self { Self("invalidCountry") }
    public static var invalidCurrency: Self { Self("invalidCurrency") }
    public static var noNetworks: Self { Self("noNetworks") }
    public static var emptyCatalog: Self { Self("emptyCatalog") }
    public static var duplicateSKU: Self { Self("duplicateSKU") }
    public static var duplicateIdentifier: Self { Self("duplicateIdentifier") }
    public static var currencyMismatch: Self { Self("currencyMismatch") }
    public static var invalidAmount: Self { Self("invalidAmount") }
    public static var invalidZone: Self { Self("invalidZone") }
    public static var invalidRate: Self { Self("invalidRate") }
    public static var invalidProcessor: Self { Self("invalidProcessor") }
    public static var invalidPlan: Self { Self("invalidPlan") }
}

/// Parses a decimal string such as `"19.99"` or `"-2"`: surrounding spaces and one leading `+` are allowed,
/// the rest must be ApplePay's amount grammar `-?[0-9]+(\.[0-9]+)?` as a whole (``Currency/parseDecimal(_:)``);
/// `nil` otherwise (`"1.2.3"`, `"-"`, `"1,5"`).
func parseConfigurationDecimal(_ text: String) -> Decimal? {
    var trimmed = Substring(text.trimmingCharacters(in: .whitespaces))
    if trimmed.first == "+" {
        trimmed = trimmed.dropFirst()
        if trimmed.first == "-" { return nil }
    }
    return try? Currency.parseDecimal(String(trimmed))
}

/// Decodes a decimal written as a string (`"19.99"`, preferred: exact) or a JSON number.
func decodeDecimal<K: CodingKey>(_ container: KeyedDecodingContainer<K>, _ key: K) throws -> Decimal {
    if let text = try? container.decode(String.self, forKey: key) {
        guard let value = parseConfigurationDecimal(text) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: container, debugDescription: "\"\(text)\" is not a decimal number")
        }
        return value
    }
    return try container.decode(Decimal.self, forKey: key)
}
