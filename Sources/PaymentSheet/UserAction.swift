import ApplePay

/// What the user does on the sheet, in a script.
public enum UserAction: Sendable, Hashable, CustomStringConvertible {
    /// Picks (or types) a shipping contact; the merchant sees it redacted.
    case selectShippingContact(Contact)
    /// Picks one of the shipping methods the sheet shows, by identifier.
    case selectShippingMethod(identifier: String)
    /// Picks a card, by its wallet identifier (its display name unless set otherwise).
    case selectCard(identifier: String)
    /// Types a coupon code (an empty code removes the coupon).
    case enterCouponCode(String)
    /// Double-clicks / Face ID: authorizes the payment.
    case authorize
    /// Dismisses the sheet.
    case cancel

    /// The action's name as scenarios write it.
    public var name: String {
        switch self {
        case .selectShippingContact: "selectShippingContact"
        case .selectShippingMethod: "selectShippingMethod"
        case .selectCard: "selectCard"
        case .enterCouponCode: "enterCouponCode"
        case .authorize: "authorize"
        case .cancel: "cancel"
        }
    }

    public var description: String {
        switch self {
        case .selectShippingContact: "selectShippingContact"
        case .selectShippingMethod(let identifier): "selectShippingMethod(\(identifier))"
        case .selectCard(let identifier): "selectCard(\(identifier))"
        case .enterCouponCode(let code): "enterCouponCode(\(code))"
        case .authorize: "authorize"
        case .cancel: "cancel"
        }
    }
}
