import Foundation

extension PaymentRequestUpdate {
    /// The problems Safari finds in this answer to a sheet event: `newTotal` must be there (WebKit's
    /// `ApplePayDetailsUpdateBase` requires it), then the request as updated is checked with every rule of
    /// ``PaymentRequest/validate(version:)`` (so `newTotal` needs an amount even when pending, is not negative, and
    /// the new line items and shipping methods follow the request's rules). Paths name the update's members
    /// (`newTotal.amount`, `newLineItems[1].label`, `newShippingMethods[0].detail`) where it replaced them. Each
    /// of `errors` must use Apple's codes and contact fields (IDL enums).
    public func problems(applyingTo request: PaymentRequest) -> [ValidationProblem] {
        var problems = paymentErrorProblems(errors ?? [])
        if newTotal == nil {
            problems.append(
                ValidationProblem(
                    path: "newTotal", code: .updateNewTotalMissing, severity: .error,
                    message: "an update must carry newTotal (Safari requires it); send the total again"))
        }
        var renamed: [(String, String)] = []
        if newTotal != nil { renamed.append(("total", "newTotal")) }
        if newLineItems != nil { renamed.append(("lineItems", "newLineItems")) }
        if newShippingMethods != nil { renamed.append(("shippingMethods", "newShippingMethods")) }
        if newRecurringPaymentRequest != nil {
            renamed.append(("recurringPaymentRequest", "newRecurringPaymentRequest"))
        }
        if newAutomaticReloadPaymentRequest != nil {
            renamed.append(("automaticReloadPaymentRequest", "newAutomaticReloadPaymentRequest"))
        }
        if newDeferredPaymentRequest != nil { renamed.append(("deferredPaymentRequest", "newDeferredPaymentRequest")) }
        if newMultiTokenContexts != nil { renamed.append(("multiTokenContexts", "newMultiTokenContexts")) }
        for var problem in request.applying(self).validate() {
            for (old, new) in renamed
            where problem.path == old || problem.path.hasPrefix(old + ".") || problem.path.hasPrefix(old + "[") {
                problem.path = new + problem.path.dropFirst(old.count)
                break
            }
            problems.append(problem)
        }
        return problems
    }
}

extension PaymentAuthorizationResult {
    /// The problems Safari finds in this answer to `onpaymentauthorized` (WebKit's
    /// `convertAndValidate(ApplePayPaymentAuthorizationResult&&)`): the status is one of Apple's (checked when it
    /// decodes), its `errors` use Apple's codes and contact fields, and `orderDetails.webServiceURL` must parse as an
    /// absolute URL.
    public func validate() -> [ValidationProblem] {
        let problems = paymentErrorProblems(errors ?? [])
        guard let details = orderDetails else { return problems }
        guard let url = URLComponents(string: details.webServiceURL), url.scheme?.isEmpty == false,
            url.host?.isEmpty == false
        else {
            return problems + [
                ValidationProblem(
                    path: "orderDetails.webServiceURL", code: .orderDetailsURLInvalid, severity: .error,
                    message: "'\(details.webServiceURL.prefix(80))' is not a URL; give the orders web service's "
                        + "absolute address")
            ]
        }
        return problems
    }
}

/// WebKit's IDL enums for `ApplePayError` (`code`, `contactField`): another string is a `TypeError`.
func paymentErrorProblems(_ errors: [PaymentError]) -> [ValidationProblem] {
    var problems: [ValidationProblem] = []
    for (index, error) in errors.enumerated() {
        if !error.code.isKnown {
            problems.append(
                ValidationProblem(
                    path: "errors[\(index)].code", code: .errorCodeUnknown, severity: .error,
                    message: "'\(error.code)' is not an ApplePayErrorCode; use shippingContactInvalid, "
                        + "billingContactInvalid, addressUnserviceable, couponCodeInvalid, couponCodeExpired or unknown"
                ))
        }
        if let field = error.contactField, !field.isKnown {
            problems.append(
                ValidationProblem(
                    path: "errors[\(index)].contactField", code: .errorContactFieldUnknown, severity: .error,
                    message: "'\(field)' is not an ApplePayErrorContactField; use postalAddress, postalCode, "
                        + "name, emailAddress, phoneNumber or another of Apple's fields"))
        }
    }
    return problems
}
