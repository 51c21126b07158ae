import ApplePay
import Foundation
import HTTPCore
import MerchantCore
import MerchantHTTP
import PaymentSheet
import Sandbox

/// Sandbox mode only: what the page's sandbox sheet needs that a real wallet has. `GET /v1/sandbox/wallet` lists
/// test cards and saved contacts (one of them outside every shipping zone); `POST /v1/sandbox/tokens`
/// `{"checkoutId", "card"}` mints a real token with the sandbox for the checkout's current total and its
/// `applicationData`, as the device would when the customer pays: with a merchant token (MPAN) when the checkout's
/// payment request carries a recurring, automatic-reload or deferred request, a device token otherwise. Neither
/// route exists outside sandbox mode.
public struct SandboxTokens: MerchantAPIPlugin {
    let sandbox: Sandbox

    /// - Parameter sandbox: the sandbox whose keys mint the tokens.
    public init(sandbox: Sandbox) { self.sandbox = sandbox }

    public var standsInForApple: Bool { true }

    public func register(on group: inout RouterGroup, services: MerchantServices) {
        group.add(.get, "/v1/sandbox/wallet") { _, _ in wallet() }
        group.add(.post, "/v1/sandbox/tokens") { request, _ in try await mint(request, services: services) }
    }

    /// A card in the sandbox wallet, as the sheet shows it.
    struct Card: Encodable, Sendable {
        var id: String
        var displayName: String
        var network: String
        var type: String
    }

    static let cards: [(id: String, network: PaymentNetwork)] = [
        ("visa", .visa), ("mastercard", .masterCard), ("amex", .amex), ("discover", .discover),
    ]

    /// The saved contacts: the first is the default (serviceable); the last is outside every demo zone.
    static let contacts: [[String: JSONValue]] = [
        contact(
            "Jane", "Appleseed", "jane@example.com", "+1 408 555 0100", "1 Infinite Loop", "Cupertino", "CA",
            "95014", "United States", "US"),
        contact(
            "John", "Appleseed", "john@example.com", "+1 212 555 0199", "350 Fifth Avenue", "New York", "NY",
            "10118", "United States", "US"),
        contact(
            "Erika", "Mustermann", "erika@example.de", "+49 30 5550100", "Unter den Linden 1", "Berlin", "BE",
            "10117", "Germany", "DE"),
    ]

    static func contact(
        _ given: String, _ family: String, _ email: String, _ phone: String, _ street: String, _ locality: String,
        _ area: String, _ postalCode: String, _ country: String, _ countryCode: String
    ) -> [String: JSONValue] {
        [
            "givenName": .string(given), "familyName": .string(family), "emailAddress": .string(email),
            "phoneNumber": .string(phone), "addressLines": .array([.string(street)]), "locality": .string(locality),
            "administrativeArea": .string(area), "postalCode": .string(postalCode), "country": .string(country),
            "countryCode": .string(countryCode),
        ]
    }

    func wallet() -> HTTPResponse {
        struct Answer: Encodable {
            var cards: [Card]
            var contacts: [[String: JSONValue]]
            var billingContact: [String: JSONValue]
        }
        let cards = Self.cards.compactMap { entry -> Card? in
            guard let card = SandboxCard.testCard(network: entry.network) else { return nil }
            return Card(
                id: entry.id, displayName: "\(card.tokenNetworkName) ···· \(card.displayLastFour)",
                network: card.tokenNetworkName, type: card.type.rawValue)
        }
        return .encoding(Answer(cards: cards, contacts: Self.contacts, billingContact: Self.contacts[0]))
    }

    func mint(_ request: HTTPRequest, services: MerchantServices) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable {
            var checkoutId: String
            var card: String?
        }
        let body = try JSONBody.decode(Body.self, from: request)
        let network = Self.cards.first { $0.id == (body.card ?? "visa") }?.network
        guard let network, let card = SandboxCard.testCard(network: network) else {
            throw .invalidRequest("card must be one of \(Self.cards.map(\.id).joined(separator: ", ")).")
        }
        let checkout = try await storing(logger: services.logger) { () async throws(OrderStoreError) in
            try await services.store.checkout(id: body.checkoutId)
        }
        guard let checkout else { throw .checkoutNotFound(body.checkoutId) }
        let paymentRequest: PaymentRequest
        do {
            paymentRequest = try services.pricing.paymentRequest(for: checkout)
        } catch {
            throw HTTPError(error)
        }
        guard let text = paymentRequest.total.amount,
            let amount = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
        else { throw .internalError() }
        let mint = MintRequest(
            card: card, amount: amount, currencyCode: paymentRequest.currencyCode,
            applicationData: paymentRequest.applicationData.map { .base64($0) })
        let token: MintedToken
        let merchantToken = TokenIssueRequest.merchantTokenRequest(for: paymentRequest)
        do {
            if let merchantToken {
                // A recurring, automatic-reload or deferred request: Apple issues a merchant token (MPAN) and
                // registers it with the request's tokenNotificationURL (APPLE-PAY.md §7).
                token = try sandbox.mintWithMerchantToken(
                    mint, tokenNotificationURL: merchantToken.tokenNotificationURL
                ).token
            } else {
                token = try sandbox.mint(mint)
            }
        } catch {
            throw .internalError("The sandbox could not mint a token.")
        }
        struct Answer: Encodable {
            var token: MintedToken
            /// Whether the token carries a merchant token (not which: the identifier is inside the encrypted data).
            var merchantToken: Bool
        }
        var response = HTTPResponse.encoding(Answer(token: token, merchantToken: merchantToken != nil))
        response.logFields["checkoutId"] = checkout.id
        response.logFields["merchantToken"] = merchantToken != nil ? "true" : "false"
        return response
    }
}
