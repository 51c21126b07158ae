import ApplePay
import Foundation
import Testing

/// `value` with `change` made to it: a sample with a field or two altered.
func changed<Value>(_ value: Value, _ change: (inout Value) -> Void) -> Value {
    var value = value
    change(&value)
    return value
}

/// One change to a valid request, and what `validate()` should say about it.
struct RuleCase: Sendable, CustomTestStringConvertible {
    let rule: String
    /// The expected code and path; nil for a change that must stay valid.
    let code: ValidationProblem.Code?
    let path: String
    let severity: ValidationSeverity
    let change: @Sendable (inout PaymentRequest) -> Void

    static func invalid(
        _ rule: String, _ code: ValidationProblem.Code, at path: String, severity: ValidationSeverity = .error,
        _ change: @escaping @Sendable (inout PaymentRequest) -> Void
    ) -> RuleCase {
        RuleCase(rule: rule, code: code, path: path, severity: severity, change: change)
    }

    static func valid(_ rule: String, _ change: @escaping @Sendable (inout PaymentRequest) -> Void) -> RuleCase {
        RuleCase(rule: rule, code: nil, path: "", severity: .error, change: change)
    }

    var testDescription: String { rule }

    var request: PaymentRequest {
        var request = Samples.request
        change(&request)
        return request
    }
}

enum Samples {
    static let request: PaymentRequest = {
        var request = PaymentRequest(
            countryCode: "US", currencyCode: "USD", supportedNetworks: [.visa, .masterCard, .amex],
            merchantCapabilities: [.supports3DS], total: PaymentSummaryItem(label: "Example Store", amount: "12.00"))
        request.lineItems = [
            PaymentSummaryItem(label: "Subtotal", amount: "11.00"),
            PaymentSummaryItem(label: "Tax", amount: "1.00"),
        ]
        return request
    }()

    static var recurring: RecurringPaymentRequest {
        var item = PaymentSummaryItem(label: "Monthly", amount: "4.99")
        item.paymentTiming = .recurring
        item.recurringPaymentIntervalUnit = .month
        return RecurringPaymentRequest(
            paymentDescription: "Subscription", regularBilling: item, managementURL: "https://example.com/manage")
    }

    static var deferred: DeferredPaymentRequest {
        var item = PaymentSummaryItem(label: "Stay", amount: "99.00")
        item.paymentTiming = .deferred
        item.deferredPaymentDate = "2027-03-01T12:00:00.000Z"
        return DeferredPaymentRequest(
            paymentDescription: "Hotel", deferredBilling: item, managementURL: "https://example.com/booking")
    }

    static var reload: AutomaticReloadPaymentRequest {
        var item = PaymentSummaryItem(label: "Reload", amount: "25.00")
        item.paymentTiming = .automaticReload
        item.automaticReloadPaymentThresholdAmount = "5.00"
        return AutomaticReloadPaymentRequest(
            paymentDescription: "Card top-up", automaticReloadBilling: item, managementURL: "https://example.com/card")
    }

    static func contexts(_ amounts: [String]) -> [PaymentTokenContext] {
        amounts.enumerated().map {
            PaymentTokenContext(
                merchantIdentifier: "merchant.com.example.\($0.offset)", externalIdentifier: "order-\($0.offset)",
                merchantName: "Merchant \($0.offset)", amount: $0.element)
        }
    }

    static func methods(_ list: [(String, String)]) -> [ShippingMethod] {
        list.map { ShippingMethod(label: "Ship \($0.1)", detail: "3 days", amount: $0.0, identifier: $0.1) }
    }
}

let invalidCases: [RuleCase] = [
    // Codes.
    .invalid("currency code unknown", .currencyUnknown, at: "currencyCode") { $0.currencyCode = "XYZ" },
    .invalid("currency code in lower case", .currencyUnknown, at: "currencyCode") { $0.currencyCode = "usd" },
    .invalid("country code unknown (UK is not ISO)", .countryUnknown, at: "countryCode") { $0.countryCode = "UK" },
    .invalid("supported country unknown", .supportedCountryUnknown, at: "supportedCountries[1]") {
        $0.supportedCountries = ["US", "ZZ"]
    },
    .invalid("contact country unknown", .contactCountryUnknown, at: "shippingContact.countryCode") {
        var contact = Contact()
        contact.countryCode = "USA"
        $0.shippingContact = contact
    },
    // Networks and capabilities.
    .invalid("networks empty", .networksEmpty, at: "supportedNetworks") { $0.supportedNetworks = [] },
    .invalid("network unknown (wrong case)", .networkUnknown, at: "supportedNetworks[1]") {
        $0.supportedNetworks = [.visa, "mastercard"]
    },
    .invalid("network listed twice", .networkDuplicate, at: "supportedNetworks[1]", severity: .warning) {
        $0.supportedNetworks = [.visa, .visa]
    },
    .invalid("3DS missing", .capabilityMissing3DS, at: "merchantCapabilities") {
        $0.merchantCapabilities = [.supportsCredit, .supportsDebit]
    },
    .invalid("EMV alone", .capabilityMissing3DS, at: "merchantCapabilities") {
        $0.merchantCapabilities = [.supportsEMV]
        $0.supportedNetworks = [.chinaUnionPay]
    },
    .invalid(
        "EMV without China UnionPay", .capabilityEMVWithoutChinaUnionPay, at: "merchantCapabilities",
        severity: .warning
    ) { $0.merchantCapabilities = [.supports3DS, .supportsEMV] },
    .invalid("capability unknown", .capabilityUnknown, at: "merchantCapabilities[1]") {
        $0.merchantCapabilities = [.supports3DS, "supports3DS2"]
    },
    // Amounts.
    .invalid("amount not a decimal (comma)", .amountNotADecimal, at: "lineItems[1].amount") {
        $0.lineItems?[1].amount = "1,00"
    },
    .invalid("amount in exponent notation", .amountNotADecimal, at: "total.amount") { $0.total.amount = "1.2e1" },
    .invalid("amount with three decimals in USD", .amountTooManyDecimals, at: "total.amount") {
        $0.total.amount = "12.001"
    },
    .invalid("amount with decimals in JPY", .amountTooManyDecimals, at: "lineItems[0].amount") {
        $0.currencyCode = "JPY"
        $0.total.amount = "1200"
        $0.lineItems = [PaymentSummaryItem(label: "Item", amount: "1100.5")]
    },
    .invalid("amount with four decimals in KWD", .amountTooManyDecimals, at: "total.amount") {
        $0.currencyCode = "KWD"
        $0.total.amount = "1.2345"
        $0.lineItems = nil
    },
    .invalid("amount with more digits than Decimal holds", .amountOverflow, at: "total.amount") {
        $0.total.amount = String(repeating: "9", count: 40)
    },
    .invalid("final item without amount", .amountMissing, at: "lineItems[0].amount") { $0.lineItems?[0].amount = nil },
    .invalid("total without amount", .totalAmountMissing, at: "total.amount") { $0.total.amount = nil },
    .invalid("total label empty", .labelEmpty, at: "total.label") { $0.total.label = "" },
    .invalid("line item label blank", .labelEmpty, at: "lineItems[1].label") { $0.lineItems?[1].label = "  " },
    .invalid("total negative", .totalNegative, at: "total.amount") { $0.total.amount = "-0.01" },
    // Item kinds.
    .invalid("item type unknown", .itemTypeUnknown, at: "lineItems[0].type") { $0.lineItems?[0].type = "estimated" },
    .invalid("payment timing unknown", .itemTimingUnknown, at: "lineItems[0].paymentTiming") {
        $0.lineItems?[0].paymentTiming = "later"
    },
    .invalid("recurring interval unit unknown", .itemIntervalInvalid, at: "lineItems[0].recurringPaymentIntervalUnit") {
        $0.lineItems?[0].recurringPaymentIntervalUnit = "week"
    },
    .invalid("recurring interval count zero", .itemIntervalInvalid, at: "lineItems[0].recurringPaymentIntervalCount") {
        $0.lineItems?[0].recurringPaymentIntervalCount = 0
    },
    .invalid("recurring date not ISO 8601", .itemDateInvalid, at: "lineItems[0].recurringPaymentStartDate") {
        $0.lineItems?[0].recurringPaymentStartDate = "01/02/2027"
    },
    .invalid("recurring end before start", .itemDateOrder, at: "lineItems[0].recurringPaymentEndDate") {
        $0.lineItems?[0].recurringPaymentStartDate = "2027-02-01T00:00:00Z"
        $0.lineItems?[0].recurringPaymentEndDate = "2027-01-01T00:00:00Z"
    },
    .invalid("deferred item without date", .itemDeferredDateMissing, at: "lineItems[0].deferredPaymentDate") {
        $0.lineItems?[0].paymentTiming = .deferred
    },
    .invalid(
        "automatic reload item without threshold", .itemThresholdMissing,
        at: "lineItems[0].automaticReloadPaymentThresholdAmount"
    ) { $0.lineItems?[0].paymentTiming = .automaticReload },
    .invalid(
        "automatic reload threshold not a decimal", .amountNotADecimal,
        at: "automaticReloadPaymentRequest.automaticReloadBilling.automaticReloadPaymentThresholdAmount"
    ) {
        $0.automaticReloadPaymentRequest = changed(Samples.reload) {
            $0.automaticReloadBilling.automaticReloadPaymentThresholdAmount = "five"
        }
    },
    // Contacts and shipping.
    .invalid("contact field unknown", .contactFieldUnknown, at: "requiredShippingContactFields[1]") {
        $0.requiredShippingContactFields = [.postalAddress, "address"]
    },
    .invalid("shipping type unknown", .shippingTypeUnknown, at: "shippingType") { $0.shippingType = "courier" },
    .invalid("editing mode unknown", .editingModeUnknown, at: "shippingContactEditingMode") {
        $0.shippingContactEditingMode = "disabled"
    },
    .invalid("shipping method amount negative", .shippingAmountNegative, at: "shippingMethods[0].amount") {
        $0.shippingMethods = Samples.methods([("-1.00", "a")])
    },
    .invalid("shipping method amount not a decimal", .amountNotADecimal, at: "shippingMethods[1].amount") {
        $0.shippingMethods = Samples.methods([("1.00", "a"), ("free", "b")])
    },
    .invalid("shipping identifiers repeated", .shippingIdentifierDuplicate, at: "shippingMethods[2].identifier") {
        $0.shippingMethods = Samples.methods([("0.00", "std"), ("5.00", "express"), ("9.00", "std")])
    },
    .invalid("shipping label empty", .labelEmpty, at: "shippingMethods[0].label") {
        $0.shippingMethods = [ShippingMethod(label: "", detail: "", amount: "0.00", identifier: "a")]
    },
    .invalid(
        "delivery range ends before it starts", .shippingDateRangeInvalid, at: "shippingMethods[0].dateComponentsRange"
    ) {
        var method = ShippingMethod(label: "Ship", detail: "Soon", amount: "0.00", identifier: "a")
        method.dateComponentsRange = DateComponentsRange(
            startDateComponents: .init(years: 2027, months: 1, days: 9),
            endDateComponents: .init(years: 2027, months: 1, days: 3))
        $0.shippingMethods = [method]
    },
    // Recurring, automatic reload, deferred, multi-token.
    .invalid("recurring and deferred together", .paymentTypesConflict, at: "deferredPaymentRequest") {
        $0.recurringPaymentRequest = Samples.recurring
        $0.deferredPaymentRequest = Samples.deferred
    },
    .invalid("automatic reload and multi-token together", .paymentTypesConflict, at: "multiTokenContexts") {
        $0.automaticReloadPaymentRequest = Samples.reload
        $0.multiTokenContexts = Samples.contexts(["1.00"])
    },
    .invalid("token contexts add up to more than the total", .tokenContextsExceedTotal, at: "multiTokenContexts") {
        $0.multiTokenContexts = Samples.contexts(["6.00", "6.01"])
    },
    .invalid("token context amount with three decimals", .amountTooManyDecimals, at: "multiTokenContexts[0].amount") {
        $0.multiTokenContexts = Samples.contexts(["6.001"])
    },
    .invalid(
        "billing agreement over 500 characters", .billingAgreementTooLong,
        at: "recurringPaymentRequest.billingAgreement"
    ) {
        $0.recurringPaymentRequest = changed(Samples.recurring) {
            $0.billingAgreement = String(repeating: "é", count: 501)
        }
    },
    .invalid(
        "deferred billing agreement over 500", .billingAgreementTooLong, at: "deferredPaymentRequest.billingAgreement"
    ) {
        $0.deferredPaymentRequest = changed(Samples.deferred) {
            $0.billingAgreement = String(repeating: "a", count: 600)
        }
    },
    .invalid("management URL not https", .urlInvalid, at: "recurringPaymentRequest.managementURL") {
        $0.recurringPaymentRequest = changed(Samples.recurring) { $0.managementURL = "manage page" }
    },
    .invalid("payment description empty", .descriptionEmpty, at: "automaticReloadPaymentRequest.paymentDescription") {
        $0.automaticReloadPaymentRequest = changed(Samples.reload) { $0.paymentDescription = "" }
    },
    .invalid(
        "recurring regular billing amount invalid", .amountNotADecimal,
        at: "recurringPaymentRequest.regularBilling.amount"
    ) {
        $0.recurringPaymentRequest = changed(Samples.recurring) { $0.regularBilling.amount = "$4.99" }
    },
    // WebKit's rules for the special payment requests' billing items (ApplePaySession.cpp) and the total.
    .invalid(
        "regularBilling without paymentTiming recurring", .regularBillingNotRecurring,
        at: "recurringPaymentRequest.regularBilling.paymentTiming"
    ) {
        $0.recurringPaymentRequest = changed(Samples.recurring) { $0.regularBilling.paymentTiming = nil }
    },
    .invalid(
        "trialBilling without paymentTiming recurring", .trialBillingNotRecurring,
        at: "recurringPaymentRequest.trialBilling.paymentTiming"
    ) {
        $0.recurringPaymentRequest = changed(Samples.recurring) {
            $0.trialBilling = PaymentSummaryItem(label: "Trial", amount: "0.00")
        }
    },
    .invalid(
        "automaticReloadBilling without paymentTiming automaticReload", .reloadBillingNotAutomaticReload,
        at: "automaticReloadPaymentRequest.automaticReloadBilling.paymentTiming"
    ) {
        $0.automaticReloadPaymentRequest = changed(Samples.reload) {
            $0.automaticReloadBilling.paymentTiming = .recurring
        }
    },
    .invalid(
        "automaticReloadBilling without threshold, even when pending", .itemThresholdMissing,
        at: "automaticReloadPaymentRequest.automaticReloadBilling.automaticReloadPaymentThresholdAmount"
    ) {
        $0.automaticReloadPaymentRequest = changed(Samples.reload) {
            $0.automaticReloadBilling.type = .pending
            $0.automaticReloadBilling.amount = nil
            $0.automaticReloadBilling.automaticReloadPaymentThresholdAmount = nil
        }
    },
    .invalid(
        "deferredBilling without paymentTiming deferred", .deferredBillingNotDeferred,
        at: "deferredPaymentRequest.deferredBilling.paymentTiming"
    ) {
        $0.deferredPaymentRequest = changed(Samples.deferred) { $0.deferredBilling.paymentTiming = .immediate }
    },
    .invalid("pending total without amount", .totalAmountMissing, at: "total.amount") {
        $0.total = PaymentSummaryItem(label: "Taxi", amount: nil, type: .pending)
    },
    .invalid("total above the old WebKit cap", .totalAboveOldCap, at: "total.amount", severity: .warning) {
        $0.total.amount = "100000000.01"
        $0.lineItems = nil
    },
    .invalid("merchant capabilities empty", .capabilitiesEmpty, at: "merchantCapabilities") {
        $0.merchantCapabilities = []
    },
    .invalid("shipping method without detail", .shippingDetailMissing, at: "shippingMethods[0].detail") {
        $0.shippingMethods = [ShippingMethod(label: "Ship", amount: "0.00", identifier: "a")]
    },
    // Other fields.
    .invalid("merchant category code 0", .merchantCategoryCodeOutOfRange, at: "merchantCategoryCode") {
        $0.merchantCategoryCode = 0
    },
    .invalid("merchant category code 10000", .merchantCategoryCodeOutOfRange, at: "merchantCategoryCode") {
        $0.merchantCategoryCode = 10000
    },
    .invalid("merchant category code not a number", .merchantCategoryCodeOutOfRange, at: "merchantCategoryCode") {
        $0.merchantCategoryCode = MerchantCategoryCode(text: "food")
    },
    .invalid("application data not base64", .applicationDataNotBase64, at: "applicationData") {
        $0.applicationData = "not base64!"
    },
    .invalid("coupon code without coupon support", .couponCodeWithoutSupport, at: "couponCode", severity: .warning) {
        $0.couponCode = "SAVE10"
    },
]

/// The deferred request's free cancellation: a date and a time zone, both or neither, each valid. The rule, its code,
/// the field named, and the date and time zone set.
let freeCancellationCases: [RuleCase] = [
    (
        "free cancellation date without time zone", .freeCancellationIncomplete, "freeCancellationDateTimeZone",
        "2027-02-25T12:00:00Z", nil
    ),
    (
        "free cancellation time zone without date", .freeCancellationIncomplete, "freeCancellationDate", nil,
        "Europe/Paris"
    ),
    (
        "free cancellation time zone unknown", .timeZoneUnknown, "freeCancellationDateTimeZone", "2027-02-25T12:00:00Z",
        "Mars/Olympus_Mons"
    ),
    (
        "free cancellation date not ISO 8601", .freeCancellationDateInvalid, "freeCancellationDate", "next Tuesday",
        "Europe/Paris"
    ),
].map { (rule: String, code: ValidationProblem.Code, field: String, date: String?, zone: String?) in
    .invalid(rule, code, at: "deferredPaymentRequest." + field) {
        $0.deferredPaymentRequest = changed(Samples.deferred) {
            $0.freeCancellationDate = date
            $0.freeCancellationDateTimeZone = zone
        }
    }
}

let validCases: [RuleCase] = [
    .valid("the sample itself") { _ in },
    .valid("zero total (allowed since Apple Pay JS v4)") {
        $0.total.amount = "0.00"
        $0.lineItems = nil
    },
    .valid("zero total without decimals") {
        $0.total.amount = "0"
        $0.lineItems = nil
    },
    .valid("negative line item: a discount") {
        $0.lineItems?.append(PaymentSummaryItem(label: "Coupon", amount: "-2.00"))
    },
    .valid("pending item without amount") {
        $0.lineItems?.append(PaymentSummaryItem(label: "Tip", amount: nil, type: .pending))
    },
    .valid("pending total with an estimate") {
        $0.total = PaymentSummaryItem(label: "Taxi", amount: "20.00", type: .pending)
    },
    .valid("shipping method with an empty detail (present, as Safari requires)") {
        $0.shippingMethods = [ShippingMethod(label: "Pickup", detail: "", amount: "0.00", identifier: "pickup")]
    },
    .valid("pending regular billing without amount, still recurring") {
        $0.recurringPaymentRequest = changed(Samples.recurring) {
            $0.regularBilling.type = .pending
            $0.regularBilling.amount = nil
        }
    },
    .valid("recurring trial billing") {
        var recurring = Samples.recurring
        var trial = PaymentSummaryItem(label: "Trial", amount: "0.00")
        trial.paymentTiming = .recurring
        recurring.trialBilling = trial
        $0.recurringPaymentRequest = recurring
    },
    .valid("fewer decimals than allowed") { $0.total.amount = "12.5" },
    .valid("JPY whole amounts") {
        $0.currencyCode = "JPY"
        $0.total.amount = "1200"
        $0.lineItems = [PaymentSummaryItem(label: "Item", amount: "1200")]
    },
    .valid("KWD with three decimals") {
        $0.currencyCode = "KWD"
        $0.countryCode = "KW"
        $0.total.amount = "1.234"
        $0.lineItems = nil
    },
    .valid("every known network") { $0.supportedNetworks = PaymentNetwork.known },
    .valid("supported countries known") { $0.supportedCountries = ["US", "CA", "GB"] },
    .valid("EMV with 3DS and China UnionPay") {
        $0.merchantCapabilities = [.supports3DS, .supportsEMV, .supportsCredit, .supportsDebit]
        $0.supportedNetworks = [.chinaUnionPay, .visa]
    },
    .valid("instant funds out with 3DS") { $0.merchantCapabilities = [.supports3DS, .instantFundsOut] },
    .valid("known contact fields and shipping values") {
        $0.requiredShippingContactFields = ContactField.known
        $0.requiredBillingContactFields = [.postalAddress]
        $0.shippingType = .servicePickup
        $0.shippingContactEditingMode = .storePickup
    },
    .valid("editing mode written 'enabled'") { $0.shippingContactEditingMode = .enabled },
    .valid("free and paid shipping, unique identifiers, forward date range") {
        var methods = Samples.methods([("0.00", "std"), ("5.00", "express")])
        methods[1].dateComponentsRange = DateComponentsRange(
            startDateComponents: .init(years: 2027, months: 1, days: 3),
            endDateComponents: .init(years: 2027, months: 1, days: 3, hours: 12))
        $0.shippingMethods = methods
    },
    .valid("recurring alone, with dates and interval") {
        $0.recurringPaymentRequest = changed(Samples.recurring) {
            $0.regularBilling.recurringPaymentIntervalCount = 3
            $0.regularBilling.recurringPaymentStartDate = "2027-01-01"
            $0.regularBilling.recurringPaymentEndDate = "2028-01-01T00:00:00.000Z"
            $0.billingAgreement = String(repeating: "é", count: 500)
            $0.tokenNotificationURL = "https://example.com/notify"
        }
    },
    .valid("automatic reload alone") { $0.automaticReloadPaymentRequest = Samples.reload },
    .valid("deferred alone, with free cancellation date and time zone") {
        $0.deferredPaymentRequest = changed(Samples.deferred) {
            $0.freeCancellationDate = "2027-02-25T12:00:00Z"
            $0.freeCancellationDateTimeZone = "America/Los_Angeles"
        }
    },
    .valid("token contexts equal to the total") { $0.multiTokenContexts = Samples.contexts(["6.00", "6.00"]) },
    .valid("token contexts below the total") { $0.multiTokenContexts = Samples.contexts(["5.00"]) },
    .valid("merchant category code 1") { $0.merchantCategoryCode = 1 },
    .valid("merchant category code 9999") { $0.merchantCategoryCode = 9999 },
    .valid("merchant category code as a string") { $0.merchantCategoryCode = MerchantCategoryCode(text: "5812") },
    .valid("base64 application data") { $0.applicationData = Data("order 42".utf8).base64EncodedString() },
    .valid("coupon code with coupon support") {
        $0.supportsCouponCode = true
        $0.couponCode = "SAVE10"
    },
    .valid("contacts with known country codes") {
        $0.shippingContact = Contact(postalAddress: PostalAddress(city: "Paris", isoCountryCode: "FR"))
        $0.billingContact = Contact(emailAddress: "a@example.com")
    },
]

/// A request, a version, and what `validate(version:)` should say.
struct VersionCase: Sendable, CustomTestStringConvertible {
    let rule: String
    let version: Int
    let code: ValidationProblem.Code?
    let path: String
    let change: @Sendable (inout PaymentRequest) -> Void
    var testDescription: String { rule }
}

let versionCases: [VersionCase] = [
    VersionCase(rule: "version 0", version: 0, code: .versionUnsupported, path: "") { _ in },
    VersionCase(rule: "jcb below version 2", version: 1, code: .networkNeedsVersion, path: "supportedNetworks[1]") {
        $0.supportedNetworks = [.visa, .jcb]
    },
    VersionCase(rule: "jcb at version 2", version: 2, code: nil, path: "") { $0.supportedNetworks = [.visa, .jcb] },
    VersionCase(
        rule: "cartesBancaires below version 3", version: 2, code: .networkNeedsVersion, path: "supportedNetworks[0]"
    ) { $0.supportedNetworks = [.cartesBancaires] },
    VersionCase(
        rule: "phoneticName below version 3", version: 2, code: .contactFieldNeedsVersion,
        path: "requiredShippingContactFields[1]"
    ) { $0.requiredShippingContactFields = [.name, .phoneticName] },
    VersionCase(rule: "phoneticName at version 3", version: 3, code: nil, path: "") {
        $0.requiredShippingContactFields = [.name, .phoneticName]
    },
    VersionCase(
        rule: "supportedCountries below version 3 (ignored)", version: 2, code: .supportedCountriesIgnored,
        path: "supportedCountries"
    ) { $0.supportedCountries = ["US"] },
    VersionCase(rule: "the sample at version 14", version: 14, code: nil, path: "") { _ in },
]

@Suite("PaymentRequest.validate(): Apple's rules")
struct ValidationTests {
    @Test(
        "a request breaking one rule gets that rule's code at that path",
        arguments: invalidCases + freeCancellationCases)
    func invalid(rule: RuleCase) throws {
        let problems = rule.request.validate()
        let code = try #require(rule.code)
        let match = problems.first { $0.code == code && $0.path == rule.path }
        #expect(match != nil, "expected \(code) at \(rule.path), got \(problems)")
        #expect(match?.severity == rule.severity)
        #expect(problems.isValid == (rule.severity == .warning))
        #expect(match.map { !$0.message.isEmpty } == true)
    }

    @Test("a request within the rules has no problem at all", arguments: validCases)
    func valid(rule: RuleCase) {
        let problems = rule.request.validate()
        #expect(problems == [], "\(problems)")
    }

    @Test("a request breaking a version gate gets that gate's code", arguments: versionCases)
    func versions(rule: VersionCase) {
        var request = Samples.request
        rule.change(&request)
        let problems = request.validate(version: rule.version)
        if let code = rule.code {
            let match = problems.first { $0.code == code && $0.path == rule.path }
            #expect(match != nil, "expected \(code) at \(rule.path), got \(problems)")
            #expect(match?.message.isEmpty == false)
        } else {
            #expect(problems == [], "\(problems)")
        }
        // Without a version, none of the gates applies.
        #expect(!request.validate().contains { [.versionUnsupported, .networkNeedsVersion].contains($0.code) })
    }

    @Test("an update is checked as WebKit checks it: newTotal required, with an amount even when pending")
    func updates() {
        let request = Samples.request
        let noTotal = ShippingMethodUpdate(newLineItems: [PaymentSummaryItem(label: "Tax", amount: "1.00")])
        #expect(noTotal.problems(applyingTo: request).map(\.code) == [.updateNewTotalMissing])
        let pending = ShippingContactUpdate(newTotal: PaymentSummaryItem(label: "Shop", amount: nil, type: .pending))
        let found = pending.problems(applyingTo: request).map { "\($0.path) \($0.code)" }
        #expect(found == ["newTotal.amount total.amountMissing"])
        let methods = CouponCodeUpdate(
            newTotal: PaymentSummaryItem(label: "Shop", amount: "12.00"),
            newLineItems: [PaymentSummaryItem(label: "", amount: "12.00")],
            newShippingMethods: [ShippingMethod(label: "Ship", amount: "0.00", identifier: "a")])
        #expect(
            methods.problems(applyingTo: request).map { "\($0.path) \($0.code)" } == [
                "newLineItems[0].label label.empty", "newShippingMethods[0].detail shippingMethod.detailMissing",
            ])
        let good = PaymentMethodUpdate(newTotal: PaymentSummaryItem(label: "Shop", amount: "12.00"))
        #expect(good.problems(applyingTo: request) == [])
        let errors = ShippingContactUpdate(
            newTotal: PaymentSummaryItem(label: "Shop", amount: "12.00"),
            errors: [
                PaymentError(code: .shippingContactInvalid, contactField: .postalCode),
                PaymentError(code: "addressUnservicable", contactField: "zip"),
            ])
        #expect(
            errors.problems(applyingTo: request).map { "\($0.path) \($0.code)" } == [
                "errors[1].code error.codeUnknown", "errors[1].contactField error.contactFieldUnknown",
            ])
    }

    @Test("an authorization result's orderDetails.webServiceURL must be a URL")
    func authorizationResult() {
        func result(_ url: String) -> PaymentAuthorizationResult {
            PaymentAuthorizationResult(
                status: .success,
                orderDetails: PaymentOrderDetails(
                    orderTypeIdentifier: "order.com.example", orderIdentifier: "1", webServiceURL: url,
                    authenticationToken: String(repeating: "a", count: 32)))
        }
        #expect(result("https://shop.example/wallet").validate() == [])
        #expect(result("not a url").validate().map(\.code) == [.orderDetailsURLInvalid])
        #expect(result("").validate().map(\.path) == ["orderDetails.webServiceURL"])
        #expect(PaymentAuthorizationResult(status: .failure).validate() == [])
        #expect(
            PaymentAuthorizationResult(status: .failure, errors: [PaymentError(code: "cardDeclined")]).validate()
                .map(\.code) == [.errorCodeUnknown])
    }

    @Test("every rule code is exercised by at least one invalid case")
    func everyCodeCovered() {
        let covered = Set(
            (invalidCases + freeCancellationCases).compactMap(\.code) + versionCases.compactMap(\.code)
        ).union([
            .updateNewTotalMissing, .orderDetailsURLInvalid,  // updates() and authorizationResult()
            .errorCodeUnknown, .errorContactFieldUnknown,
        ])
        let shape: Set<ValidationProblem.Code> = [
            .jsonNotAnObject, .jsonMissingField, .jsonWrongType, .jsonInvalidValue, .unknownField,
        ]
        let missing = ValidationProblem.Code.known.filter { !covered.contains($0) && !shape.contains($0) }
        #expect(missing == [])
    }

    @Test("every problem is reported at once, in field order")
    func allAtOnce() throws {
        let data = try RequestFixtures.data("invalid.json")
        let problems = try PaymentRequest.problems(decodingJSON: data)
        let found = problems.map { "\($0.path) \($0.code)" }
        #expect(
            found == [
                "countryCode country.unknown",
                "currencyCode currency.unknown",
                "supportedNetworks[1] networks.unknown",
                "merchantCapabilities capabilities.missing3DS",
                "merchantCapabilities capabilities.emvWithoutChinaUnionPay",
                "total.amount total.negative",
                "lineItems[1].label label.empty",
                "lineItems[2].amount amount.notADecimal",
            ])
        #expect(problems.first { $0.code == .currencyUnknown }?.message.contains("upper case: \"USD\"") == true)
        #expect(problems.first { $0.code == .networkUnknown }?.message.contains("masterCard") == true)
    }

    @Test("problems encode as {path, code, severity, message}")
    func problemJSON() throws {
        let problem = ValidationProblem(path: "total.amount", code: .totalNegative, severity: .error, message: "m")
        let json = try JSONValue(parsing: JSONEncoder().encode(problem))
        #expect(
            json
                == .object([
                    "path": .string("total.amount"), "code": .string("total.negative"), "severity": .string("error"),
                    "message": .string("m"),
                ]))
    }
}
