import Foundation

/// The one base URL the server is reached at from outside, without a trailing slash. Every URL the server publishes
/// is under it: the subscription `managementURL` and Apple's `tokenNotificationURL` of plan checkouts, the Wallet
/// orders web service (`PUBLIC/wallet`) and each Wallet order's `orderManagementURL` (the customer's order page,
/// `PUBLIC/orders/ID?secret=…`).
///
/// Configured with `applepay serve --public-url URL` or the file's `server.publicURL` (the old top-level
/// `publicBaseURL` key is read as its alias); a configured URL must be `https` (Apple refuses the others), with a
/// host and no query, fragment or trailing slash. Without one the server publishes its own address once bound,
/// `http://HOST:PORT`: fine for local and sandbox use, where nothing outside follows the links, but a plan checkout
/// then carries `http` URLs that Apple (and the headless sheet, which enforces Apple's rules) refuse.
public struct PublicURL: Sendable, Hashable, CustomStringConvertible {
    /// The URL, e.g. `https://shop.example.com` or `https://example.com/pay`.
    public let text: String

    /// A configured public URL.
    /// - Returns: `nil` unless `text` is an https URL with a host and no query, fragment or trailing slash.
    public init?(_ text: String) {
        guard let components = URLComponents(string: text), components.scheme == "https",
            components.host?.isEmpty == false, components.query == nil, components.fragment == nil,
            !text.hasSuffix("/")
        else { return nil }
        self.text = text
    }

    /// The server's own address: `http://HOST:PORT`, an unspecified address (`0.0.0.0`, `::`) as loopback.
    public init(serverHost host: String, port: UInt16) {
        let reachable = host == "0.0.0.0" || host.isEmpty ? "127.0.0.1" : host == "::" ? "::1" : host
        let bracketed = reachable.contains(":") ? "[\(reachable)]" : reachable
        text = "http://\(bracketed):\(port)"
    }

    /// What a problem with a configured public URL says.
    static let rule = "must be an https URL with a host and no query, fragment or trailing slash (Apple requires https)"

    /// `PUBLIC` followed by `path` (which starts with `/`).
    public func appending(_ path: String) -> String { text + path }

    /// The Wallet orders web service's URL.
    public var walletWebServiceURL: String { appending("/wallet") }

    public var description: String { text }
}
