import ApplePay
import Foundation

/// How the sheet anonymises a shipping contact before authorization, and trims contacts to the requested fields
/// after it.
public enum ContactRedaction {
    /// Countries whose postal code is cut to its first five characters (the ZIP without the +4).
    public static let fiveDigitPostalCodes: Set<String> = ["US"]
    /// Countries whose postal code loses its last three characters (the inward code), keeping the outward code:
    /// `SW1A 1AA` → `SW1A`, `K1A 0B1` → `K1A`.
    public static let outwardPostalCodes: Set<String> = ["GB", "CA"]

    /// The contact as the merchant sees it before authorization: locality, administrative area, the postal code
    /// cut by country (above; other countries keep it whole), country and country code. No name, street, email
    /// or phone.
    public static func redacted(_ contact: Contact) -> Contact {
        var redacted = Contact()
        redacted.locality = contact.locality
        redacted.administrativeArea = contact.administrativeArea
        redacted.country = contact.country
        redacted.countryCode = contact.countryCode
        redacted.postalCode = contact.postalCode.map { redactedPostalCode($0, countryCode: contact.countryCode) }
        return redacted
    }

    /// A postal code as it appears before authorization; see `redacted(_:)`.
    public static func redactedPostalCode(_ postalCode: String, countryCode: String?) -> String {
        let code = (countryCode ?? "").uppercased()
        let trimmed = postalCode.trimmingCharacters(in: .whitespaces)
        if fiveDigitPostalCodes.contains(code) {
            return String(trimmed.prefix(5))
        }
        if outwardPostalCodes.contains(code) {
            let kept = trimmed.dropLast(min(3, trimmed.count))
            return kept.trimmingCharacters(in: .whitespaces)
        }
        return trimmed
    }

    /// The contact with only the fields `fields` ask for (name, phoneticName, email, phone, postalAddress), or nil
    /// when no field is asked for or none is left.
    public static func limited(_ contact: Contact?, to fields: [ContactField]?) -> Contact? {
        guard let contact, let fields, !fields.isEmpty else { return nil }
        var limited = Contact()
        for field in fields {
            switch field {
            case .name:
                limited.givenName = contact.givenName
                limited.familyName = contact.familyName
            case .phoneticName:
                limited.phoneticGivenName = contact.phoneticGivenName
                limited.phoneticFamilyName = contact.phoneticFamilyName
            case .email:
                limited.emailAddress = contact.emailAddress
            case .phone:
                limited.phoneNumber = contact.phoneNumber
            case .postalAddress:
                limited.postalAddress = contact.postalAddress
            default:
                break
            }
        }
        return limited.isEmpty ? nil : limited
    }

    /// The requested fields the contact lacks, in the order asked; empty when it has them all. An address needs a
    /// street line, a locality, a country code and, where the country uses them, a postal code.
    public static func missingFields(in contact: Contact?, required fields: [ContactField]?) -> [ContactField] {
        guard let fields else { return [] }
        func present(_ text: String?) -> Bool { !(text ?? "").trimmingCharacters(in: .whitespaces).isEmpty }
        return fields.filter { field in
            switch field {
            case .name: return !(present(contact?.givenName) || present(contact?.familyName))
            case .phoneticName: return !(present(contact?.phoneticGivenName) || present(contact?.phoneticFamilyName))
            case .email: return !present(contact?.emailAddress)
            case .phone: return !present(contact?.phoneNumber)
            case .postalAddress:
                guard let contact else { return true }
                let street = (contact.addressLines ?? []).contains { present($0) }
                let needsPostalCode = !["HK", "AE"].contains(contact.countryCode ?? "")
                return
                    !(street && present(contact.locality) && present(contact.countryCode)
                    && (!needsPostalCode || present(contact.postalCode)))
            default: return false
            }
        }
    }
}
