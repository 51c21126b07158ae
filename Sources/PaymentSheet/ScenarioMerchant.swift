import ApplePay
import Foundation
import PaymentToken

/// The in-process merchant a scenario describes: prices the cart from its line items, the shipping zone of the
/// (redacted) contact, the chosen shipping method, a coupon and the zone's tax; refuses addresses outside its
/// zones and unknown or expired coupons with Apple Pay errors; can be slow; and on authorization opens the token
/// with the sandbox's keys and checks it pays the current total.
public actor ScenarioMerchant: PaymentSheetDelegate {
    private let rules: ScenarioMerchantRules
    private let currency: Currency?
    private let totalLabel: String
    private let clock: any SessionClock
    private let decryptor: PaymentTokenDecryptor?
    private var zone: ScenarioShippingZone?
    private var shippingMethod: ShippingMethod?
    private var coupon: ScenarioCoupon?
    private var total: PaymentSummaryItem
    private var applicationData: String?
    /// Whether a shipping contact has been seen (before one, the first shipping method is estimated).
    private var contactSeen = false
    /// Every outcome `didFinish` was called with (a correct sheet calls it once).
    public private(set) var finishes: [SessionOutcome] = []

    /// - Parameters:
    ///   - rules: the scenario's merchant rules.
    ///   - request: the request the sheet starts with (its total label, currency, first shipping method, coupon).
    ///   - clock: the session's clock; a late answer advances a `VirtualClock` (or sleeps on any other).
    ///   - decryptor: opens tokens (nil, or `checksToken` false: accept any token).
    public init(
        rules: ScenarioMerchantRules, request: PaymentRequest, clock: any SessionClock,
        decryptor: PaymentTokenDecryptor?
    ) {
        self.rules = rules
        self.currency = request.currency
        self.totalLabel = request.total.label
        self.clock = clock
        self.decryptor = rules.checksToken == false ? nil : decryptor
        self.shippingMethod = request.shippingMethods?.first
        self.coupon = request.couponCode.flatMap { code in
            rules.coupons?.first { $0.code.uppercased() == code.uppercased() }
        }
        self.total = request.total
        self.applicationData = request.applicationData
    }

    // MARK: Events

    public func validateMerchant(_ event: MerchantValidationEvent) async throws -> MerchantSession {
        try await delay("validatemerchant")
        let now = Int64(clock.now.timeIntervalSince1970 * 1000)
        return MerchantSession(
            .object([
                "epochTimestamp": .number(Decimal(now)), "expiresAt": .number(Decimal(now + 300_000)),
                "merchantSessionIdentifier": .string("SSH" + UUID().uuidString.replacingOccurrences(of: "-", with: "")),
                "displayName": .string(totalLabel), "nonce": .string(String(UUID().uuidString.prefix(8)).lowercased()),
            ]))
    }

    public func didSelectPaymentMethod(_ paymentMethod: PaymentMethod) async throws -> PaymentMethodUpdate {
        try await delay("paymentmethodselected")
        let (newTotal, lines) = price()
        return PaymentMethodUpdate(newTotal: newTotal, newLineItems: lines)
    }

    public func didSelectShippingContact(_ contact: Contact) async throws -> ShippingContactUpdate {
        try await delay("shippingcontactselected")
        contactSeen = true
        guard let zones = rules.shippingZones else {
            let (newTotal, lines) = price()
            return ShippingContactUpdate(newTotal: newTotal, newLineItems: lines)
        }
        guard let zone = zones.first(where: { $0.covers(contact) }) else {
            self.zone = nil
            shippingMethod = nil
            let (newTotal, lines) = price()
            let place = contact.administrativeArea.map { "\($0), " } ?? ""
            return ShippingContactUpdate(
                newTotal: newTotal, newLineItems: lines, newShippingMethods: [],
                errors: [
                    PaymentError(
                        code: .addressUnserviceable, contactField: .postalAddress,
                        message: "We do not ship to \(place)\(contact.countryCode ?? "this country").")
                ])
        }
        self.zone = zone
        if !zone.methods.contains(where: { $0.identifier == shippingMethod?.identifier }) {
            shippingMethod = zone.methods.first
        }
        var methods = zone.methods
        if let selected = shippingMethod, let index = methods.firstIndex(of: selected) {
            methods.remove(at: index)
            methods.insert(selected, at: 0)  // the first method is the one the sheet shows as selected
        }
        let (newTotal, lines) = price()
        return ShippingContactUpdate(newTotal: newTotal, newLineItems: lines, newShippingMethods: methods)
    }

    public func didSelectShippingMethod(_ method: ShippingMethod) async throws -> ShippingMethodUpdate {
        try await delay("shippingmethodselected")
        shippingMethod = zone?.methods.first { $0.identifier == method.identifier } ?? method
        let (newTotal, lines) = price()
        return ShippingMethodUpdate(newTotal: newTotal, newLineItems: lines)
    }

    public func didChangeCouponCode(_ couponCode: String) async throws -> CouponCodeUpdate {
        try await delay("couponcodechanged")
        let code = couponCode.trimmingCharacters(in: .whitespaces)
        var errors: [PaymentError] = []
        if code.isEmpty {
            coupon = nil
        } else if let found = rules.coupons?.first(where: { $0.code.uppercased() == code.uppercased() }) {
            if found.expired == true {
                coupon = nil
                errors.append(PaymentError(code: .couponCodeExpired, message: "\(found.code) has expired."))
            } else if let minimum = found.minimumTotal.flatMap({ try? Currency.parseDecimal($0) }), goods < minimum {
                coupon = nil
                errors.append(
                    PaymentError(
                        code: .couponCodeInvalid, message: "\(found.code) needs an order of \(minimum) or more."))
            } else {
                coupon = found
            }
        } else {
            coupon = nil
            errors.append(PaymentError(code: .couponCodeInvalid, message: "\(code) is not a valid code."))
        }
        let (newTotal, lines) = price()
        return CouponCodeUpdate(newTotal: newTotal, newLineItems: lines, errors: errors.isEmpty ? nil : errors)
    }

    public func didAuthorizePayment(_ payment: Payment) async throws -> PaymentAuthorizationResult {
        try await delay("paymentauthorized")
        if let zones = rules.shippingZones, let contact = payment.shippingContact, contact.postalAddress != nil,
            !zones.contains(where: { $0.covers(contact) })
        {
            return PaymentAuthorizationResult(
                status: .failure,
                errors: [
                    PaymentError(
                        code: .addressUnserviceable, contactField: .postalAddress, message: "We do not ship there.")
                ])
        }
        if let decryptor {
            do {
                let json = try JSONEncoder().encode(payment.token)
                let minor = try currency.map { try $0.minorUnits(of: total.decimalAmount ?? 0) }
                _ = try decryptor.decrypt(
                    jsonData: json,
                    expecting: PaymentTokenExpectations(
                        applicationData: applicationData.flatMap { Data(base64Encoded: $0) }.map { .bytes($0) },
                        amount: minor, currencyCode: currency?.code))
            } catch {
                return PaymentAuthorizationResult(
                    status: .failure,
                    errors: [
                        PaymentError(
                            code: .unknown, message: "The payment could not be processed (\(Self.code(of: error))).")
                    ])
            }
        }
        if rules.authorization == "failure" {
            return PaymentAuthorizationResult(
                status: .failure, errors: [PaymentError(code: .unknown, message: "The card was declined.")])
        }
        return PaymentAuthorizationResult(status: .success)
    }

    public func didFinish(_ outcome: SessionOutcome) async {
        finishes.append(outcome)
    }

    // MARK: Pricing

    private func delay(_ event: String) async throws {
        guard let seconds = rules.lateEvents?[event], seconds > 0 else { return }
        if let virtual = clock as? VirtualClock {
            await virtual.advance(by: .seconds(seconds))
        } else {
            try await clock.sleep(for: .seconds(seconds))
        }
        try Task.checkCancellation()
    }

    private var goods: Decimal {
        (rules.lineItems ?? []).reduce(Decimal(0)) { $0 + ($1.decimalAmount ?? 0) }
    }

    private func rounded(_ value: Decimal) -> Decimal {
        var input = value
        var result = Decimal()
        NSDecimalRound(&result, &input, currency?.minorUnits ?? 2, .plain)
        return result
    }

    private func format(_ value: Decimal) -> String {
        guard let currency else { return "\(value)" }
        return currency.format(rounded(value))
    }

    /// The total and line items for the current state, or (nil, nil) when the merchant has no line items.
    private func price() -> (PaymentSummaryItem?, [PaymentSummaryItem]?) {
        guard let items = rules.lineItems else { return (nil, nil) }
        var lines = items
        var sum = goods
        if let method = shippingMethod, zone != nil || rules.shippingZones == nil || !contactSeen {
            let amount = method.decimalAmount ?? 0
            lines.append(PaymentSummaryItem(label: "Shipping: \(method.label)", amount: format(amount)))
            sum += amount
        }
        var discount = Decimal(0)
        if let coupon {
            if let percent = coupon.percentOff.flatMap({ try? Currency.parseDecimal($0) }) {
                discount = rounded(goods * percent / 100)
            } else if let amount = coupon.amountOff.flatMap({ try? Currency.parseDecimal($0) }) {
                discount = min(amount, goods)
            }
            lines.append(PaymentSummaryItem(label: coupon.label ?? "Coupon \(coupon.code)", amount: format(-discount)))
            sum -= discount
        }
        if let rate = zone?.taxRate.flatMap({ try? Currency.parseDecimal($0) }), rate > 0 {
            let tax = rounded(sum * rate)  // taxable: goods − discount + shipping
            lines.append(PaymentSummaryItem(label: "Tax", amount: format(tax)))
            sum += tax
        }
        let newTotal = PaymentSummaryItem(label: totalLabel, amount: format(sum))
        total = newTotal
        return (newTotal, lines)
    }

    static func code(of error: any Error) -> String {
        if let error = error as? PaymentTokenError { return error.code.rawValue }
        return "tokenRejected"
    }
}
