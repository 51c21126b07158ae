/// A string-valued Apple Pay JS enumeration that keeps values it does not know instead of failing to decode.
///
/// Apple adds networks, capabilities and fields over time; a request naming one this version has never heard
/// of still decodes, and `PaymentRequest.validate()` reports it.
public protocol OpenStringEnumeration:
    RawRepresentable<String>, Hashable, Sendable, Codable, ExpressibleByStringLiteral, CustomStringConvertible
{
    init(rawValue: String)
    /// Every value Apple documents, in Apple's order.
    static var known: [Self] { get }
}

extension OpenStringEnumeration {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public var description: String { rawValue }
    /// Whether Apple documents this value.
    public var isKnown: Bool { Self.known.contains(self) }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
