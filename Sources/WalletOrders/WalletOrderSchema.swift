import ApplePay
import Foundation

/// `order.json` as Wallet reads it: every object of Apple's Wallet Orders schema with its fields' JSON types, which
/// are required, and their allowed values (from Apple's field tables). ``OrderPackage/verify(_:roots:at:)`` refuses
/// an order that breaks any of them, as Wallet does.
public enum WalletOrderSchema {
    /// What a value must be.
    indirect enum Shape: Sendable {
        case string(Text)
        case number(ClosedRange<Decimal>?)
        case boolean
        case array(Shape)
        case object(Object)
        /// An object chosen by the value of its `fulfillmentType`.
        case fulfillment
    }

    /// The rules of a string.
    enum Text: Sendable {
        case any
        case oneOf([String])
        case dateTime
        case duration
        case url
        case https
        case length(min: Int, max: Int)
    }

    /// An object: its fields and which are required.
    struct Object: Sendable {
        let name: String
        let fields: [(String, Shape)]
        let required: Set<String>
    }

    /// The problems of a decoded `order.json`, each as `path: what is wrong`; empty when Wallet accepts it.
    public static func problems(in order: JSONValue) -> [String] {
        var problems: [String] = []
        check(order, against: .object(Self.order), at: "", into: &problems)
        if order["webServiceURL"] != nil && order["authenticationToken"] == nil {
            problems.append("authenticationToken: required when webServiceURL is given")
        }
        if let created = order["createdAt"]?.stringValue.flatMap(parseDate),
            let updated = order["updatedAt"]?.stringValue.flatMap(parseDate), updated < created
        {
            problems.append("updatedAt: before createdAt (it equals createdAt until the first change, then grows)")
        }
        return problems
    }

    /// The problems of `order.json`'s bytes (a document that is not JSON is one problem).
    public static func problems(in data: Data) -> [String] {
        guard let value = try? JSONValue(parsing: data) else { return ["order.json is not JSON"] }
        return problems(in: value)
    }

    private static func check(_ value: JSONValue, against shape: Shape, at path: String, into problems: inout [String])
    {
        let here = path.isEmpty ? "(order)" : path
        switch (shape, value) {
        case (.string(let text), .string(let string)):
            if let problem = text.problem(string) { problems.append("\(here): \(problem)") }
        case (.number(let range), .number(let number)):
            if let range, !range.contains(number) { problems.append("\(here): \(number) is outside \(range)") }
        case (.boolean, .bool):
            break
        case (.array(let element), .array(let elements)):
            for (index, item) in elements.enumerated() {
                check(item, against: element, at: "\(path)[\(index)]", into: &problems)
            }
        case (.object(let object), .object(let members)):
            for name in object.required.sorted() where members[name] == nil {
                problems.append("\(join(path, name)): required in \(object.name)")
            }
            for (name, fieldShape) in object.fields {
                if let member = members[name] {
                    check(member, against: fieldShape, at: join(path, name), into: &problems)
                }
            }
        case (.fulfillment, .object):
            switch value["fulfillmentType"] {
            case .string("shipping")?: check(value, against: .object(shipping), at: path, into: &problems)
            case .string("pickup")?: check(value, against: .object(pickup), at: path, into: &problems)
            default: problems.append("\(join(path, "fulfillmentType")): must be shipping or pickup")
            }
        default:
            problems.append("\(here): must be \(shape.kind)")
        }
    }

    private static func join(_ path: String, _ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    static func parseDate(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    // MARK: Apple's objects (wallet-orders.md, section 2)

    private static let string = Shape.string(.any)
    private static let strings = Shape.array(.string(.any))
    private static func oneOf(_ values: String...) -> Shape { .string(.oneOf(values)) }

    static let address = Object(
        name: "Address",
        fields: [
            ("addressLines", strings), ("locality", string), ("subLocality", string), ("administrativeArea", string),
            ("subAdministrativeArea", string), ("postalCode", string),
            ("countryCode", .string(.length(min: 2, max: 2))),
        ], required: [])
    static let currencyAmount = Object(
        name: "CurrencyAmount", fields: [("amount", string), ("currency", .string(.length(min: 3, max: 3)))],
        required: ["amount", "currency"])
    static let lineItem = Object(
        name: "LineItem",
        fields: [
            ("title", string), ("quantity", .number(nil)), ("subtitle", string), ("image", string),
            ("price", .object(currencyAmount)), ("gtin", string), ("sku", string),
        ], required: ["title", "quantity"])
    static let barcode = Object(
        name: "Barcode",
        fields: [
            ("format", oneOf("qr", "pdf417", "aztec", "code128")), ("message", string), ("messageEncoding", string),
            ("altText", string),
        ], required: ["format", "message", "messageEncoding"])
    static let location = Object(
        name: "Location",
        fields: [("latitude", .number(-90...90)), ("longitude", .number(-180...180)), ("altitude", .number(nil))],
        required: ["latitude", "longitude"])
    static let merchant = Object(
        name: "Merchant",
        fields: [
            ("merchantIdentifier", string), ("displayName", string), ("url", .string(.url)),
            ("address", .object(address)), ("businessChatURL", .string(.url)), ("contactURL", .string(.url)),
            ("emailAddress", string), ("phoneNumber", string), ("logo", string),
        ], required: ["merchantIdentifier", "displayName", "url"])
    static let customer = Object(
        name: "Customer",
        fields: ["emailAddress", "familyName", "givenName", "organizationName", "phoneNumber"].map { ($0, string) },
        required: [])
    static let payment = Object(
        name: "Payment",
        fields: [
            ("total", .object(currencyAmount)),
            (
                "summaryItems",
                .array(
                    .object(
                        Object(
                            name: "Payment.SummaryItems",
                            fields: [("label", string), ("value", .object(currencyAmount))],
                            required: ["label", "value"])))
            ),
            ("transactions", .array(.object(transaction))), ("paymentMethods", strings),
            ("status", oneOf("pending", "authorized", "paid", "refunded", "declined", "voided")),
            ("applePayTransactionIdentifiers", strings),
        ], required: ["total", "status"])
    static let transaction = Object(
        name: "PaymentTransaction",
        fields: [
            ("amount", .object(currencyAmount)), ("createdAt", .string(.dateTime)),
            (
                "paymentMethod",
                .object(Object(name: "PaymentMethod", fields: [("displayName", string)], required: ["displayName"]))
            ),
            ("status", oneOf("pending", "approved", "completed", "cancelled", "failed")),
            ("transactionType", oneOf("purchase", "refund")), ("applePayTransactionIdentifier", string),
            ("receipt", string),
        ], required: ["amount", "createdAt", "paymentMethod", "status", "transactionType"])
    static let shipping = Object(
        name: "ShippingFulfillment",
        fields: [
            ("fulfillmentType", oneOf("shipping")), ("fulfillmentIdentifier", string),
            (
                "status",
                oneOf("open", "processing", "onTheWay", "outForDelivery", "delivered", "shipped", "issue", "cancelled")
            ),
            ("statusDescription", string), ("carrier", string), ("trackingNumber", string),
            ("trackingURL", .string(.url)), ("shippedAt", .string(.dateTime)),
            ("estimatedDeliveryAt", .string(.dateTime)),
            ("estimatedDeliveryWindowDuration", .string(.duration)), ("deliveredAt", .string(.dateTime)),
            ("lineItems", .array(.object(lineItem))), ("notes", string),
            (
                "recipient",
                .object(
                    Object(
                        name: "ShippingFulfillment.Recipient",
                        fields: [
                            ("address", .object(address)), ("familyName", string), ("givenName", string),
                            ("organizationName", string),
                        ], required: []))
            ),
            ("shippingType", oneOf("shipping", "delivery")),
        ], required: ["fulfillmentType", "fulfillmentIdentifier", "status"])
    static let pickup = Object(
        name: "PickupFulfillment",
        fields: [
            ("fulfillmentType", oneOf("pickup")), ("fulfillmentIdentifier", string), ("displayName", string),
            ("status", oneOf("open", "processing", "readyForPickup", "pickedUp", "issue", "cancelled")),
            ("statusDescription", string), ("address", .object(address)), ("location", .object(location)),
            ("barcode", .object(barcode)), ("pickupAt", .string(.dateTime)),
            ("pickupWindowDuration", .string(.duration)),
            ("pickedUpAt", .string(.dateTime)), ("lineItems", .array(.object(lineItem))), ("notes", string),
        ], required: ["fulfillmentType", "fulfillmentIdentifier", "displayName", "status"])
    static let returnInfo = Object(
        name: "ReturnInfo",
        fields: [
            ("returnPolicyURL", .string(.url)), ("displayCountdown", .boolean), ("returnDeadline", .string(.dateTime)),
            ("returnManagementURL", .string(.url)), ("returnPolicyDescription", string),
        ], required: ["returnPolicyURL"])
    static let orderReturn = Object(
        name: "Return",
        fields: [
            ("returnIdentifier", string),
            ("status", oneOf("open", "onTheWay", "processing", "issue", "completed", "cancelled")),
            ("statusDescription", string), ("carrier", string), ("dropOffBy", .string(.dateTime)),
            ("initiatedAt", .string(.dateTime)), ("returnedAt", .string(.dateTime)),
            ("lineItems", .array(.object(lineItem))), ("notes", string), ("returnLabel", string),
            ("returnManagementURL", .string(.url)), ("returnNumber", string),
        ], required: ["returnIdentifier", "status"])
    static let application = Object(
        name: "Application",
        fields: [("storeIdentifier", .number(nil)), ("launchURL", string), ("customProductPageIdentifier", string)],
        required: ["storeIdentifier"])
    static let orderProvider = Object(
        name: "OrderProvider",
        fields: [
            ("displayName", string), ("url", .string(.url)), ("trackingLogoNameLightColorScheme", string),
            ("trackingLogoNameDarkColorScheme", string),
        ],
        required: ["displayName", "url", "trackingLogoNameLightColorScheme", "trackingLogoNameDarkColorScheme"])
    static let order = Object(
        name: "Order",
        fields: [
            ("schemaVersion", .number(nil)), ("orderTypeIdentifier", string), ("orderIdentifier", string),
            ("orderType", oneOf("ecommerce")), ("orderNumber", string), ("createdAt", .string(.dateTime)),
            ("updatedAt", .string(.dateTime)), ("status", oneOf("open", "completed", "cancelled")),
            ("statusDescription", string), ("merchant", .object(merchant)), ("orderManagementURL", .string(.url)),
            ("customer", .object(customer)), ("lineItems", .array(.object(lineItem))),
            ("fulfillments", .array(.fulfillment)), ("payment", .object(payment)),
            ("returnInfo", .object(returnInfo)), ("returns", .array(.object(orderReturn))),
            ("barcode", .object(barcode)), ("associatedApplications", .array(.object(application))),
            ("associatedApplicationIdentifiers", strings),
            ("changeNotifications", oneOf("enabled", "disabledIfAppInstalled")),
            ("orderProvider", .object(orderProvider)), ("webServiceURL", .string(.https)),
            ("authenticationToken", .string(.length(min: 16, max: .max))),
        ],
        required: [
            "schemaVersion", "orderTypeIdentifier", "orderIdentifier", "orderType", "createdAt", "updatedAt", "status",
            "merchant", "orderManagementURL",
        ])
}

extension WalletOrderSchema.Shape {
    var kind: String {
        switch self {
        case .string: "a string"
        case .number: "a number"
        case .boolean: "a boolean"
        case .array: "an array"
        case .object(let object): "an object (\(object.name))"
        case .fulfillment: "an object (ShippingFulfillment or PickupFulfillment)"
        }
    }
}

extension WalletOrderSchema.Text {
    /// What is wrong with `text`, or nil.
    func problem(_ text: String) -> String? {
        switch self {
        case .any:
            return nil
        case .oneOf(let values):
            return values.contains(text) ? nil : "'\(text.prefix(40))' is not one of \(values.joined(separator: ", "))"
        case .dateTime:
            let rfc3339 = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$/
            guard (try? rfc3339.wholeMatch(in: text)) != nil, WalletOrderSchema.parseDate(text) != nil else {
                return "'\(text.prefix(40))' is not an RFC 3339 date-time"
            }
            return nil
        case .duration:
            let iso8601 =
                /^P(?=[0-9T])([0-9]+Y)?([0-9]+M)?([0-9]+W)?([0-9]+D)?(T(?=[0-9])([0-9]+H)?([0-9]+M)?([0-9]+(\.[0-9]+)?S)?)?$/
            return (try? iso8601.wholeMatch(in: text)) != nil ? nil : "'\(text.prefix(40))' is not an ISO 8601 duration"
        case .url:
            guard let url = URLComponents(string: text), url.scheme?.isEmpty == false, !text.contains(" ") else {
                return "'\(text.prefix(80))' is not a URL"
            }
            return nil
        case .https:
            return text.hasPrefix("https://") && URLComponents(string: text)?.host?.isEmpty == false
                ? nil : "'\(text.prefix(80))' must be an https:// URL"
        case .length(let min, let max):
            return (min...max).contains(text.count)
                ? nil : "must have \(min)\(max == .max ? " or more" : " to \(max)") characters"
        }
    }
}
