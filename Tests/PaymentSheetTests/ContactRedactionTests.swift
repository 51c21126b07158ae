import ApplePay
import PaymentSheet
import Testing

@Suite("Contact redaction")
struct ContactRedactionTests {
    @Test("US: locality, administrative area, 5-digit ZIP, country and code; nothing else")
    func unitedStates() {
        let redacted = ContactRedaction.redacted(Fixture.jane)
        var expected = Contact()
        expected.locality = "Cupertino"
        expected.administrativeArea = "CA"
        expected.postalCode = "95014"
        expected.country = "United States"
        expected.countryCode = "US"
        #expect(redacted == expected)
        #expect(redacted.givenName == nil && redacted.emailAddress == nil && redacted.phoneNumber == nil)
        #expect(redacted.addressLines == nil)
    }

    @Test(
        "UK and Canada: the postcode loses its last three characters",
        arguments: [
            ("GB", "SW1A 2AA", "SW1A"), ("GB", "M1 1AE", "M1"), ("GB", "EC1A1BB", "EC1A"), ("CA", "K1M 1M4", "K1M"),
            ("CA", "K1M1M4", "K1M"), ("US", "95014-2083", "95014"), ("US", "10001", "10001"), ("DE", "10115", "10115"),
            ("FR", "75008", "75008"), ("AU", "2000", "2000"),
        ])
    func postcodes(country: String, postalCode: String, expected: String) {
        #expect(ContactRedaction.redactedPostalCode(postalCode, countryCode: country) == expected)
    }

    @Test("through the whole contact: UK and Canada")
    func wholeContacts() {
        #expect(ContactRedaction.redacted(Fixture.london).postalCode == "SW1A")
        #expect(ContactRedaction.redacted(Fixture.london).locality == "London")
        #expect(ContactRedaction.redacted(Fixture.ottawa).postalCode == "K1M")
        #expect(ContactRedaction.redacted(Fixture.ottawa).givenName == nil)
    }

    @Test("after authorization: only the requested fields")
    func limited() {
        let emailOnly = ContactRedaction.limited(Fixture.jane, to: [.email])
        #expect(emailOnly == Contact(emailAddress: "jane@example.com"))
        let nameAndAddress = ContactRedaction.limited(Fixture.jane, to: [.name, .postalAddress])
        #expect(nameAndAddress?.givenName == "Jane")
        #expect(nameAndAddress?.postalCode == "95014-2083")
        #expect(nameAndAddress?.addressLines == ["1 Infinite Loop"])
        #expect(nameAndAddress?.phoneNumber == nil && nameAndAddress?.emailAddress == nil)
        #expect(ContactRedaction.limited(Fixture.jane, to: []) == nil)
        #expect(ContactRedaction.limited(Fixture.jane, to: nil) == nil)
    }

    @Test("missing required fields are named")
    func missing() {
        #expect(
            ContactRedaction.missingFields(in: Fixture.jane, required: [.name, .email, .phone, .postalAddress]).isEmpty)
        #expect(
            ContactRedaction.missingFields(in: Fixture.ottawa, required: [.name, .email, .phone, .postalAddress]) == [
                .email, .phone,
            ])
        var noStreet = Fixture.jane
        noStreet.addressLines = nil
        #expect(ContactRedaction.missingFields(in: noStreet, required: [.postalAddress]) == [.postalAddress])
        #expect(ContactRedaction.missingFields(in: nil, required: [.name]) == [.name])
    }
}
