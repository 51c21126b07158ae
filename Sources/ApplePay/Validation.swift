import Foundation
import Foundations

extension PaymentRequest {
    /// Every way the request breaks Apple's rules, all at once, in field order. Empty (or warnings only) means
    /// Apple Pay will accept it.
    ///
    /// To check a merchant's answer to a sheet event, use `update.problems(applyingTo: request)` (or validate
    /// `request.applying(update)`).
    /// - Parameter version: the Apple Pay JS version the page creates its session with (`new ApplePaySession(N,
    ///   request)`), when known: WebKit refuses version 0, `jcb` below 2, `carteBancaire` and `phoneticName`
    ///   below 3, and ignores `supportedCountries` below 3. nil skips these checks.
    public func validate(version: Int? = nil) -> [ValidationProblem] {
        var check = Checker(currency: Currency(code: currencyCode))
        if let version { check.version(version, self) }
        check.codes(self)
        check.capabilities(self)
        check.item(total, at: "total", isTotal: true)
        for (index, item) in (lineItems ?? []).enumerated() { check.item(item, at: "lineItems[\(index)]") }
        check.contacts(self)
        check.shipping(self)
        check.specialPayments(self)
        check.otherFields(self)
        return check.problems
    }

    /// The problems in a JSON document meant to be an `ApplePayPaymentRequest`: its shape first (a document
    /// that does not decode yields the one problem that stopped decoding), then `validate(version:)`.
    /// - Throws: `RequestDocumentError` when the bytes are not JSON at all.
    public static func problems(decodingJSON data: Data, version: Int? = nil) throws(RequestDocumentError)
        -> [ValidationProblem]
    {
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw RequestDocumentError(.notJSON, "the document is not JSON: \(JSONDiagnostics.describe(error))")
        }
        let value = try? JSONValue(parsing: data)
        guard case .object = value else {
            return [
                ValidationProblem(
                    path: "", code: .jsonNotAnObject, severity: .error,
                    message: "an ApplePayPaymentRequest is a JSON object ({...}); this document is a JSON "
                        + JSONDiagnostics.kind(of: value))
            ]
        }
        do {
            let request = try JSONDecoder().decode(PaymentRequest.self, from: data)
            return request.validate(version: version)
        } catch let error as DecodingError {
            return [JSONDiagnostics.problem(from: error)]
        } catch {
            return [
                ValidationProblem(
                    path: "", code: .jsonInvalidValue, severity: .error, message: "the request could not be read")
            ]
        }
    }
}

/// The domain of ``RequestDocumentError``: its codes are ``ErrorCode`` of it.
public enum RequestDocumentErrorDomain {}

/// A document that cannot be checked at all. Equality is on the code.
public typealias RequestDocumentError = CodedFailure<RequestDocumentErrorDomain>

/// The stable codes of ``RequestDocumentError``.
extension ErrorCode<RequestDocumentError> {
    /// The bytes are not a JSON document.
    public static var notJSON: Self { Self("notJSON") }
}

enum JSONDiagnostics {
    static func describe(_ error: any Error) -> String {
        let text = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
        return text ?? "it does not parse"
    }

    static func kind(of value: JSONValue?) -> String {
        switch value {
        case .array: "array"
        case .string: "string"
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .object, nil: "value of another kind"
        }
    }

    static func path(_ codingPath: [any CodingKey]) -> String { FieldPath.text(codingPath) }

    static func problem(from error: DecodingError) -> ValidationProblem {
        switch error {
        case .keyNotFound(let key, let context):
            let path = path(context.codingPath + [key])
            return ValidationProblem(
                path: path, code: .jsonMissingField, severity: .error,
                message: "'\(key.stringValue)' is required here; add it")
        case .typeMismatch(let type, let context):
            return ValidationProblem(
                path: path(context.codingPath), code: .jsonWrongType, severity: .error,
                message: "expected \(jsonName(of: type)) here (amounts are strings such as \"12.34\")")
        case .valueNotFound(let type, let context):
            return ValidationProblem(
                path: path(context.codingPath), code: .jsonWrongType, severity: .error,
                message: "expected \(jsonName(of: type)) here, found null")
        case .dataCorrupted(let context):
            return ValidationProblem(
                path: path(context.codingPath), code: .jsonInvalidValue, severity: .error,
                message: context.debugDescription)
        @unknown default:
            return ValidationProblem(
                path: "", code: .jsonInvalidValue, severity: .error, message: "the request could not be read")
        }
    }

    static func jsonName(of type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean (true or false)"
        case is Int.Type, is Decimal.Type, is Double.Type: "a number"
        case is [Any].Type: "an array"
        default:
            String(describing: type).hasPrefix("Array") ? "an array" : "an object"
        }
    }
}

/// Collects problems; one method per group of Apple's rules.
private struct Checker {
    typealias Code = ValidationProblem.Code
    let currency: Currency?
    var problems: [ValidationProblem] = []

    init(currency: Currency?) { self.currency = currency }

    /// The total older WebKit refused above (`PaymentRequestValidator.mm`, "Total amount is too big.").
    static let oldTotalCap = Decimal(100_000_000)

    mutating func error(_ path: String, _ code: ValidationProblem.Code, _ message: String) {
        problems.append(ValidationProblem(path: path, code: code, severity: .error, message: message))
    }

    mutating func warning(_ path: String, _ code: ValidationProblem.Code, _ message: String) {
        problems.append(ValidationProblem(path: path, code: code, severity: .warning, message: message))
    }

    // MARK: Version

    /// WebKit's version gates (`ApplePayRequestBase.cpp`, `PaymentCoordinator.cpp`, `ApplePayContactField.cpp`).
    mutating func version(_ version: Int, _ request: PaymentRequest) {
        if version < 1 {
            error("", .versionUnsupported, "Apple Pay JS version \(version) is not a supported version; use 1 or more")
            return
        }
        for (index, network) in request.supportedNetworks.enumerated() {
            let needed = network == .jcb ? 2 : [.cartesBancaires, "carteBancaire"].contains(network) ? 3 : 1
            if version < needed {
                error(
                    "supportedNetworks[\(index)]", .networkNeedsVersion,
                    "'\(network)' needs Apple Pay JS version \(needed) or later; this request is for version \(version)"
                )
            }
        }
        for (name, fields) in [
            ("requiredBillingContactFields", request.requiredBillingContactFields),
            ("requiredShippingContactFields", request.requiredShippingContactFields),
        ] {
            for (index, field) in (fields ?? []).enumerated() where field == .phoneticName && version < 3 {
                error(
                    "\(name)[\(index)]", .contactFieldNeedsVersion,
                    "phoneticName needs Apple Pay JS version 3 or later; this request is for version \(version)")
            }
        }
        if request.supportedCountries != nil && version < 3 {
            warning(
                "supportedCountries", .supportedCountriesIgnored,
                "supportedCountries is ignored below Apple Pay JS version 3; every country's cards are accepted")
        }
    }

    // MARK: Codes

    mutating func codes(_ request: PaymentRequest) {
        if !Country.isKnown(request.countryCode) {
            error(
                "countryCode", .countryUnknown,
                caseHint(request.countryCode, Country.isKnown)
                    ?? "'\(request.countryCode)' is not an ISO 3166-1 alpha-2 code; use the two upper-case "
                    + "letters of the merchant's country, such as \"US\"")
        }
        if currency == nil {
            error(
                "currencyCode", .currencyUnknown,
                caseHint(request.currencyCode, Currency.isKnown)
                    ?? "'\(request.currencyCode)' is not an ISO 4217 currency code; use three upper-case letters "
                    + "such as \"USD\"")
        }
        if request.supportedNetworks.isEmpty {
            error(
                "supportedNetworks", .networksEmpty,
                "list at least one payment network, such as [\"visa\", \"masterCard\"]")
        }
        var seen: Set<PaymentNetwork> = []
        for (index, network) in request.supportedNetworks.enumerated() {
            if !network.isKnown {
                let hint = network.caseInsensitiveMatch.map { "; did you mean \"\($0)\"?" } ?? ""
                error(
                    "supportedNetworks[\(index)]", .networkUnknown,
                    "'\(network)' is not an Apple Pay network name\(hint)")
            } else if !seen.insert(network).inserted {
                warning(
                    "supportedNetworks[\(index)]", .networkDuplicate,
                    "'\(network)' is listed twice; remove the repeat (the order sets preference)")
            }
        }
        for (index, code) in (request.supportedCountries ?? []).enumerated() where !Country.isKnown(code) {
            error(
                "supportedCountries[\(index)]", .supportedCountryUnknown,
                caseHint(code, Country.isKnown) ?? "'\(code)' is not an ISO 3166-1 alpha-2 code")
        }
    }

    /// Reports a value its type does not know: "'VALUE' is not KIND; use CHOICES", the choices being the type's
    /// known values ("a, b or c") unless given.
    private mutating func known<Value: OpenStringEnumeration>(
        _ value: Value?, at path: String, _ code: Code, is kind: String, use choices: String? = nil
    ) {
        guard let value, !value.isKnown else { return }
        let names = Value.known.map(\.rawValue)
        let all = names.dropLast().joined(separator: ", ") + (names.count > 1 ? " or " : "") + (names.last ?? "")
        error(path, code, "'\(value)' is not \(kind); use \(choices ?? all)")
    }

    /// "write it in upper case" when only the letter case is wrong, else nil.
    private func caseHint(_ code: String, _ isKnown: (String) -> Bool) -> String? {
        guard code != code.uppercased(), isKnown(code.uppercased()) else { return nil }
        return "'\(code)' must be written in upper case: \"\(code.uppercased())\""
    }

    // MARK: Capabilities

    mutating func capabilities(_ request: PaymentRequest) {
        let capabilities = request.merchantCapabilities
        guard !capabilities.values.isEmpty else {
            error(
                "merchantCapabilities", .capabilitiesEmpty,
                "at least one merchant capability must be provided; Apple requires supports3DS")
            return
        }
        for (index, capability) in capabilities.values.enumerated() {
            known(capability, at: "merchantCapabilities[\(index)]", .capabilityUnknown, is: "a merchant capability")
        }
        if !capabilities.contains(.supports3DS) {
            let emvAlone = capabilities.contains(.supportsEMV)
            error(
                "merchantCapabilities", .capabilityMissing3DS,
                emvAlone
                    ? "supportsEMV alone is refused: Apple requires supports3DS in every request; add it"
                    : "Apple requires supports3DS in every request; add it")
        }
        if capabilities.contains(.supportsEMV) && !request.supportedNetworks.contains(.chinaUnionPay) {
            warning(
                "merchantCapabilities", .capabilityEMVWithoutChinaUnionPay,
                "supportsEMV is only for China UnionPay cards, and chinaUnionPay is not in supportedNetworks; "
                    + "remove supportsEMV or add chinaUnionPay")
        }
    }

    // MARK: Amounts and items

    /// Checks an amount string; returns its value when it is usable.
    @discardableResult
    mutating func amount(_ text: String, at path: String) -> Decimal? {
        do {
            if let currency {
                return try currency.parseAmount(text)
            }
            return try Currency.parseDecimal(text)
        } catch {
            switch error.code {
            case .tooManyDecimals:
                self.error(path, .amountTooManyDecimals, error.message + "; round it to at most that many")
            case .overflow:
                self.error(path, .amountOverflow, error.message)
            default:
                self.error(path, .amountNotADecimal, error.message)
            }
            return nil
        }
    }

    /// - Parameters:
    ///   - timing: the `paymentTiming` the item must have (the billing item of a special payment request).
    mutating func item(
        _ item: PaymentSummaryItem, at path: String, isTotal: Bool = false, timing: (PaymentTiming, Code)? = nil
    ) {
        if let (expected, code) = timing, (item.paymentTiming ?? .immediate) != expected {
            error(
                "\(path).paymentTiming", code,
                "this item must be a '\(expected)' line item (paymentTiming: \"\(expected)\"); it is "
                    + "'\(item.paymentTiming ?? .immediate)'")
        }
        if item.label.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            error(
                "\(path).label", .labelEmpty,
                isTotal
                    ? "the total's label is empty; write the business name the customer will see on the statement"
                    : "the label is empty; say what the line is for")
        }
        known(item.type, at: "\(path).type", .itemTypeUnknown, is: "an item type", use: "\"final\" or \"pending\"")
        if let text = item.amount {
            if let value = amount(text, at: "\(path).amount"), isTotal, value < 0 {
                error(
                    "total.amount", .totalNegative,
                    "the total is \(text); it must be zero or more (put discounts in negative line items)")
            } else if let value = try? Currency.parseDecimal(text), isTotal, value > Self.oldTotalCap {
                warning(
                    "total.amount", .totalAboveOldCap,
                    "the total is \(text); older Safari versions refuse totals above 100000000")
            }
        } else if isTotal {
            error(
                "total.amount", .totalAmountMissing,
                "the total needs an amount, even when its type is pending (Safari refuses a total without one); "
                    + "give the estimate")
        } else if !item.isPending {
            error(
                "\(path).amount", .amountMissing,
                "a final item needs an amount; add one, or set \"type\": \"pending\" if it is not known yet")
        }
        known(item.paymentTiming, at: "\(path).paymentTiming", .itemTimingUnknown, is: "a payment timing")
        known(
            item.recurringPaymentIntervalUnit, at: "\(path).recurringPaymentIntervalUnit", .itemIntervalInvalid,
            is: "an interval unit")
        if let count = item.recurringPaymentIntervalCount, count < 1 {
            error(
                "\(path).recurringPaymentIntervalCount", .itemIntervalInvalid,
                "the interval count is \(count); it must be 1 or more")
        }
        let start = date(item.recurringPaymentStartDate, at: "\(path).recurringPaymentStartDate")
        let end = date(item.recurringPaymentEndDate, at: "\(path).recurringPaymentEndDate")
        if let start, let end, end < start {
            error(
                "\(path).recurringPaymentEndDate", .itemDateOrder,
                "the recurring end date is before its start date; swap or correct them")
        }
        date(item.deferredPaymentDate, at: "\(path).deferredPaymentDate")
        if item.paymentTiming == .deferred && item.deferredPaymentDate == nil {
            error(
                "\(path).deferredPaymentDate", .itemDeferredDateMissing,
                "a deferred item needs deferredPaymentDate: the date the payment will be taken")
        }
        if let threshold = item.automaticReloadPaymentThresholdAmount {
            amount(threshold, at: "\(path).automaticReloadPaymentThresholdAmount")
        } else if item.paymentTiming == .automaticReload || timing?.0 == .automaticReload {
            error(
                "\(path).automaticReloadPaymentThresholdAmount", .itemThresholdMissing,
                "an automatic reload item needs automaticReloadPaymentThresholdAmount: the balance that "
                    + "triggers the reload")
        }
    }

    @discardableResult
    mutating func date(_ text: String?, at path: String) -> Date? {
        guard let text else { return nil }
        guard let date = parseAppleDate(text) else {
            error(
                path, .itemDateInvalid,
                "'\(text.prefix(40))' is not an ISO 8601 date; write it as JSON.stringify writes a Date, "
                    + "such as \"2026-01-31T00:00:00.000Z\"")
            return nil
        }
        return date
    }

    // MARK: Contacts

    mutating func contacts(_ request: PaymentRequest) {
        for (name, fields) in [
            ("requiredBillingContactFields", request.requiredBillingContactFields),
            ("requiredShippingContactFields", request.requiredShippingContactFields),
        ] {
            for (index, field) in (fields ?? []).enumerated() {
                known(field, at: "\(name)[\(index)]", .contactFieldUnknown, is: "a contact field")
            }
        }
        for (name, contact) in [
            ("billingContact", request.billingContact), ("shippingContact", request.shippingContact),
        ] {
            if let code = contact?.countryCode, !Country.isKnown(code) {
                error(
                    "\(name).countryCode", .contactCountryUnknown,
                    caseHint(code, Country.isKnown) ?? "'\(code)' is not an ISO 3166-1 alpha-2 code")
            }
        }
    }

    // MARK: Shipping

    mutating func shipping(_ request: PaymentRequest) {
        known(request.shippingType, at: "shippingType", .shippingTypeUnknown, is: "a shipping type")
        known(
            request.shippingContactEditingMode, at: "shippingContactEditingMode", .editingModeUnknown,
            is: "an editing mode", use: "available or storePickup")
        var identifiers: [String: Int] = [:]
        for (index, method) in (request.shippingMethods ?? []).enumerated() {
            let path = "shippingMethods[\(index)]"
            if method.label.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                error("\(path).label", .labelEmpty, "the shipping method's label is empty; name the method")
            }
            if method.detail == nil {
                error(
                    "\(path).detail", .shippingDetailMissing,
                    "a shipping method needs detail (Safari requires it); describe the method, or give \"\"")
            }
            if let value = amount(method.amount, at: "\(path).amount"), value < 0 {
                error(
                    "\(path).amount", .shippingAmountNegative,
                    "the shipping cost is \(method.amount); it must be zero or more")
            }
            if let first = identifiers[method.identifier] {
                error(
                    "\(path).identifier", .shippingIdentifierDuplicate,
                    "identifier '\(method.identifier)' is already used by shippingMethods[\(first)]; "
                        + "give every method its own")
            } else {
                identifiers[method.identifier] = index
            }
            if let range = method.dateComponentsRange {
                let parts = [range.startDateComponents, range.endDateComponents].flatMap {
                    [$0.years, $0.months, $0.days, $0.hours].compactMap { $0 }
                }
                let start = range.startDateComponents
                let end = range.endDateComponents
                let startKey = [start.years ?? 0, start.months ?? 0, start.days ?? 0, start.hours ?? 0]
                let endKey = [end.years ?? 0, end.months ?? 0, end.days ?? 0, end.hours ?? 0]
                if parts.contains(where: { $0 < 0 }) || endKey.lexicographicallyPrecedes(startKey) {
                    error(
                        "\(path).dateComponentsRange", .shippingDateRangeInvalid,
                        "the delivery range must have no negative parts and end no earlier than it starts")
                }
            }
        }
    }

    // MARK: Recurring, automatic reload, deferred, multi-token

    mutating func specialPayments(_ request: PaymentRequest) {
        let present = [
            request.recurringPaymentRequest == nil ? nil : "recurringPaymentRequest",
            request.automaticReloadPaymentRequest == nil ? nil : "automaticReloadPaymentRequest",
            request.deferredPaymentRequest == nil ? nil : "deferredPaymentRequest",
            request.multiTokenContexts == nil ? nil : "multiTokenContexts",
        ].compactMap { $0 }
        for extra in present.dropFirst() {
            error(
                extra, .paymentTypesConflict,
                "a request may carry only one of recurringPaymentRequest, automaticReloadPaymentRequest, "
                    + "deferredPaymentRequest and multiTokenContexts; it already has \(present[0])")
        }
        terms(request.recurringPaymentRequest)
        terms(request.automaticReloadPaymentRequest)
        terms(request.deferredPaymentRequest)
        if let deferred = request.deferredPaymentRequest {
            let path = DeferredPaymentRequest.field
            switch (deferred.freeCancellationDate, deferred.freeCancellationDateTimeZone) {
            case (nil, nil): break
            case (let date?, let zone?):
                if parseAppleDate(date) == nil {
                    error(
                        "\(path).freeCancellationDate", .freeCancellationDateInvalid,
                        "'\(date.prefix(40))' is not an ISO 8601 date")
                }
                if TimeZone(identifier: zone) == nil {
                    error(
                        "\(path).freeCancellationDateTimeZone", .timeZoneUnknown,
                        "'\(zone)' is not an IANA time zone; use a name such as \"America/Los_Angeles\"")
                }
            case (_?, nil):
                error(
                    "\(path).freeCancellationDateTimeZone", .freeCancellationIncomplete,
                    "freeCancellationDate is set without freeCancellationDateTimeZone; set both or neither")
            case (nil, _?):
                error(
                    "\(path).freeCancellationDate", .freeCancellationIncomplete,
                    "freeCancellationDateTimeZone is set without freeCancellationDate; set both or neither")
            }
        }
        if let contexts = request.multiTokenContexts {
            var sum = Decimal(0)
            var complete = true
            for (index, context) in contexts.enumerated() {
                if let value = amount(context.amount, at: "multiTokenContexts[\(index)].amount") {
                    sum += value
                } else {
                    complete = false
                }
            }
            if complete, let total = request.total.amount.flatMap({ try? Currency.parseDecimal($0) }), sum > total {
                error(
                    "multiTokenContexts", .tokenContextsExceedTotal,
                    "the token contexts add up to \(sum), more than the total \(total); lower them to at most "
                        + "the total")
            }
        }
    }

    /// The terms every special payment request has (description, agreement, URLs), then its billing items.
    private mutating func terms(_ request: (some SpecialPaymentTerms)?) {
        guard let request else { return }
        let path = type(of: request).field
        if request.paymentDescription.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            error(
                "\(path).paymentDescription", .descriptionEmpty,
                "paymentDescription is empty; describe the payment for the customer")
        }
        if let agreement = request.billingAgreement, agreement.count > 500 {
            error(
                "\(path).billingAgreement", .billingAgreementTooLong,
                "the billing agreement has \(agreement.count) characters; Apple allows at most 500")
        }
        url(request.managementURL, at: "\(path).managementURL")
        if let notification = request.tokenNotificationURL { url(notification, at: "\(path).tokenNotificationURL") }
        for billing in request.billings {
            item(billing.item, at: "\(path).\(billing.field)", timing: billing.timing)
        }
    }

    private mutating func url(_ text: String, at path: String) {
        guard let components = URLComponents(string: text), components.scheme?.lowercased() == "https",
            let host = components.host, !host.isEmpty
        else {
            error(path, .urlInvalid, "'\(text.prefix(80))' is not an absolute https URL")
            return
        }
    }

    // MARK: Other fields

    mutating func otherFields(_ request: PaymentRequest) {
        if let code = request.merchantCategoryCode {
            if let value = code.value, (1...9999).contains(value) {
                // A valid ISO 18245 code.
            } else {
                error(
                    "merchantCategoryCode", .merchantCategoryCodeOutOfRange,
                    "'\(code.text)' is not an ISO 18245 merchant category code; use a whole number from 1 to 9999")
            }
        }
        if let data = request.applicationData, Data(base64Encoded: data) == nil {
            error(
                "applicationData", .applicationDataNotBase64,
                "applicationData must be a base64 string; encode the bytes with base64")
        }
        if request.couponCode != nil && request.supportsCouponCode != true {
            warning(
                "couponCode", .couponCodeWithoutSupport,
                "couponCode is set but supportsCouponCode is not true, so the sheet will not show it; "
                    + "set supportsCouponCode to true")
        }
        for key in request.otherFields.keys.sorted() {
            warning(
                key, .unknownField,
                "'\(key)' is not a member of ApplePayPaymentRequest; check its spelling (it is kept as is)")
        }
    }
}

/// What the recurring, automatic reload and deferred payment requests share: the terms `terms(_:)` checks and
/// their billing line items, each with the timing it must have and the code reported when it has another.
/// A billing line item of a special payment request: its member name, the item, and the timing it must have with
/// the code reported when it has another.
typealias SpecialBilling = (field: String, item: PaymentSummaryItem, timing: (PaymentTiming, ValidationProblem.Code))

protocol SpecialPaymentTerms {
    /// The request's member of `PaymentRequest`.
    static var field: String { get }
    var paymentDescription: String { get }
    var billingAgreement: String? { get }
    var managementURL: String { get }
    var tokenNotificationURL: String? { get }
    var billings: [SpecialBilling] { get }
}

extension RecurringPaymentRequest: SpecialPaymentTerms {
    static var field: String { "recurringPaymentRequest" }
    var billings: [SpecialBilling] {
        [("regularBilling", regularBilling, (.recurring, .regularBillingNotRecurring))]
            + (trialBilling.map { [("trialBilling", $0, (.recurring, .trialBillingNotRecurring))] } ?? [])
    }
}

extension AutomaticReloadPaymentRequest: SpecialPaymentTerms {
    static var field: String { "automaticReloadPaymentRequest" }
    var billings: [SpecialBilling] {
        [("automaticReloadBilling", automaticReloadBilling, (.automaticReload, .reloadBillingNotAutomaticReload))]
    }
}

extension DeferredPaymentRequest: SpecialPaymentTerms {
    static var field: String { "deferredPaymentRequest" }
    var billings: [SpecialBilling] {
        [("deferredBilling", deferredBilling, (.deferred, .deferredBillingNotDeferred))]
    }
}
