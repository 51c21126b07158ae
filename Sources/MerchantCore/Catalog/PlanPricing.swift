import ApplePay
import Foundation
import Foundations

extension CheckoutPricing {
    /// The product with a billing plan a checkout buys (such a checkout holds only it), if any.
    public func planProduct(of checkout: Checkout) -> (Product, BillingPlan)? {
        guard checkout.items.count == 1, let product = configuration.product(sku: checkout.items[0].sku),
            let plan = product.plan
        else { return nil }
        return (product, plan)
    }

    /// What a plan checkout costs now: the trial price of a recurring plan with a trial, otherwise the product's
    /// price (a deferred plan's token carries the amount to be taken later; nothing is charged at checkout).
    func price(plan: BillingPlan, product: Product) throws(CheckoutError) -> PriceBreakdown {
        let currency = configuration.currency
        var amount = product.price
        var label = product.name
        if case .recurring(let recurring) = plan, let trial = recurring.trial {
            amount = trial.price
            label = "\(product.name) (trial)"
        }
        guard let minor = Money(rounding: amount, currency: currency)?.minorUnits else {
            throw CheckoutError(.amountOverflow, "an amount does not fit in 64-bit minor units")
        }
        return PriceBreakdown(
            currency: currency, totalLabel: configuration.storeName,
            lines: [PricedLine(kind: .item, label: label, amount: minor, sku: product.sku, quantity: 1)],
            subtotal: minor, discount: 0, shipping: 0, tax: 0, fee: 0, total: minor, zone: nil, shippingMethods: [],
            selectedShippingMethod: nil, appliedCoupon: nil, errors: [], pricedAt: clock(), plan: plan)
    }

    /// The base of the URLs a plan checkout gives Apple: the public URL (``StoreConfiguration/publicBaseURL``), as
    /// `https` when it is the server's own `http` address (no public URL configured: local and sandbox use). Apple
    /// takes only https URLs; locally nothing follows these two (the sandbox gateway is told where to deliver
    /// notifications, `--notify-url`).
    public var applePayBaseURL: String {
        let base = configuration.publicBaseURL
        return base.hasPrefix("http://") ? "https://" + base.dropFirst("http://".count) : base
    }

    /// Where the customer manages what a checkout starts: `PUBLIC/v1/subscriptions/manage?checkout=ID&secret=S`,
    /// the subscription's management page (``Checkout/subscriptionSecret`` becomes the subscription's secret; before
    /// the payment the page says the subscription has not started).
    public func managementURL(for checkout: Checkout) -> String {
        let secret = checkout.subscriptionSecret.map { "&secret=\($0)" } ?? ""
        return "\(applePayBaseURL)/v1/subscriptions/manage?checkout=\(checkout.id)\(secret)"
    }

    /// Apple's `tokenNotificationURL`: `PUBLIC/apple-pay`; Apple appends `/notification/merchantToken/{eventId}`.
    public var tokenNotificationURL: String { "\(applePayBaseURL)/apple-pay" }

    /// The Apple Pay JS request for a plan checkout: the plan's special request (one per request), the total due
    /// now, no shipping and no contact fields beyond the store's billing fields.
    func planPaymentRequest(
        for checkout: Checkout, product: Product, plan: BillingPlan, breakdown: PriceBreakdown
    ) -> PaymentRequest {
        let currency = configuration.currency
        var capabilities = configuration.merchantCapabilities.map(MerchantCapability.init(rawValue:))
        if !capabilities.contains(.supports3DS) { capabilities.insert(.supports3DS, at: 0) }
        let priceText = currency.format(product.price)
        let description = plan.description ?? product.name
        var lineItems: [PaymentSummaryItem] = []
        var request = PaymentRequest(
            countryCode: configuration.countryCode, currencyCode: configuration.currencyCode,
            supportedNetworks: configuration.supportedNetworks.map(PaymentNetwork.init(rawValue:)),
            merchantCapabilities: MerchantCapabilities(capabilities), total: breakdown.webTotal, lineItems: [])
        let start = checkout.createdAt
        /// A line item of the plan, paid at `timing`.
        func item(_ label: String, _ amount: String, _ timing: PaymentTiming) -> PaymentSummaryItem {
            var item = PaymentSummaryItem(label: label, amount: amount)
            item.paymentTiming = timing
            return item
        }
        switch plan {
        case .recurring(let recurring):
            var regular = item(product.name, priceText, .recurring)
            regular.recurringPaymentIntervalUnit = recurring.intervalUnit
            regular.recurringPaymentIntervalCount = recurring.intervalCount
            var trialItem: PaymentSummaryItem?
            var regularStart = start
            if let trial = recurring.trial {
                var trialLine = item("\(product.name) trial", currency.format(trial.price), .recurring)
                trialLine.recurringPaymentIntervalUnit = trial.intervalUnit
                trialLine.recurringPaymentIntervalCount = trial.intervalCount
                trialLine.recurringPaymentStartDate = BillingPlan.formatDate(start)
                regularStart = BillingCalendar.date(start, plus: 1, trial.intervalUnit, every: trial.intervalCount)
                trialLine.recurringPaymentEndDate = BillingPlan.formatDate(regularStart)
                trialItem = trialLine
                lineItems.append(trialLine)
            }
            regular.recurringPaymentStartDate = BillingPlan.formatDate(regularStart)
            regular.recurringPaymentEndDate = recurring.endDate.map(BillingPlan.formatDate)
            lineItems.append(regular)
            let every =
                recurring.intervalCount == 1
                ? recurring.intervalUnit.rawValue : "\(recurring.intervalCount) \(recurring.intervalUnit.rawValue)s"
            request.recurringPaymentRequest = RecurringPaymentRequest(
                paymentDescription: description, regularBilling: regular, trialBilling: trialItem,
                billingAgreement:
                    "\(configuration.storeName) charges \(priceText) \(currency.code) every \(every) from "
                    + "\(BillingPlan.formatDate(regularStart).prefix(10)) until you cancel at the management page.",
                managementURL: managementURL(for: checkout), tokenNotificationURL: tokenNotificationURL)
        case .automaticReload(let reload):
            var reloadLine = item(product.name, priceText, .automaticReload)
            reloadLine.automaticReloadPaymentThresholdAmount = currency.format(reload.thresholdAmount)
            lineItems.append(reloadLine)
            request.automaticReloadPaymentRequest = AutomaticReloadPaymentRequest(
                paymentDescription: description, automaticReloadBilling: reloadLine,
                billingAgreement:
                    "\(configuration.storeName) adds \(priceText) \(currency.code) whenever your balance falls below "
                    + "\(currency.format(reload.thresholdAmount)) \(currency.code), until you cancel.",
                managementURL: managementURL(for: checkout), tokenNotificationURL: tokenNotificationURL)
        case .deferred(let deferred):
            var deferredLine = item(product.name, priceText, .deferred)
            deferredLine.deferredPaymentDate = BillingPlan.formatDate(deferred.billingDate)
            lineItems.append(deferredLine)
            var agreement =
                "\(configuration.storeName) charges \(priceText) \(currency.code) on "
                + "\(BillingPlan.formatDate(deferred.billingDate).prefix(10))"
            if let free = deferred.freeCancellationDate {
                agreement += "; cancel free of charge until \(BillingPlan.formatDate(free))"
            }
            request.deferredPaymentRequest = DeferredPaymentRequest(
                paymentDescription: description, deferredBilling: deferredLine, billingAgreement: agreement + ".",
                managementURL: managementURL(for: checkout), tokenNotificationURL: tokenNotificationURL,
                freeCancellationDate: deferred.freeCancellationDate.map(BillingPlan.formatDate),
                freeCancellationDateTimeZone: deferred.freeCancellationDate == nil
                    ? nil : (deferred.freeCancellationTimeZone ?? "UTC"))
        }
        request.lineItems = lineItems
        request.shippingMethods = []
        request.requiredShippingContactFields = []
        request.requiredBillingContactFields = configuration.requiredBillingContactFields.map(
            ContactField.init(rawValue:))
        request.applicationData = checkout.applicationData
        return request
    }
}
