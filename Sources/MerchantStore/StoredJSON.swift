import ApplePay
import Foundation
import JSONCoding
import MerchantCore

/// The JSON columns of the payment path without Codable: order lines, shipping method and contacts (written by
/// `beginPayment`, read with every order), the checkout's state (read by every payment) and event details.
///
/// Writing gives byte for byte what ``SortedJSONEncoder`` gives (sorted keys, its string escapes, `nil` left out),
/// so a row reads the same whichever wrote it. Reading takes the one shape this store writes, over JSONCoding's
/// ``JSONReader``; any other document (an older row, a hand edit, a number with a fraction) makes it answer `nil`,
/// and the caller decodes that row with `JSONDecoder` as before, with the same result or the same error.
enum StoredJSON {
    // MARK: Writing

    /// `[{"amount","name","quantity","sku","unitPrice"}]`.
    static func text(_ lines: [OrderLine]) -> String {
        var out = JSONTextWriter()
        out.byte(UInt8(ascii: "["))
        for (index, line) in lines.enumerated() {
            if index > 0 { out.byte(UInt8(ascii: ",")) }
            out.openObject()
            out.member("amount", line.amount)
            out.member("name", line.name)
            out.member("quantity", Int64(line.quantity))
            out.member("sku", line.sku)
            out.member("unitPrice", line.unitPrice)
            out.closeObject()
        }
        out.byte(UInt8(ascii: "]"))
        return out.string
    }

    /// `{"amount","identifier","label"}`.
    static func text(_ method: OrderShippingMethod) -> String {
        var out = JSONTextWriter()
        out.openObject()
        out.member("amount", method.amount)
        out.member("identifier", method.identifier)
        out.member("label", method.label)
        out.closeObject()
        return out.string
    }

    /// A contact's fields in key order, absent ones left out.
    static func text(_ contact: Contact) -> String {
        var out = JSONTextWriter()
        out.openObject()
        if let lines = contact.addressLines {
            out.key("addressLines")
            out.byte(UInt8(ascii: "["))
            for (index, line) in lines.enumerated() {
                if index > 0 { out.byte(UInt8(ascii: ",")) }
                out.string(line)
            }
            out.byte(UInt8(ascii: "]"))
        }
        out.member("administrativeArea", contact.administrativeArea)
        out.member("country", contact.country)
        out.member("countryCode", contact.countryCode)
        out.member("emailAddress", contact.emailAddress)
        out.member("familyName", contact.familyName)
        out.member("givenName", contact.givenName)
        out.member("locality", contact.locality)
        out.member("phoneNumber", contact.phoneNumber)
        out.member("phoneticFamilyName", contact.phoneticFamilyName)
        out.member("phoneticGivenName", contact.phoneticGivenName)
        out.member("postalCode", contact.postalCode)
        out.member("subAdministrativeArea", contact.subAdministrativeArea)
        out.member("subLocality", contact.subLocality)
        out.closeObject()
        return out.string
    }

    /// An event's detail: its keys sorted as bytes, as ``SortedJSONEncoder`` sorts them.
    static func text(_ detail: [String: String]) -> String {
        var out = JSONTextWriter()
        out.openObject()
        for (key, value) in detail.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            out.key(key)
            out.string(value)
        }
        out.closeObject()
        return out.string
    }

    /// A checkout's state, or `nil` for a plan checkout that keeps payment methods (left to the encoder).
    static func text(_ checkout: Checkout) -> String? {
        guard checkout.planPaymentMethods == nil else { return nil }
        var out = JSONTextWriter(capacity: 512)
        out.openObject()
        out.member("applicationData", checkout.applicationData)
        out.member("clientSecret", checkout.clientSecret)
        out.member("couponCode", checkout.couponCode)
        // A Date is its seconds since 2001 as a Double, written as SortedJSONEncoder writes a Double.
        var seconds = checkout.createdAt.timeIntervalSinceReferenceDate.description
        if seconds.hasSuffix(".0") { seconds.removeLast(2) }
        guard checkout.createdAt.timeIntervalSinceReferenceDate.isFinite else { return nil }
        out.key("createdAt")
        for byte in seconds.utf8 { out.byte(byte) }
        out.member("currencyCode", checkout.currencyCode)
        out.member("id", checkout.id)
        out.key("items")
        out.byte(UInt8(ascii: "["))
        for (index, item) in checkout.items.enumerated() {
            if index > 0 { out.byte(UInt8(ascii: ",")) }
            out.openObject()
            out.member("quantity", Int64(item.quantity))
            out.member("sku", item.sku)
            out.closeObject()
        }
        out.byte(UInt8(ascii: "]"))
        out.member("paymentMethodNetwork", checkout.paymentMethodNetwork)
        out.member("paymentMethodType", checkout.paymentMethodType)
        if let address = checkout.shippingAddress {
            out.key("shippingAddress")
            out.openObject()
            out.member("administrativeArea", address.administrativeArea)
            out.member("country", address.country)
            out.member("countryCode", address.countryCode)
            out.member("locality", address.locality)
            out.member("postalCode", address.postalCode)
            out.member("subAdministrativeArea", address.subAdministrativeArea)
            out.closeObject()
        }
        out.member("shippingMethodIdentifier", checkout.shippingMethodIdentifier)
        out.member("subscriptionSecret", checkout.subscriptionSecret)
        out.closeObject()
        return out.string
    }

    // MARK: Reading

    /// Order lines, or `nil` when the text is not the shape ``text(_:)-([OrderLine])`` writes.
    static func orderLines(_ text: String) -> [OrderLine]? {
        JSONFieldReader.read(text) { (json: inout JSONFieldReader) throws -> [OrderLine] in
            var lines: [OrderLine] = []
            try json.array { (json: inout JSONFieldReader) throws in
                var sku: String?
                var name: String?
                var quantity: Int64?
                var unitPrice: Int64?
                var amount: Int64?
                try json.object(keys: ["amount", "name", "quantity", "sku", "unitPrice"]) { key, json in
                    switch key {
                    case 0: amount = try json.integer()
                    case 1: name = try json.string()
                    case 2: quantity = try json.integer()
                    case 3: sku = try json.string()
                    default: unitPrice = try json.integer()
                    }
                }
                guard let sku, let name, let quantity, let count = Int(exactly: quantity), let unitPrice, let amount
                else { throw JSONFieldReader.Mismatch() }
                lines.append(OrderLine(sku: sku, name: name, quantity: count, unitPrice: unitPrice, amount: amount))
            }
            return lines
        }
    }

    /// A shipping method, or `nil` for another shape.
    static func shippingMethod(_ text: String) -> OrderShippingMethod? {
        JSONFieldReader.read(text) { (json: inout JSONFieldReader) throws -> OrderShippingMethod in
            var identifier: String?
            var label: String?
            var amount: Int64?
            try json.object(keys: ["amount", "identifier", "label"]) { key, json in
                switch key {
                case 0: amount = try json.integer()
                case 1: identifier = try json.string()
                default: label = try json.string()
                }
            }
            guard let identifier, let label, let amount else { throw JSONFieldReader.Mismatch() }
            return OrderShippingMethod(identifier: identifier, label: label, amount: amount)
        }
    }

    /// A contact, or `nil` for another shape.
    static func contact(_ text: String) -> Contact? {
        JSONFieldReader.read(text) { (json: inout JSONFieldReader) throws -> Contact in
            try json.contact()
        }
    }

    /// A checkout's state, or `nil` for another shape (kept payment methods of plans included: `JSONDecoder`
    /// reads those).
    static func checkout(_ text: String) -> Checkout? {
        JSONFieldReader.read(text) { (json: inout JSONFieldReader) throws -> Checkout in
            var id: String?
            var items: [CheckoutItem]?
            var currency: Currency?
            var address: ShippingAddress?
            var method: String?
            var coupon: String?
            var methodType: String?
            var network: String?
            var applicationData: String?
            var createdAt: Double?
            var subscriptionSecret: String?
            var clientSecret: String?
            let keys: [StaticString] = [
                "applicationData", "clientSecret", "couponCode", "createdAt", "currencyCode", "id", "items",
                "paymentMethodNetwork", "paymentMethodType", "planPaymentMethods", "shippingAddress",
                "shippingMethodIdentifier", "subscriptionSecret",
            ]
            try json.object(keys: keys) { key, json in
                switch key {
                case 0: applicationData = try json.string()
                case 1: clientSecret = try json.optionalString()
                case 2: coupon = try json.optionalString()
                case 3: createdAt = try json.double()
                case 4:
                    guard let found = Currency(code: try json.string()) else { throw JSONFieldReader.Mismatch() }
                    currency = found
                case 5: id = try json.string()
                case 6:
                    var list: [CheckoutItem] = []
                    try json.array { (json: inout JSONFieldReader) throws in
                        var sku: String?
                        var quantity: Int64?
                        try json.object(keys: ["quantity", "sku"]) { key, json in
                            if key == 0 { quantity = try json.integer() } else { sku = try json.string() }
                        }
                        guard let sku, let quantity, let count = Int(exactly: quantity) else {
                            throw JSONFieldReader.Mismatch()
                        }
                        list.append(CheckoutItem(sku: sku, quantity: count))
                    }
                    items = list
                case 7: network = try json.optionalString()
                case 8: methodType = try json.optionalString()
                case 9: try json.null()
                case 10:
                    if try json.skipNull() { break }
                    address = ShippingAddress(redacting: try json.contact(onlyShippingAddress: true))
                case 11: method = try json.optionalString()
                default: subscriptionSecret = try json.optionalString()
                }
            }
            guard let id, let items, let currency, let applicationData, let createdAt, createdAt.isFinite else {
                throw JSONFieldReader.Mismatch()
            }
            var checkout = Checkout(
                id: id, items: items, currency: currency, shippingAddress: address, shippingMethodIdentifier: method,
                couponCode: coupon, paymentMethodType: methodType, paymentMethodNetwork: network,
                applicationData: applicationData, createdAt: Date(timeIntervalSinceReferenceDate: createdAt))
            checkout.subscriptionSecret = subscriptionSecret
            checkout.clientSecret = clientSecret
            return checkout
        }
    }

    /// An event's or a discrepancy's detail, or `nil` for another shape.
    static func stringMap(_ text: String) -> [String: String]? {
        JSONFieldReader.read(text) { (json: inout JSONFieldReader) throws -> [String: String] in
            try json.stringMap()
        }
    }
}
