/// A shipping or billing contact: Apple Pay JS `ApplePayPaymentContact`, one flat JSON object.
///
/// Every field is optional: before authorization the sheet sends a redacted contact (locality,
/// administrative area, postal code and country only), after it the fields the request asked for.
public struct Contact: Sendable, Hashable, Codable {
    public var phoneNumber: String?
    public var emailAddress: String?
    public var givenName: String?
    public var familyName: String?
    public var phoneticGivenName: String?
    public var phoneticFamilyName: String?
    /// The street address, one line per element.
    public var addressLines: [String]?
    public var subLocality: String?
    /// The city.
    public var locality: String?
    public var postalCode: String?
    public var subAdministrativeArea: String?
    /// The state or province.
    public var administrativeArea: String?
    /// The country's name as the customer wrote it.
    public var country: String?
    /// The ISO 3166-1 alpha-2 code of the country.
    public var countryCode: String?

    public init(
        phoneNumber: String? = nil, emailAddress: String? = nil, givenName: String? = nil, familyName: String? = nil,
        phoneticGivenName: String? = nil, phoneticFamilyName: String? = nil, postalAddress: PostalAddress? = nil
    ) {
        self.phoneNumber = phoneNumber
        self.emailAddress = emailAddress
        self.givenName = givenName
        self.familyName = familyName
        self.phoneticGivenName = phoneticGivenName
        self.phoneticFamilyName = phoneticFamilyName
        self.postalAddress = postalAddress
    }

    /// The address part of the contact, or nil when it has no address field at all. Setting nil clears them.
    public var postalAddress: PostalAddress? {
        get {
            let address = PostalAddress(
                street: addressLines ?? [], subLocality: subLocality, city: locality, postalCode: postalCode,
                subAdministrativeArea: subAdministrativeArea, state: administrativeArea, country: country,
                isoCountryCode: countryCode)
            return address == PostalAddress() ? nil : address
        }
        set {
            addressLines = newValue.flatMap { $0.street.isEmpty ? nil : $0.street }
            subLocality = newValue?.subLocality
            locality = newValue?.city
            postalCode = newValue?.postalCode
            subAdministrativeArea = newValue?.subAdministrativeArea
            administrativeArea = newValue?.state
            country = newValue?.country
            countryCode = newValue?.isoCountryCode
        }
    }

    /// Whether no field at all is set.
    public var isEmpty: Bool { self == Contact() }
}

/// A postal address, in the words of `CNPostalAddress`; a view of a `Contact`'s address fields.
public struct PostalAddress: Sendable, Hashable, Codable {
    /// Street lines (Apple Pay JS `addressLines`).
    public var street: [String]
    public var subLocality: String?
    /// Apple Pay JS `locality`.
    public var city: String?
    public var postalCode: String?
    public var subAdministrativeArea: String?
    /// Apple Pay JS `administrativeArea`.
    public var state: String?
    public var country: String?
    /// Apple Pay JS `countryCode`: ISO 3166-1 alpha-2.
    public var isoCountryCode: String?

    public init(
        street: [String] = [], subLocality: String? = nil, city: String? = nil, postalCode: String? = nil,
        subAdministrativeArea: String? = nil, state: String? = nil, country: String? = nil,
        isoCountryCode: String? = nil
    ) {
        self.street = street
        self.subLocality = subLocality
        self.city = city
        self.postalCode = postalCode
        self.subAdministrativeArea = subAdministrativeArea
        self.state = state
        self.country = country
        self.isoCountryCode = isoCountryCode
    }
}
