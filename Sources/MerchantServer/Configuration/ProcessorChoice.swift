import Foundation
import MerchantCore

/// Which payment processor the server assembles, read once from `--processor URL` or the file's `"processor"`
/// section (`{"kind": "http", "url": "https://processor.internal:9090", "timeoutSeconds": 10}`; the old
/// `server.processor` URL is read as an alias of kind `http`). The call time limit, `processor.timeoutSeconds`, is
/// the catalog's ``MerchantCore/ProcessorSettings`` (every kind has one).
///
/// Each kind is a case with the settings it needs (a base URL, key files). docs/PROCESSORS.md describes each.
public enum ProcessorChoice: Sendable, Hashable {
    /// No processor named (kind `sandbox`, the default): only sandbox mode may start, its plug-in running the
    /// sandbox processor in process; outside it the server refuses to start (`noProcessor`).
    case sandbox
    /// A service speaking docs/PROCESSOR-PROTOCOL.md at `url` (kind `http`).
    case http(url: URL)
    /// Stripe's PaymentIntents API (kind `stripe`).
    case stripe(ProviderSettings)
    /// Adyen's Checkout API (kind `adyen`).
    case adyen(ProviderSettings)
    /// Checkout.com's payments API (kind `checkout`).
    case checkout(ProviderSettings)

    /// The section's `kind`.
    public var kind: ProcessorKind {
        switch self {
        case .sandbox: .sandbox
        case .http: .http
        case .stripe: .stripe
        case .adyen: .adyen
        case .checkout: .checkout
        }
    }

    /// The provider's settings, for the provider kinds.
    public var provider: ProviderSettings? {
        switch self {
        case .stripe(let settings), .adyen(let settings), .checkout(let settings): settings
        case .sandbox, .http: nil
        }
    }

    /// An `http` processor at `text`.
    /// - Returns: `nil` unless `text` is an absolute `http` or `https` URL with a host.
    public static func http(parsing text: String) -> ProcessorChoice? {
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host?.isEmpty == false
        else { return nil }
        return .http(url: url)
    }
}

/// A provider connector's settings from the `processor` section (paths resolved against the file's folder). The
/// secrets themselves are read at start-up, from files readable by their owner alone, and never kept here.
public struct ProviderSettings: Sendable, Hashable {
    /// Who decrypts the Apple Pay token: `passThrough` (the provider) or `decrypted` (we, sending the network
    /// token, cryptogram and ECI).
    public enum ApplePay: String, Sendable, Hashable, CaseIterable {
        case passThrough, decrypted
    }

    /// `baseURL`: https outside sandbox mode; a loopback `http://` URL is allowed in sandbox mode (a local fake).
    public var baseURL: URL
    /// The API secret's file: Stripe and Checkout.com `secretKeyFile`, Adyen `apiKeyFile`.
    public var secretKeyFile: String
    /// Stripe and Checkout.com `webhookSecretFile`.
    public var webhookSecretFile: String?
    /// Adyen `webhookHMACKeyFile` (the key in hex).
    public var webhookHMACKeyFile: String?
    /// Adyen `merchantAccount`.
    public var merchantAccount: String?
    /// Checkout.com `processingChannelId`.
    public var processingChannelId: String?
    /// Checkout.com `publicKeyFile`: `POST /tokens` (pass-through) takes the public key, not the secret one.
    public var publicKeyFile: String?
    /// `applePay`, default `passThrough`.
    public var applePay: ApplePay = .passThrough
    /// Adyen (no look-up): how long a payment whose answer was lost waits for its webhook before `GET
    /// /admin/v1/attention` lists it for a person (`processor.webhookDeadlineHours`; `nil`: the 31 days Adyen keeps
    /// a key).
    public var webhookDeadline: Duration? = nil

    /// Whether `url` may be a provider's (or an `http` processor's) base URL: https always; plain http only in
    /// sandbox mode and only to a loopback host (a local fake).
    public static func allows(_ url: URL, sandboxMode: Bool) -> Bool {
        if url.scheme == "https" { return url.host?.isEmpty == false }
        guard url.scheme == "http", sandboxMode, let host = url.host else { return false }
        return host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }
}

/// How the `http` processor proves who we are, outside sandbox mode: `bearerTokenFile` (a token sent as
/// `Authorization: Bearer`, read from a file readable by its owner alone) or `clientCertificate`
/// (`{"certificate", "key"}`, TLS client authentication).
public struct HTTPProcessorAuthentication: Sendable, Hashable {
    public var bearerTokenFile: String?
    public var clientCertificate: CertificateKeyPaths?

    public init(bearerTokenFile: String? = nil, clientCertificate: CertificateKeyPaths? = nil) {
        self.bearerTokenFile = bearerTokenFile
        self.clientCertificate = clientCertificate
    }

    public var isEmpty: Bool { bearerTokenFile == nil && clientCertificate == nil }
}
