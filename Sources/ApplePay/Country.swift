/// An ISO 3166-1 country: its alpha-2 code (as Apple Pay uses), alpha-3 code, numeric code and name.
public struct Country: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The alpha-2 code, for example `US`.
    public let code: String
    /// The alpha-3 code, for example `USA`.
    public let alpha3: String
    /// The numeric code as three digits, for example `840`.
    public let numericCode: String
    /// The country's common English name.
    public let name: String

    /// The country with this alpha-2 code (upper case, as ISO and Apple write it), or nil.
    public init?(code: String) {
        guard let index = Country.byCode[code] else { return nil }
        let row = Country.table[index]
        self.code = row.code
        alpha3 = row.alpha3
        numericCode = row.numeric
        name = row.name
    }

    /// Whether the alpha-2 code is an officially assigned ISO 3166-1 code.
    public static func isKnown(_ code: String) -> Bool { byCode[code] != nil }

    /// Every country in the table, sorted by alpha-2 code.
    public static var all: [Country] { table.compactMap { Country(code: $0.code) } }

    public var description: String { code }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let country = Country(code: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "'\(text)' is not an ISO 3166-1 alpha-2 country code")
        }
        self = country
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(code)
    }

    private static let byCode: [String: Int] = Dictionary(
        uniqueKeysWithValues: table.enumerated().map { ($0.element.code, $0.offset) })
}
