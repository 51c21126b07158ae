import ApplePay
import Cryptography
import Foundation
import Foundations
import Logging
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantSandbox
import MerchantServer
import MerchantStore
import PaymentSheet
import Sandbox

/// A scenario played against the merchant server's own API in process (`applepay simulate` without
/// `--merchant-url`): the scenario's store settings become a `StoreConfiguration`, so the server's
/// `CheckoutPricing` prices the sheet, its payment path opens the sandbox's tokens and charges a `SandboxProcessor`,
/// and orders land in an in-memory SQLite store.
public enum InProcessMerchant {
    /// The checkout's products: `ITEM-1`, `ITEM-2`, ... one per line item of the scenario's goods.
    static func sku(_ index: Int) -> String { "ITEM-\(index + 1)" }

    /// The store a scenario describes, and the cart that buys its goods.
    ///
    /// - The catalog: `merchant.lineItems` (or the request's line items, or its total), each a product bought
    ///   once, named by its label; the store is named by the request's total label, in its country and currency.
    /// - Zones: `merchant.shippingZones` as they are (first match wins, as in the server); without them one zone
    ///   covers every country with one method, "Free shipping" at 0 (the server pays only a checkout in a zone,
    ///   and a zone needs a method), so the totals carry a `Shipping: Free shipping` line of 0.
    /// - Coupons: `percentOff` or `amountOff`, `minimumTotal`; `expired` becomes an expiry in 1970.
    /// - Throws: `PaymentSheetError` `invalidScenario` naming the field the server's store refuses, or
    ///   `paymentRequest` when the scenario has none.
    public static func store(
        for scenario: Scenario, merchantIdentifier: String
    ) throws(PaymentSheetError) -> (configuration: StoreConfiguration, cart: [ScenarioCartItem]) {
        guard let request = scenario.paymentRequest else {
            throw PaymentSheetError(
                .invalidScenario,
                "without --merchant-url the scenario needs a paymentRequest "
                    + "(or, for --merchant-url, a checkout with cart items)",
                field: "paymentRequest")
        }
        let rules = scenario.merchant
        let currency = request.currencyCode
        let goods = rules.lineItems ?? request.lineItems ?? [request.total]
        let products = goods.enumerated().map { index, item in
            Product(sku: sku(index), name: item.label, price: item.decimalAmount ?? 0, currencyCode: currency)
        }
        let zones: [ShippingZone]
        if let scenarioZones = rules.shippingZones {
            zones = scenarioZones.enumerated().map { index, zone in
                ShippingZone(
                    identifier: "zone-\(index + 1)", name: zone.name ?? "Zone \(index + 1)", countries: zone.countries,
                    administrativeAreas: zone.administrativeAreas ?? [],
                    methods: zone.methods.map {
                        ShippingRate(
                            identifier: $0.identifier, label: $0.label, detail: $0.detail ?? "",
                            amount: $0.decimalAmount ?? 0)
                    },
                    taxRate: zone.taxRate.flatMap { try? Currency.parseDecimal($0) } ?? 0)
            }
        } else {
            // The server pays only a checkout in a zone, and a zone has at least one method.
            zones = [
                ShippingZone(
                    identifier: "everywhere", name: "Everywhere", countries: Country.all.map(\.code),
                    methods: [ShippingRate(identifier: "free", label: "Free shipping", detail: "", amount: 0)])
            ]
        }
        let coupons = (rules.coupons ?? []).map { coupon in
            let discount: Coupon.Discount =
                coupon.percentOff.flatMap { try? Currency.parseDecimal($0) }.map { .percent($0) }
                ?? .fixed(coupon.amountOff.flatMap { try? Currency.parseDecimal($0) } ?? 0)
            return Coupon(
                code: coupon.code, label: coupon.label, discount: discount,
                expiresAt: coupon.expired == true ? Date(timeIntervalSince1970: 0) : nil,
                minimumTotal: coupon.minimumTotal.flatMap { try? Currency.parseDecimal($0) })
        }
        let configuration = StoreConfiguration(
            storeName: request.total.label, merchantIdentifier: merchantIdentifier, countryCode: request.countryCode,
            currencyCode: currency, supportedNetworks: request.supportedNetworks.map(\.rawValue),
            merchantCapabilities: request.merchantCapabilities.values.map(\.rawValue),
            requiredShippingContactFields: (request.requiredShippingContactFields ?? []).map(\.rawValue),
            requiredBillingContactFields: (request.requiredBillingContactFields ?? []).map(\.rawValue),
            products: products, shippingZones: zones, coupons: coupons)
        do throws(StoreConfigurationError) {
            try configuration.validate()
        } catch {
            throw PaymentSheetError(.invalidScenario, error.message, field: scenarioField(error.field))
        }
        return (configuration, products.map { ScenarioCartItem(sku: $0.sku, quantity: 1) })
    }

    /// The scenario member behind a store configuration field (`products[1].price` → `merchant.lineItems[1]`).
    static func scenarioField(_ field: String?) -> String {
        guard let field else { return "merchant" }
        if field.hasPrefix("products") {
            return "merchant.lineItems" + field.dropFirst("products".count).prefix { $0 != "." }
        }
        if field.hasPrefix("shippingZones") || field.hasPrefix("coupons") { return "merchant." + field }
        return "paymentRequest"
    }

    /// The merchant server's API for `scenario`, in process, on a fresh `VirtualClock`: the store of
    /// `store(for:merchantIdentifier:)`, an in-memory SQLite order store, a `SandboxProcessor` that accepts only
    /// tokens of `sandbox`, and the sandbox's Payment Processing keys to open them.
    /// - Throws: `PaymentSheetError` `invalidScenario` as `store(for:merchantIdentifier:)`; `merchantFailed` when the
    ///   order store or the sandbox's keys cannot be used.
    public static func merchant(for scenario: Scenario, sandbox: Sandbox) throws(PaymentSheetError)
        -> ScenarioRunner.Merchant
    {
        let (configuration, cart) = try store(for: scenario, merchantIdentifier: sandbox.merchantIdentifier)
        let clock = VirtualClock()
        let now: @Sendable () -> Date = { clock.now }
        let api: MerchantAPI
        do {
            let decryptor = try ScenarioRunner.decryptor(for: sandbox, clock: clock)
            let root = sandbox.rootCertificate.sha256Fingerprint.map { String(format: "%02x", $0) }.joined()
            let services = MerchantServices(
                configuration: configuration, store: try SQLiteOrderStore(path: ":memory:", clock: now),
                processor: SandboxProcessor(sandboxRootFingerprint: root),
                tokenOpener: PaymentTokenOpeners.decrypting(with: decryptor),
                validator: MerchantValidator(
                    merchantIdentifier: configuration.merchantIdentifier, displayName: configuration.storeName,
                    domain: nil, gatewayBaseURL: "https://apple-pay-gateway.apple.com", identity: nil),
                logger: Logger(label: "applepay.silent") { _ in SwiftLogNoOpLogHandler() }, clock: now)
            api = MerchantAPI(services: services)
        } catch {
            throw PaymentSheetError(.merchantFailed, "the in-process merchant server cannot start: \(error)")
        }
        let transport = InProcessTransport(
            responder: api, clock: clock, lateEvents: scenario.merchant.lateEvents ?? [:],
            merchantIdentifier: configuration.merchantIdentifier, displayName: configuration.storeName)
        return ScenarioRunner.Merchant(
            transport: transport, name: "the in-process merchant server", checkout: .create(cart), clock: clock,
            initiative: .web, request: scenario.paymentRequest)
    }

    /// Runs `scenario` against the merchant server's API in process (`merchant(for:sandbox:)`); tokens come from
    /// `sandbox`.
    /// - Throws: as `merchant(for:sandbox:)` and `ScenarioRunner.run(_:sandbox:merchant:transcript:)`.
    public static func run(
        _ scenario: Scenario, sandbox: Sandbox, transcript: TranscriptSink? = nil
    ) async throws(PaymentSheetError) -> ScenarioRunner.Result {
        try await ScenarioRunner.run(
            scenario, sandbox: sandbox, merchant: try merchant(for: scenario, sandbox: sandbox), transcript: transcript)
    }
}
