import ApplePay
import Foundation

extension StoreConfiguration {
    /// The built-in demo store, used by `applepay serve` when no `--config` is given.
    ///
    /// Sells three products in USD, plus one of each billing plan (a monthly subscription with a $1 trial month, a
    /// café card reloaded with $25 below $5, a tasting seat charged on 2030-03-31), from the US; ships to the US (California taxed at 7.25%, New York at 8.875%,
    /// other states 5%), Canada and the UK; coupons `WELCOME10` (10% off), `FIVEOFF` ($5 off orders of $25 or
    /// more) and `SPRING2020` (expired). Merchant `merchant.com.example.applepay-sandbox`, the sandbox processor.
    public static let demo = StoreConfiguration(
        storeName: "Example Coffee Roasters",
        merchantIdentifier: "merchant.com.example.applepay-sandbox",
        countryCode: "US",
        currencyCode: "USD",
        supportedNetworks: ["visa", "masterCard", "amex", "discover"],
        merchantCapabilities: ["supports3DS", "supportsCredit", "supportsDebit"],
        requiredShippingContactFields: ["postalAddress", "name", "email", "phone"],
        requiredBillingContactFields: ["postalAddress"],
        products: [
            Product(sku: "COFFEE-250", name: "House Blend 250 g", price: decimal(1450, scale: 2), currencyCode: "USD"),
            Product(sku: "MUG-01", name: "Enamel Mug", price: Decimal(12), currencyCode: "USD"),
            Product(sku: "GRINDER-9", name: "Hand Grinder", price: decimal(8999, scale: 2), currencyCode: "USD"),
            Product(
                sku: "BEANS-MONTHLY", name: "Coffee of the Month", price: decimal(999, scale: 2), currencyCode: "USD",
                plan: .recurring(
                    RecurringPlan(
                        intervalUnit: .month, intervalCount: 1,
                        trial: .init(price: 1, intervalUnit: .month, intervalCount: 1),
                        description: "A bag of our roaster's pick every month"))),
            Product(
                sku: "CAFE-CARD", name: "Café Card Top-up", price: 25, currencyCode: "USD",
                plan: .automaticReload(
                    AutomaticReloadPlan(thresholdAmount: 5, description: "Café Card: $25 when the balance is below $5"))
            ),
            Product(
                sku: "TASTING-SEAT", name: "Spring Tasting Seat", price: 45, currencyCode: "USD",
                plan: .deferred(
                    DeferredPlan(
                        billingDate: Date(timeIntervalSince1970: 1_901_145_600),  // 2030-03-31T00:00:00Z
                        freeCancellationDate: Date(timeIntervalSince1970: 1_900_540_800),  // 2030-03-24T00:00:00Z
                        freeCancellationTimeZone: "America/Los_Angeles",
                        description: "A seat at the spring tasting, charged on the day"))),
        ],
        shippingZones: [
            ShippingZone(
                identifier: "us-ca", name: "California", countries: ["US"], administrativeAreas: ["CA"],
                methods: usMethods, taxRate: decimal(725, scale: 4)),
            ShippingZone(
                identifier: "us-ny", name: "New York", countries: ["US"], administrativeAreas: ["NY"],
                methods: usMethods, taxRate: decimal(8875, scale: 5)),
            ShippingZone(
                identifier: "us", name: "United States", countries: ["US"], methods: usMethods,
                taxRate: decimal(5, scale: 2)),
            ShippingZone(
                identifier: "ca-gb", name: "Canada and United Kingdom", countries: ["CA", "GB"],
                methods: [
                    ShippingRate(
                        identifier: "international", label: "International", detail: "Arrives in 7–14 days",
                        amount: decimal(1900, scale: 2),
                        deliveryEstimate: DeliveryEstimate(minimumDays: 7, maximumDays: 14))
                ], taxRate: 0),
        ],
        coupons: [
            Coupon(code: "WELCOME10", label: "Welcome 10% off", discount: .percent(10)),
            Coupon(code: "FIVEOFF", label: "$5 off", discount: .fixed(5), minimumTotal: 25),
            Coupon(
                code: "SPRING2020", label: "Spring sale", discount: .percent(20),
                expiresAt: Date(timeIntervalSince1970: 1_590_969_599)),  // 2020-05-31T23:59:59Z
        ],
        domainAssociation: "demo-domain-association: replace with the file Apple gives you for your domain\n")

    /// `significand × 10^-scale`: `decimal(1450, scale: 2)` is 14.50.
    private static func decimal(_ significand: Int, scale: Int) -> Decimal {
        Decimal(sign: .plus, exponent: -scale, significand: Decimal(significand))
    }

    private static let usMethods = [
        ShippingRate(
            identifier: "standard", label: "Standard", detail: "Arrives in 3–5 business days",
            amount: decimal(499, scale: 2), deliveryEstimate: DeliveryEstimate(minimumDays: 3, maximumDays: 5)),
        ShippingRate(
            identifier: "express", label: "Express", detail: "Arrives in 1–2 business days",
            amount: decimal(1499, scale: 2), deliveryEstimate: DeliveryEstimate(minimumDays: 1, maximumDays: 2)),
        ShippingRate(
            identifier: "free", label: "Free shipping", detail: "Arrives in 7–10 business days", amount: 0,
            deliveryEstimate: DeliveryEstimate(minimumDays: 7, maximumDays: 10)),
    ]
}
