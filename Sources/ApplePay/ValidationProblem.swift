/// How bad a problem is: an `error` makes Apple refuse the request (or the sheet fail), a `warning` is
/// legal but probably not what the merchant meant.
public enum ValidationSeverity: String, Sendable, Hashable, Codable, CaseIterable {
    case error
    case warning
}

/// Field paths as problems and errors name them: `lineItems[2].amount`.
public enum FieldPath {
    /// A decoder's coding path as a field path: keys joined with `.`, array indices as `[n]`; empty for the top.
    public static func text(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text
    }
}

/// One broken rule in a payment request, with where it is and what to do about it.
public struct ValidationProblem: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The field's path in the request's JSON, for example `lineItems[2].amount` or `total.amount`;
    /// empty for the request as a whole.
    public var path: String
    /// A stable machine-readable code, for example `amount.tooManyDecimals`.
    public var code: Code
    public var severity: ValidationSeverity
    /// A sentence a developer can act on.
    public var message: String

    public init(path: String, code: Code, severity: ValidationSeverity, message: String) {
        self.path = path
        self.code = code
        self.severity = severity
        self.message = message
    }

    public var description: String { "\(severity) \(code) at \(path.isEmpty ? "(request)" : path): \(message)" }

    /// The stable codes `PaymentRequest.validate()` reports.
    public struct Code: OpenStringEnumeration {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        // Shape of the JSON document (from `PaymentRequest.problems(decodingJSON:)`).
        /// The top level is not a JSON object.
        public static let jsonNotAnObject: Code = "json.notAnObject"
        /// A required member is missing.
        public static let jsonMissingField: Code = "json.missingField"
        /// A member has the wrong JSON type (a number where a string belongs, ...).
        public static let jsonWrongType: Code = "json.wrongType"
        /// A member's value cannot be read at all.
        public static let jsonInvalidValue: Code = "json.invalidValue"
        /// A member this model does not know (a typo, or a field newer than this tool). Warning.
        public static let unknownField: Code = "request.unknownField"

        // Versions (`validate(version:)`).
        /// Version 0, or another version WebKit does not support.
        public static let versionUnsupported: Code = "version.unsupported"
        /// `jcb` below version 2, `carteBancaire` below 3.
        public static let networkNeedsVersion: Code = "networks.needsVersion"
        /// `phoneticName` below version 3.
        public static let contactFieldNeedsVersion: Code = "contactField.needsVersion"
        /// `supportedCountries` below version 3 (ignored by WebKit). Warning.
        public static let supportedCountriesIgnored: Code = "supportedCountries.ignored"

        // Codes and lists.
        public static let currencyUnknown: Code = "currency.unknown"
        public static let countryUnknown: Code = "country.unknown"
        public static let supportedCountryUnknown: Code = "supportedCountries.unknown"
        public static let contactCountryUnknown: Code = "contact.countryUnknown"
        public static let networksEmpty: Code = "networks.empty"
        public static let networkUnknown: Code = "networks.unknown"
        /// Warning.
        public static let networkDuplicate: Code = "networks.duplicate"
        /// An empty `merchantCapabilities`.
        public static let capabilitiesEmpty: Code = "capabilities.empty"
        public static let capabilityUnknown: Code = "capabilities.unknown"
        public static let capabilityMissing3DS: Code = "capabilities.missing3DS"
        /// Warning.
        public static let capabilityEMVWithoutChinaUnionPay: Code = "capabilities.emvWithoutChinaUnionPay"
        public static let contactFieldUnknown: Code = "contactField.unknown"
        public static let shippingTypeUnknown: Code = "shippingType.unknown"
        public static let editingModeUnknown: Code = "shippingContactEditingMode.unknown"

        // Amounts and summary items.
        public static let amountMissing: Code = "amount.missing"
        public static let amountNotADecimal: Code = "amount.notADecimal"
        public static let amountTooManyDecimals: Code = "amount.tooManyDecimals"
        public static let amountOverflow: Code = "amount.overflow"
        public static let labelEmpty: Code = "label.empty"
        public static let totalNegative: Code = "total.negative"
        /// A total without an amount, pending or not.
        public static let totalAmountMissing: Code = "total.amountMissing"
        /// A total above 100000000, which older WebKit refused. Warning.
        public static let totalAboveOldCap: Code = "total.aboveOldCap"
        public static let itemTypeUnknown: Code = "item.typeUnknown"
        public static let itemTimingUnknown: Code = "item.paymentTimingUnknown"
        public static let itemIntervalInvalid: Code = "item.intervalInvalid"
        public static let itemDateInvalid: Code = "item.dateInvalid"
        public static let itemDateOrder: Code = "item.dateOrder"
        public static let itemDeferredDateMissing: Code = "item.deferredDateMissing"
        public static let itemThresholdMissing: Code = "item.thresholdMissing"

        // Shipping methods.
        public static let shippingAmountNegative: Code = "shippingMethod.negativeAmount"
        public static let shippingIdentifierDuplicate: Code = "shippingMethod.duplicateIdentifier"
        public static let shippingDateRangeInvalid: Code = "shippingMethod.dateRangeInvalid"
        /// A shipping method without `detail` (required in WebKit's IDL).
        public static let shippingDetailMissing: Code = "shippingMethod.detailMissing"

        // Recurring, automatic reload, deferred, multi-token.
        public static let paymentTypesConflict: Code = "request.conflictingPaymentTypes"
        /// `regularBilling` whose `paymentTiming` is not `recurring`.
        public static let regularBillingNotRecurring: Code = "recurring.regularBillingNotRecurring"
        /// `trialBilling` whose `paymentTiming` is not `recurring`.
        public static let trialBillingNotRecurring: Code = "recurring.trialBillingNotRecurring"
        /// `automaticReloadBilling` whose `paymentTiming` is not `automaticReload`.
        public static let reloadBillingNotAutomaticReload: Code = "automaticReload.billingNotAutomaticReload"
        /// `deferredBilling` whose `paymentTiming` is not `deferred`.
        public static let deferredBillingNotDeferred: Code = "deferred.billingNotDeferred"
        public static let tokenContextsExceedTotal: Code = "multiTokenContexts.exceedTotal"
        public static let freeCancellationIncomplete: Code = "deferred.freeCancellationIncomplete"
        public static let freeCancellationDateInvalid: Code = "deferred.freeCancellationDateInvalid"
        public static let timeZoneUnknown: Code = "deferred.timeZoneUnknown"
        public static let billingAgreementTooLong: Code = "billingAgreement.tooLong"
        public static let urlInvalid: Code = "url.invalid"
        public static let descriptionEmpty: Code = "paymentDescription.empty"

        // Merchant updates and authorization results.
        /// An update without `newTotal` (required in WebKit's `ApplePayDetailsUpdateBase`).
        public static let updateNewTotalMissing: Code = "update.newTotalMissing"
        /// An `ApplePayError` whose `code` is not one of Apple's.
        public static let errorCodeUnknown: Code = "error.codeUnknown"
        /// An `ApplePayError` whose `contactField` is not one of Apple's.
        public static let errorContactFieldUnknown: Code = "error.contactFieldUnknown"
        /// `orderDetails.webServiceURL` that is not a URL.
        public static let orderDetailsURLInvalid: Code = "orderDetails.webServiceURLInvalid"

        // Other fields.
        public static let merchantCategoryCodeOutOfRange: Code = "merchantCategoryCode.outOfRange"
        public static let applicationDataNotBase64: Code = "applicationData.notBase64"
        /// Warning.
        public static let couponCodeWithoutSupport: Code = "couponCode.withoutSupport"

        public static let known: [Code] = [
            .jsonNotAnObject, .jsonMissingField, .jsonWrongType, .jsonInvalidValue, .unknownField,
            .versionUnsupported, .networkNeedsVersion, .contactFieldNeedsVersion, .supportedCountriesIgnored,
            .capabilitiesEmpty, .totalAmountMissing, .totalAboveOldCap, .shippingDetailMissing,
            .regularBillingNotRecurring, .trialBillingNotRecurring, .reloadBillingNotAutomaticReload,
            .deferredBillingNotDeferred, .updateNewTotalMissing, .orderDetailsURLInvalid, .errorCodeUnknown,
            .errorContactFieldUnknown, .currencyUnknown,
            .countryUnknown, .supportedCountryUnknown, .contactCountryUnknown, .networksEmpty,
            .networkUnknown, .networkDuplicate, .capabilityUnknown, .capabilityMissing3DS,
            .capabilityEMVWithoutChinaUnionPay, .contactFieldUnknown, .shippingTypeUnknown, .editingModeUnknown,
            .amountMissing, .amountNotADecimal, .amountTooManyDecimals, .amountOverflow, .labelEmpty,
            .totalNegative, .itemTypeUnknown, .itemTimingUnknown, .itemIntervalInvalid, .itemDateInvalid,
            .itemDateOrder, .itemDeferredDateMissing, .itemThresholdMissing, .shippingAmountNegative,
            .shippingIdentifierDuplicate, .shippingDateRangeInvalid, .paymentTypesConflict,
            .tokenContextsExceedTotal, .freeCancellationIncomplete, .freeCancellationDateInvalid, .timeZoneUnknown,
            .billingAgreementTooLong, .urlInvalid, .descriptionEmpty, .merchantCategoryCodeOutOfRange,
            .applicationDataNotBase64, .couponCodeWithoutSupport,
        ]
    }
}

extension [ValidationProblem] {
    /// Whether none of the problems is an error (warnings allowed).
    public var isValid: Bool { !contains { $0.severity == .error } }

    /// Only the errors.
    public var errors: [ValidationProblem] { filter { $0.severity == .error } }
}
