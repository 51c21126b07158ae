import ApplePay
import Foundation
import HTTPCore
import JSONCoding

/// A checkout's answer (`{"clientSecret", "id", "paymentRequest"}`) written without Codable: byte for byte what
/// ``SortedJSONEncoder`` writes, for the payment requests a catalog checkout has (networks, capabilities, total,
/// lines, shipping methods and their delivery windows, contact fields, application data, coupon). A request with
/// anything else (contacts, plan requests, token contexts, a merchant category code, extra fields) is left to the
/// encoder.
enum PaymentRequestJSON {
    /// The answer's body, or `nil` when the request is left to ``SortedJSONEncoder``.
    static func checkoutAnswer(id: String, clientSecret: String?, paymentRequest: PaymentRequest) -> Data? {
        guard isPlain(paymentRequest) else { return nil }
        var out = JSONTextWriter(capacity: 2048)
        out.openObject()
        out.member("clientSecret", clientSecret)
        out.member("id", id)
        out.key("paymentRequest")
        write(paymentRequest, to: &out)
        out.closeObject()
        return Data(out.bytes)
    }

    /// A response carrying the answer: written here when it can be, else encoded (in a debug build, checked against
    /// the encoder byte for byte).
    static func checkoutResponse<Answer: Encodable>(
        _ answer: Answer, id: String, clientSecret: String?, paymentRequest: PaymentRequest, status: Int
    ) -> HTTPResponse {
        guard let body = checkoutAnswer(id: id, clientSecret: clientSecret, paymentRequest: paymentRequest) else {
            return .encoding(answer, status: status)
        }
        #if DEBUG
            let encoded = try? SortedJSONEncoder().encode(answer)
            assert(encoded == body, "PaymentRequestJSON differs from SortedJSONEncoder")
        #endif
        return HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: body)
    }

    /// Whether the request holds only what ``write(_:to:)`` writes.
    static func isPlain(_ request: PaymentRequest) -> Bool {
        request.billingContact == nil && request.shippingContact == nil && request.recurringPaymentRequest == nil
            && request.automaticReloadPaymentRequest == nil && request.deferredPaymentRequest == nil
            && request.multiTokenContexts == nil && request.merchantCategoryCode == nil && request.otherFields.isEmpty
    }

    /// The request's members in key order (only for a request that ``isPlain(_:)``).
    private static func write(_ request: PaymentRequest, to out: inout JSONTextWriter) {
        out.openObject()
        out.member("applicationData", request.applicationData)
        out.member("countryCode", request.countryCode)
        out.member("couponCode", request.couponCode)
        out.member("currencyCode", request.currencyCode)
        if let lines = request.lineItems {
            out.key("lineItems")
            array(lines, to: &out) { item, out in write(item, to: &out) }
        }
        out.key("merchantCapabilities")
        strings(request.merchantCapabilities.values.map(\.rawValue), to: &out)
        if let fields = request.requiredBillingContactFields {
            out.key("requiredBillingContactFields")
            strings(fields.map(\.rawValue), to: &out)
        }
        if let fields = request.requiredShippingContactFields {
            out.key("requiredShippingContactFields")
            strings(fields.map(\.rawValue), to: &out)
        }
        out.member("shippingContactEditingMode", request.shippingContactEditingMode?.rawValue)
        if let methods = request.shippingMethods {
            out.key("shippingMethods")
            array(methods, to: &out) { method, out in
                out.openObject()
                out.member("amount", method.amount)
                if let range = method.dateComponentsRange {
                    out.key("dateComponentsRange")
                    out.openObject()
                    out.key("endDateComponents")
                    write(range.endDateComponents, to: &out)
                    out.key("startDateComponents")
                    write(range.startDateComponents, to: &out)
                    out.closeObject()
                }
                out.member("detail", method.detail)
                out.member("identifier", method.identifier)
                out.member("label", method.label)
                out.closeObject()
            }
        }
        out.member("shippingType", request.shippingType?.rawValue)
        if let countries = request.supportedCountries {
            out.key("supportedCountries")
            strings(countries, to: &out)
        }
        out.key("supportedNetworks")
        strings(request.supportedNetworks.map(\.rawValue), to: &out)
        out.member("supportsCouponCode", request.supportsCouponCode)
        out.key("total")
        write(request.total, to: &out)
        out.closeObject()
    }

    private static func write(_ item: PaymentSummaryItem, to out: inout JSONTextWriter) {
        out.openObject()
        out.member("amount", item.amount)
        out.member("automaticReloadPaymentThresholdAmount", item.automaticReloadPaymentThresholdAmount)
        out.member("deferredPaymentDate", item.deferredPaymentDate)
        out.member("label", item.label)
        out.member("paymentTiming", item.paymentTiming?.rawValue)
        out.member("recurringPaymentEndDate", item.recurringPaymentEndDate)
        if let count = item.recurringPaymentIntervalCount { out.member("recurringPaymentIntervalCount", Int64(count)) }
        out.member("recurringPaymentIntervalUnit", item.recurringPaymentIntervalUnit?.rawValue)
        out.member("recurringPaymentStartDate", item.recurringPaymentStartDate)
        out.member("type", item.type?.rawValue)
        out.closeObject()
    }

    private static func write(_ date: DateComponentsRange.DateComponents, to out: inout JSONTextWriter) {
        out.openObject()
        if let days = date.days { out.member("days", Int64(days)) }
        if let hours = date.hours { out.member("hours", Int64(hours)) }
        if let months = date.months { out.member("months", Int64(months)) }
        if let years = date.years { out.member("years", Int64(years)) }
        out.closeObject()
    }

    private static func strings(_ values: [String], to out: inout JSONTextWriter) {
        array(values, to: &out) { value, out in out.string(value) }
    }

    private static func array<T>(
        _ values: [T], to out: inout JSONTextWriter, _ element: (T, inout JSONTextWriter) -> Void
    ) {
        out.byte(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { out.byte(UInt8(ascii: ",")) }
            element(value, &out)
        }
        out.byte(UInt8(ascii: "]"))
    }
}
