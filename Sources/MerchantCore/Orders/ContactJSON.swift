import ApplePay
import JSONCoding

// A contact read without Codable, for the payment path: the store's contact columns (MerchantStore's StoredJSON) and
// the payment request's contacts (MerchantHTTP's PaymentRoutes). Anything but the expected shape is a
// JSONFieldReader.Mismatch, and the caller reads it with JSONDecoder.

extension JSONFieldReader {
    /// A ``Contact`` object as its synthesized `Decodable` reads it (every field optional, `null` for none, unknown
    /// members skipped); with `onlyShippingAddress`, only the six members a ``ShippingAddress`` keeps.
    package mutating func contact(onlyShippingAddress: Bool = false) throws -> Contact {
        var contact = Contact()
        if onlyShippingAddress {
            try object(keys: Self.addressKeys) { key, json in
                let value = try json.optionalString()
                switch key {
                case 0: contact.administrativeArea = value
                case 1: contact.country = value
                case 2: contact.countryCode = value
                case 3: contact.locality = value
                case 4: contact.postalCode = value
                default: contact.subAdministrativeArea = value
                }
            }
            return contact
        }
        try object(keys: Self.contactKeys) { key, json in
            if key == 0 {
                if try json.skipNull() { return }
                var lines: [String] = []
                try json.array { json in lines.append(try json.string()) }
                contact.addressLines = lines
                return
            }
            let value = try json.optionalString()
            switch key {
            case 1: contact.administrativeArea = value
            case 2: contact.country = value
            case 3: contact.countryCode = value
            case 4: contact.emailAddress = value
            case 5: contact.familyName = value
            case 6: contact.givenName = value
            case 7: contact.locality = value
            case 8: contact.phoneNumber = value
            case 9: contact.phoneticFamilyName = value
            case 10: contact.phoneticGivenName = value
            case 11: contact.postalCode = value
            case 12: contact.subAdministrativeArea = value
            default: contact.subLocality = value
            }
        }
        return contact
    }

    private static let contactKeys: [StaticString] = [
        "addressLines", "administrativeArea", "country", "countryCode", "emailAddress", "familyName", "givenName",
        "locality", "phoneNumber", "phoneticFamilyName", "phoneticGivenName", "postalCode", "subAdministrativeArea",
        "subLocality",
    ]
    private static let addressKeys: [StaticString] = [
        "administrativeArea", "country", "countryCode", "locality", "postalCode", "subAdministrativeArea",
    ]
}
