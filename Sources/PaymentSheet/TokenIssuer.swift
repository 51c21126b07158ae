import ApplePay
import Foundation
import Sandbox

/// What the sheet asks the issuer for when the user authorizes.
public struct TokenIssueRequest: Sendable {
    public var card: WalletCard
    /// The current total's amount, in `currencyCode`.
    public var amount: Decimal
    public var currencyCode: String
    /// The request's `applicationData` (base64, as Apple Pay JS carries it).
    public var applicationData: String?
    /// The signing time.
    public var now: Date
    /// Set when the request carries a recurring, automatic-reload or deferred request: the issuer then issues a
    /// merchant token (MPAN) instead of a device token.
    public var merchantToken: MerchantTokenRequest?

    /// What a merchant token is issued for: the request's `tokenNotificationURL`, if any.
    public struct MerchantTokenRequest: Sendable, Equatable {
        public var tokenNotificationURL: String?
        public init(tokenNotificationURL: String?) { self.tokenNotificationURL = tokenNotificationURL }
    }

    public init(
        card: WalletCard, amount: Decimal, currencyCode: String, applicationData: String?, now: Date,
        merchantToken: MerchantTokenRequest? = nil
    ) {
        self.merchantToken = merchantToken
        self.card = card
        self.amount = amount
        self.currencyCode = currencyCode
        self.applicationData = applicationData
        self.now = now
    }
}

extension TokenIssueRequest {
    /// The merchant token a request asks for: one whenever it carries `recurringPaymentRequest`,
    /// `automaticReloadPaymentRequest` or `deferredPaymentRequest` (APPLE-PAY.md §7), `nil` otherwise.
    public static func merchantTokenRequest(for request: PaymentRequest) -> MerchantTokenRequest? {
        if let recurring = request.recurringPaymentRequest {
            return MerchantTokenRequest(tokenNotificationURL: recurring.tokenNotificationURL)
        }
        if let reload = request.automaticReloadPaymentRequest {
            return MerchantTokenRequest(tokenNotificationURL: reload.tokenNotificationURL)
        }
        if let deferred = request.deferredPaymentRequest {
            return MerchantTokenRequest(tokenNotificationURL: deferred.tokenNotificationURL)
        }
        return nil
    }
}

/// A token, with what a transcript may say about it. `description`, `dump` and debuggers show the version and
/// transaction identifier only.
public struct IssuedToken: Sendable, CustomStringConvertible, CustomReflectable {
    /// The whole PKPaymentToken JSON (`paymentData`, `paymentMethod`, `transactionIdentifier`).
    public var token: JSONValue
    /// `transactionIdentifier`: safe to log.
    public var transactionIdentifier: String
    /// `paymentData.version`.
    public var version: String

    public var description: String { "IssuedToken(\(version), transaction \(transactionIdentifier.prefix(16))…)" }

    /// What `dump` and debuggers see: no token.
    public var customMirror: Mirror {
        Mirror(self, children: ["version": version, "transactionIdentifier": transactionIdentifier])
    }
}

/// Makes payment tokens, as Apple's servers do for a device.
public protocol PaymentTokenIssuer: Sendable {
    /// - Throws: any error; the session reports it as `tokenFailed` and fails.
    func issueToken(_ request: TokenIssueRequest) throws -> IssuedToken
}

/// Real tokens from a `Sandbox`: signed by its authority and encrypted for its merchant's Payment Processing
/// certificate (EC_v1 by default).
public struct SandboxTokenIssuer: PaymentTokenIssuer {
    public let sandbox: Sandbox
    public let version: TokenVersion

    public init(sandbox: Sandbox, version: TokenVersion = .ecV1) {
        self.sandbox = sandbox
        self.version = version
    }

    public func issueToken(_ request: TokenIssueRequest) throws -> IssuedToken {
        let cardType = CardType(rawValue: request.card.type.rawValue) ?? .debit
        let card = try SandboxCard(
            network: request.card.network, type: cardType, devicePAN: request.card.devicePAN,
            expirationDate: request.card.expirationDate, cardholderName: request.card.cardholderName)
        let mintRequest = MintRequest(
            card: card, amount: request.amount, currencyCode: request.currencyCode,
            applicationData: request.applicationData.map { .base64($0) },
            paymentDataType: .threeDSecure,
            signingTime: request.now)
        let minted: MintedToken
        if let merchantToken = request.merchantToken {
            minted = try sandbox.mintWithMerchantToken(
                mintRequest, tokenNotificationURL: merchantToken.tokenNotificationURL, version: version
            ).token
        } else {
            minted = try sandbox.mint(mintRequest, version: version)
        }
        return IssuedToken(
            token: try JSONValue(parsing: minted.jsonData()), transactionIdentifier: minted.transactionIdentifier,
            version: minted.paymentData.version)
    }
}
