import Foundation
import Foundations
import MerchantCore
import ProviderWebhooks

/// The `"processor"` section: `kind` (default `http` when a `url` is given, else `sandbox`), the `url` of an `http`
/// processor, `timeoutSeconds` (the catalog's ``MerchantCore/ProcessorSettings``), and the file of the webhooks'
/// signing secret: `webhookSecretFile` (kinds `stripe` and `checkout`) or `webhookHMACKeyFile` (kind `adyen`).
struct ProcessorSection: Decodable {
    var kind: String?
    var url: String?
    var timeoutSeconds: Double?
    var baseURL: String?
    var secretKeyFile: String?
    var apiKeyFile: String?
    /// Stripe's or Checkout.com's webhook signing secret, in a file.
    var webhookSecretFile: String?
    /// Adyen's webhook HMAC key (hex), in a file.
    var webhookHMACKeyFile: String?
    var merchantAccount: String?
    var processingChannelId: String?
    var publicKeyFile: String?
    var applePay: String?
    var bearerTokenFile: String?
    var clientCertificate: CertificateKeyPaths?
    /// Adyen: how long a payment whose answer was lost waits for its webhook before it is listed for a person.
    var webhookDeadlineHours: Int?
    /// Fields of the wrong type.
    var problems: [ConfigurationProblem] = []
    /// The fields given (``FieldReader/given``).
    var given: Set<String> = []
    /// Where each field is in the file.
    var at = Self.paths

    /// The section's paths: it is always the file's top-level `processor`.
    static let paths = FieldPaths<CodingKeys>(section: .processor)

    enum CodingKeys: String, CodingKey, CaseIterable {
        case kind, url, timeoutSeconds, baseURL, secretKeyFile, apiKeyFile, webhookSecretFile, webhookHMACKeyFile
        case merchantAccount, processingChannelId, publicKeyFile, applePay, bearerTokenFile, clientCertificate
        case webhookDeadlineHours
    }

    init(from decoder: any Decoder) throws {
        var reader = try FieldReader(decoder, keys: CodingKeys.self)
        kind = reader.read(.kind)
        url = reader.read(.url)
        timeoutSeconds = reader.read(.timeoutSeconds)
        baseURL = reader.read(.baseURL)
        secretKeyFile = reader.read(.secretKeyFile)
        apiKeyFile = reader.read(.apiKeyFile)
        webhookSecretFile = reader.read(.webhookSecretFile)
        webhookHMACKeyFile = reader.read(.webhookHMACKeyFile)
        merchantAccount = reader.read(.merchantAccount)
        processingChannelId = reader.read(.processingChannelId)
        publicKeyFile = reader.read(.publicKeyFile)
        applePay = reader.read(.applePay)
        bearerTokenFile = reader.read(.bearerTokenFile)
        clientCertificate = reader.read(.clientCertificate)
        webhookDeadlineHours = reader.read(.webhookDeadlineHours)
        problems = reader.problems
        given = reader.given
        at = reader.at
    }

    /// A provider kind's settings, each field checked with its path; `nil` when one is missing or wrong.
    func providerSettings(
        kind: ProcessorKind, folder: URL, to problems: inout ConfigurationProblems
    ) -> ProviderSettings? {
        var valid = true
        func text(_ key: CodingKeys, _ value: String?) -> String? {
            guard let value else { return nil }
            if value.isEmpty {
                problems.report(at(key), .malformed, "\(at(key)) is empty")
                valid = false
                return nil
            }
            return value
        }
        var base: URL?
        if let baseURL = text(.baseURL, baseURL) {
            if let url = URL(string: baseURL), url.scheme == "http" || url.scheme == "https",
                url.host?.isEmpty == false,
                url.query == nil
            {
                base = url
            } else {
                problems.report(
                    at(.baseURL), .invalidURL,
                    "\(at(.baseURL)) must be an https URL with a host (got '\(baseURL.prefix(80))')")
                valid = false
            }
        }
        let key = kind == .adyen ? text(.apiKeyFile, apiKeyFile) : text(.secretKeyFile, secretKeyFile)
        var mode = ProviderSettings.ApplePay.passThrough
        if let applePay {
            if let chosen = ProviderSettings.ApplePay(rawValue: applePay) {
                mode = chosen
            } else {
                problems.report(
                    at(.applePay), .invalidProcessor,
                    "\(at(.applePay)) must be passThrough or decrypted (got '\(applePay.prefix(40))')")
                valid = false
            }
        }
        let account = text(.merchantAccount, merchantAccount)
        let channel = text(.processingChannelId, processingChannelId)
        let webhookSecret = text(.webhookSecretFile, webhookSecretFile)
        let webhookHMAC = text(.webhookHMACKeyFile, webhookHMACKeyFile)
        let publicKey = text(.publicKeyFile, publicKeyFile)
        // Adyen keeps an idempotency key 31 days: a deadline past that would wait for what nobody can tell any more.
        if let hours = webhookDeadlineHours, !(1...(31 * 24)).contains(hours) {
            problems.report(
                at(.webhookDeadlineHours), .outOfRange,
                "\(at(.webhookDeadlineHours)) must be 1 to 744 (31 days, Adyen's key lifetime), got \(hours)")
            valid = false
        }
        if kind == .checkout, mode == .passThrough, publicKeyFile == nil {
            problems.report(
                at(.publicKeyFile), .invalidProcessor,
                "checkout in passThrough mode needs \(at(.publicKeyFile)): POST /tokens takes the public key")
            valid = false
        }
        guard valid, let base, let key else { return nil }
        let resolve = { MerchantServerConfiguration.resolve($0, in: folder) }
        return ProviderSettings(
            baseURL: base, secretKeyFile: resolve(key), webhookSecretFile: webhookSecret.map(resolve),
            webhookHMACKeyFile: webhookHMAC.map(resolve), merchantAccount: account, processingChannelId: channel,
            publicKeyFile: publicKey.map(resolve), applePay: mode,
            webhookDeadline: webhookDeadlineHours.map { .seconds($0 * 3600) })
    }
}

extension ProcessorKind {
    /// The fields of the `processor` section a processor of this kind takes, besides `kind`, `timeoutSeconds` and
    /// the webhooks' secret files: the required ones and the optional ones.
    var fields: (required: [ProcessorSection.CodingKeys], optional: [ProcessorSection.CodingKeys]) {
        switch self {
        case .sandbox: ([], [])
        case .http: ([.url], [.bearerTokenFile, .clientCertificate])
        case .stripe: ([.baseURL, .secretKeyFile], [.applePay])
        case .adyen: ([.baseURL, .apiKeyFile, .merchantAccount], [.applePay, .webhookDeadlineHours])
        case .checkout: ([.baseURL, .secretKeyFile, .processingChannelId], [.publicKeyFile, .applePay])
        }
    }

    /// The providers whose webhooks are signed with the secret in `key` (`webhookSecretFile`, `webhookHMACKeyFile`).
    static func signers(of key: ProcessorSection.CodingKeys) -> [WebhookProvider] {
        key == .webhookHMACKeyFile ? [.adyen] : [.stripe, .checkout]
    }
}

extension MerchantServerConfiguration {
    /// The `processor` section (or the old `server.processor` URL, `alias`): the kind and its settings, the call
    /// time limit, the webhooks' secret files and, for `http`, how it is authenticated.
    mutating func applyProcessor(
        _ section: ProcessorSection?, alias: (url: String?, path: String)?, catalogGiven: Bool, folder: URL,
        to problems: inout ConfigurationProblems
    ) {
        let at = section?.at ?? ProcessorSection.paths
        if let alias, alias.url != nil, section?.url != nil {
            problems.report(
                alias.path, .conflict, "give the processor's URL once: \(at(.url)) (\(alias.path) is its old name)")
        }
        let url = section?.url ?? alias?.url
        let urlPath = section?.url != nil ? at(.url) : alias?.path ?? at(.url)
        let name = section?.kind ?? (url == nil ? ProcessorKind.sandbox.rawValue : ProcessorKind.http.rawValue)
        let settings = ProcessorSettings(
            kind: name, timeoutSeconds: section?.timeoutSeconds ?? store.processor.timeoutSeconds)
        if !catalogGiven {
            // With a catalog, its validation has reported these already.
            for problem in settings.problems(at: at.section) {
                problems.report(problem.field ?? at.section, .invalidProcessor, problem.message)
            }
        }
        store.processor = settings
        let kind = settings.knownKind
        switch kind {
        case .http:
            if let url {
                if let choice = ProcessorChoice.http(parsing: url) {
                    processor = choice
                } else {
                    problems.report(
                        urlPath, .invalidURL,
                        "the processor's URL must be an http(s) URL with a host (got '\(url.prefix(80))')")
                }
            } else {
                problems.report(at(.url), .invalidProcessor, "a processor of kind http needs a url")
            }
        case .stripe, .adyen, .checkout:
            if let section, let kind,
                let settings = section.providerSettings(kind: kind, folder: folder, to: &problems)
            {
                processor =
                    switch kind {
                    case .stripe: .stripe(settings)
                    case .adyen: .adyen(settings)
                    default: .checkout(settings)
                    }
            }
            if url != nil {
                problems.report(
                    urlPath, .invalidProcessor,
                    "only a processor of kind http has a url (this one is of kind \(name): give \(at(.baseURL)))")
            }
        case .sandbox:
            processor = .sandbox
            if url != nil {
                problems.report(
                    urlPath, .invalidProcessor, "only a processor of kind http has a url (this one is of kind sandbox)")
            }
        case nil:
            break  // reported by ProcessorSettings
        }
        guard let section else { return }
        applyWebhookSecretFiles(section, kind: name, folder: folder, to: &problems)
        guard let kind else { return }
        // Each field given that the kind does not take, and each it needs that is missing (the URL is checked
        // above, the webhooks' secret files with the kinds whose provider signs with them).
        let checked = ProcessorSection.CodingKeys.allCases.filter {
            ![.kind, .timeoutSeconds, .url, .webhookSecretFile, .webhookHMACKeyFile].contains($0)
        }
        let fields = kind.fields
        for key in checked.sorted(by: { $0.stringValue < $1.stringValue }) {
            let given = section.given.contains(key.stringValue)
            if given, !fields.required.contains(key), !fields.optional.contains(key) {
                problems.report(
                    at(key), .invalidProcessor, "\(at(key)) is not a setting of a processor of kind \(kind.rawValue)")
            } else if !given, fields.required.contains(key) {
                problems.report(at(key), .invalidProcessor, "a processor of kind \(kind.rawValue) needs \(at(key))")
            }
        }
        if kind == .http { applyHTTPAuthentication(section, folder: folder, to: &problems) }
    }

    /// The webhooks' secrets, each for the kinds whose provider signs with it (relative to the file's folder).
    private mutating func applyWebhookSecretFiles(
        _ section: ProcessorSection, kind: String, folder: URL, to problems: inout ConfigurationProblems
    ) {
        let at = section.at
        let files: [(ProcessorSection.CodingKeys, String?)] = [
            (.webhookSecretFile, section.webhookSecretFile), (.webhookHMACKeyFile, section.webhookHMACKeyFile),
        ]
        for (key, path) in files {
            guard let path else { continue }
            guard !path.isEmpty else {
                problems.report(at(key), .malformed, "\(at(key)) is empty (leave it out for no webhooks)")
                continue
            }
            let providers = ProcessorKind.signers(of: key)
            guard let provider = providers.first(where: { $0.rawValue == kind }) else {
                let kinds = providers.map(\.rawValue).joined(separator: " or ")
                problems.report(
                    at(key), .invalidProcessor,
                    "\(at(key)) is for a processor of kind \(kinds) (this one is of kind \(kind))")
                continue
            }
            webhookSecretFiles[provider] = Self.resolve(path, in: folder)
        }
    }

    /// How an `http` processor is authenticated: a bearer token's file or a client certificate, not both.
    private mutating func applyHTTPAuthentication(
        _ section: ProcessorSection, folder: URL, to problems: inout ConfigurationProblems
    ) {
        let at = section.at
        if section.bearerTokenFile?.isEmpty == true {
            problems.report(at(.bearerTokenFile), .malformed, "\(at(.bearerTokenFile)) is empty")
        }
        if section.bearerTokenFile != nil, section.clientCertificate != nil {
            problems.report(
                at(.clientCertificate), .conflict,
                "give one way to authenticate: \(at(.bearerTokenFile)) or \(at(.clientCertificate))")
        }
        processorAuthentication = HTTPProcessorAuthentication(
            bearerTokenFile: section.bearerTokenFile.flatMap { $0.isEmpty ? nil : Self.resolve($0, in: folder) },
            clientCertificate: section.clientCertificate.map {
                CertificateKeyPaths(
                    certificate: Self.resolve($0.certificate, in: folder), key: Self.resolve($0.key, in: folder))
            })
    }
}
