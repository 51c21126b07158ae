import ApplePay
import Cryptography
import Foundation
import Foundations
import HTTPCore
import MerchantCore
import MerchantHTTP
import MerchantStore
import ProviderWebhooks

/// The configuration file in three steps: ``decode(_:)`` reads each section that is there (every section is
/// optional), ``MerchantServerConfiguration/apply(_:folder:)`` checks every field and assembles the typed
/// configuration, and `load(file:)` throws once with every problem found, each with its path.
///
/// ```
/// {
///   "storeName": …, "products": […], …        the catalog (StoreConfiguration); absent: the demo catalog
///   "processor": {"kind": "sandbox" | "http" | "stripe" | "adyen" | "checkout", "url": "https://…" (http),
///                 "bearerTokenFile", "clientCertificate" (http), "baseURL", "secretKeyFile" (stripe, checkout),
///                 "apiKeyFile", "merchantAccount", "webhookHMACKeyFile" (adyen), "webhookSecretFile" (stripe,
///                 checkout), "processingChannelId", "publicKeyFile" (checkout), "applePay": "passThrough" | "decrypted",
///                 "timeoutSeconds": 10},
///   "server": {"host", "port", "publicURL", "store", "storePoolSize", "maximumBodySize", "connectionTimeout",
///              "requestTimeout", "connectionLimit", "perClientConnectionLimit", "rateLimits", "checkoutLifetimeSeconds",
///              "pruneIntervalSeconds", "proxy", "threads", "paymentProcessing", "merchantIdentity", "trustedRoot",
///              "gatewayTrustedRoots", "adminToken", "reconcileIntervalSeconds", "reconcileAfterSeconds",
///              "applePayJSSDK", "trustedProxies", "forwardedHeader",
///              "shares": {"processor" | "merchantValidation" | "tokenNotifications":
///                         {"inFlight", "queued", "waitMilliseconds"}},
///              "tokenNotificationTimeLimitSeconds", "adminFailureLimit": {"perMinute", "burst"} | "off"}
/// }
/// ```
/// Old keys still read, as aliases: the top-level `publicBaseURL` (now `server.publicURL`) and `server.processor`
/// (a URL; now `processor: {"kind": "http", "url": …}`). A key and its alias together are a `conflict`.
struct ConfigurationFile {
    /// The catalog, when the file has one (any top-level key besides the sections below).
    var catalog: StoreConfiguration?
    var server: ServerSection?
    var processor: ProcessorSection?
    /// The old top-level `publicBaseURL`.
    var publicBaseURL: String?
    /// What decoding found wrong.
    var problems: [ConfigurationProblem] = []

    /// The top-level keys that are not the catalog's.
    static let sectionKeys: Set<String> = ["server", "processor", "publicBaseURL"]

    /// Decodes every section that is present; a section that cannot be decoded is reported and left out.
    static func decode(_ data: Data) -> ConfigurationFile {
        var file = ConfigurationFile()
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            file.problems.append(.init(path: "", code: .malformed, message: "the file is not a JSON object"))
            return file
        }
        if !Set(object.keys).subtracting(sectionKeys).isEmpty {
            do {
                file.catalog = try StoreConfiguration.decode(data)
            } catch  where error.code == .malformed {
                file.problems.append(.init(path: error.field ?? "", code: .malformed, message: error.message))
            } catch {
                // Decoded, but invalid: report every rule it breaks, not only the first.
                let catalog = try? JSONDecoder().decode(StoreConfiguration.self, from: data)
                for problem in catalog?.problems() ?? [error] {
                    file.problems.append(
                        .init(
                            path: problem.field ?? "", code: .init(rawValue: problem.code.rawValue),
                            message: problem.message))
                }
            }
        }
        struct Sections: Decodable {
            var server: ServerSection?
            var processor: ProcessorSection?
            var publicBaseURL: String?
        }
        do {
            let sections = try JSONDecoder().decode(Sections.self, from: data)
            file.server = sections.server
            file.processor = sections.processor
            file.publicBaseURL = sections.publicBaseURL
            file.problems += (sections.server?.problems ?? []) + (sections.processor?.problems ?? [])
        } catch {
            file.problems.append(problem(error))
        }
        return file
    }

    /// A decoding error as a problem at its coding path.
    static func problem(_ error: any Error) -> ConfigurationProblem {
        switch error {
        case DecodingError.typeMismatch(let type, let context):
            return .init(
                path: FieldPath.text(context.codingPath), code: .malformed,
                message: "\(FieldPath.text(context.codingPath)) must be \(describe(type))")
        case DecodingError.valueNotFound(_, let context):
            return .init(
                path: FieldPath.text(context.codingPath), code: .malformed,
                message: "\(FieldPath.text(context.codingPath)) is null")
        case DecodingError.keyNotFound(let key, let context):
            let path = FieldPath.text(context.codingPath + [key])
            return .init(path: path, code: .malformed, message: "\(path) is missing")
        case DecodingError.dataCorrupted(let context):
            return .init(
                path: FieldPath.text(context.codingPath), code: .malformed,
                message: "\(FieldPath.text(context.codingPath)): \(context.debugDescription)")
        default:
            return .init(path: "", code: .malformed, message: "the file does not have the expected shape")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Double.Type: "a number"
        case is [Any].Type: "an array"
        default: "an object of the documented shape"
        }
    }
}

/// Reads one field at a time, so that a field of the wrong type is reported with its path and the others are
/// still read.
struct FieldReader<Key: CodingKey> {
    let container: KeyedDecodingContainer<Key>
    var problems: [ConfigurationProblem] = []

    init(_ decoder: any Decoder, keys: Key.Type) throws {
        container = try decoder.container(keyedBy: Key.self)
    }

    mutating func read<T: Decodable>(_ key: Key, as type: T.Type = T.self) -> T? {
        do {
            return try container.decodeIfPresent(T.self, forKey: key)
        } catch {
            problems.append(ConfigurationFile.problem(error))
            return nil
        }
    }
}

/// The `"server"` section: where to listen, the store, limits, keys and whom to trust.
struct ServerSection: Decodable {
    var host: String?
    var port: Int?
    var publicURL: String?
    var store: String?
    var storePoolSize: Int?
    var maximumBodySize: Int?
    var connectionTimeout: Int?
    var requestTimeout: Int?
    var connectionLimit: Int?
    var perClientConnectionLimit: Int?
    var rateLimits: RateLimitsSection?
    var checkoutLifetimeSeconds: Int?
    var pruneIntervalSeconds: Int?
    var proxy: String?
    var threads: Int?
    var paymentProcessing: [CertificateKeyPaths]?
    var merchantIdentity: CertificateKeyPaths?
    var trustedRoot: String?
    var gatewayTrustedRoots: String?
    /// The old `server.processor` URL: an alias of `processor: {"kind": "http", "url": …}`.
    var processor: String?
    var adminToken: String?
    var reconcileIntervalSeconds: Int?
    var reconcileAfterSeconds: Int?
    var applePayJSSDK: Bool?
    /// Addresses and networks of the load balancers whose forwarding header is believed.
    var trustedProxies: [String]?
    /// `X-Forwarded-For` (default) or `Forwarded`: the header they write.
    var forwardedHeader: String?
    /// Each outside party's share (docs/LIMITS.md), by party: `processor`, `merchantValidation`, `tokenNotifications`.
    var shares: [String: ShareSection]?
    /// How long Apple's merchant-token notification waits for its event to be pulled and applied.
    var tokenNotificationTimeLimitSeconds: Int?
    /// Failed admin attempts allowed per client (`{"perMinute", "burst"}`), or `"off"`.
    var adminFailureLimit: RateLimitsSection.Limit?
    /// Fields of the wrong type.
    var problems: [ConfigurationProblem] = []

    enum CodingKeys: String, CodingKey {
        case host, port, publicURL, store, storePoolSize, maximumBodySize, connectionTimeout, requestTimeout
        case connectionLimit, perClientConnectionLimit, rateLimits, checkoutLifetimeSeconds, pruneIntervalSeconds,
            proxy, threads
        case paymentProcessing, merchantIdentity, trustedRoot, gatewayTrustedRoots, processor, adminToken
        case reconcileIntervalSeconds, reconcileAfterSeconds, applePayJSSDK
        case trustedProxies, forwardedHeader, shares, tokenNotificationTimeLimitSeconds, adminFailureLimit
    }

    init(from decoder: any Decoder) throws {
        var reader = try FieldReader(decoder, keys: CodingKeys.self)
        host = reader.read(.host)
        port = reader.read(.port)
        publicURL = reader.read(.publicURL)
        store = reader.read(.store)
        storePoolSize = reader.read(.storePoolSize)
        maximumBodySize = reader.read(.maximumBodySize)
        connectionTimeout = reader.read(.connectionTimeout)
        requestTimeout = reader.read(.requestTimeout)
        connectionLimit = reader.read(.connectionLimit)
        perClientConnectionLimit = reader.read(.perClientConnectionLimit)
        rateLimits = reader.read(.rateLimits)
        checkoutLifetimeSeconds = reader.read(.checkoutLifetimeSeconds)
        pruneIntervalSeconds = reader.read(.pruneIntervalSeconds)
        proxy = reader.read(.proxy)
        threads = reader.read(.threads)
        paymentProcessing = reader.read(.paymentProcessing)
        merchantIdentity = reader.read(.merchantIdentity)
        trustedRoot = reader.read(.trustedRoot)
        gatewayTrustedRoots = reader.read(.gatewayTrustedRoots)
        processor = reader.read(.processor)
        adminToken = reader.read(.adminToken)
        reconcileIntervalSeconds = reader.read(.reconcileIntervalSeconds)
        reconcileAfterSeconds = reader.read(.reconcileAfterSeconds)
        applePayJSSDK = reader.read(.applePayJSSDK)
        trustedProxies = reader.read(.trustedProxies)
        forwardedHeader = reader.read(.forwardedHeader)
        shares = reader.read(.shares)
        tokenNotificationTimeLimitSeconds = reader.read(.tokenNotificationTimeLimitSeconds)
        adminFailureLimit = reader.read(.adminFailureLimit)
        problems = reader.problems
    }
}

/// `"rateLimits"`: either limit may be given alone; `"off"` instead of the object turns both off.
struct RateLimitsSection: Decodable {
    var checkouts: RateLimit?
    var updates: RateLimit?
    var off = false

    /// One limit, `{"perMinute", "burst"}`, or `"off"` (`limit` nil).
    struct Limit: Decodable {
        var limit: RateLimit?

        init(from decoder: any Decoder) throws {
            limit = try isOff(decoder) ? nil : RateLimit(from: decoder)
        }
    }

    /// Whether the value is the string `"off"`; any other string is an error, anything else is for the caller.
    static func isOff(_ decoder: any Decoder) throws -> Bool {
        guard let text = try? decoder.singleValueContainer().decode(String.self) else { return false }
        guard text == "off" else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "must be \"off\" or an object"))
        }
        return true
    }

    init(from decoder: any Decoder) throws {
        if try Self.isOff(decoder) {
            off = true
            return
        }
        struct Fields: Decodable {
            var checkouts: RateLimit?
            var updates: RateLimit?
        }
        let fields = try Fields(from: decoder)
        checkouts = fields.checkouts
        updates = fields.updates
    }
}

/// One outside party's share in `"shares"`: calls in flight at once, callers waiting, and how long one waits
/// (milliseconds); a field left out keeps its default.
struct ShareSection: Decodable {
    var inFlight: Int?
    var queued: Int?
    var waitMilliseconds: Int?
}

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
    var problems: [ConfigurationProblem] = []

    enum CodingKeys: String, CodingKey {
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
    }

    /// The fields each kind takes (besides `kind` and `timeoutSeconds`), the first of each pair required.
    static let fields: [String: (required: [String], optional: [String])] = [
        "sandbox": ([], []),
        "http": (["url"], ["bearerTokenFile", "clientCertificate"]),
        "stripe": (["baseURL", "secretKeyFile"], ["webhookSecretFile", "applePay"]),
        "adyen": (
            ["baseURL", "apiKeyFile", "merchantAccount"], ["webhookHMACKeyFile", "applePay", "webhookDeadlineHours"]
        ),
        "checkout": (
            ["baseURL", "secretKeyFile", "processingChannelId"], ["webhookSecretFile", "publicKeyFile", "applePay"]
        ),
    ]

    /// The fields given, by name.
    var given: [String: Bool] {
        [
            "url": url != nil, "baseURL": baseURL != nil, "secretKeyFile": secretKeyFile != nil,
            "apiKeyFile": apiKeyFile != nil, "webhookSecretFile": webhookSecretFile != nil,
            "webhookHMACKeyFile": webhookHMACKeyFile != nil, "merchantAccount": merchantAccount != nil,
            "processingChannelId": processingChannelId != nil, "publicKeyFile": publicKeyFile != nil,
            "applePay": applePay != nil,
            "bearerTokenFile": bearerTokenFile != nil, "clientCertificate": clientCertificate != nil,
            "webhookDeadlineHours": webhookDeadlineHours != nil,
        ]
    }

    /// A provider kind's settings, each field checked with its path; `nil` when one is missing or wrong.
    func providerSettings(
        kind: String, resolve: (String) -> String, report: (String, ConfigurationProblem.Code, String) -> Void
    ) -> ProviderSettings? {
        var valid = true
        func text(_ key: String, _ value: String?) -> String? {
            guard let value else { return nil }
            if value.isEmpty {
                report("processor.\(key)", .malformed, "processor.\(key) is empty")
                valid = false
                return nil
            }
            return value
        }
        var base: URL?
        if let baseURL = text("baseURL", baseURL) {
            if let url = URL(string: baseURL), url.scheme == "http" || url.scheme == "https",
                url.host?.isEmpty == false,
                url.query == nil
            {
                base = url
            } else {
                report(
                    "processor.baseURL", .invalidURL,
                    "processor.baseURL must be an https URL with a host (got '\(baseURL.prefix(80))')")
                valid = false
            }
        }
        let keyName = kind == "adyen" ? "apiKeyFile" : "secretKeyFile"
        let key = text(keyName, kind == "adyen" ? apiKeyFile : secretKeyFile)
        var mode = ProviderSettings.ApplePay.passThrough
        if let applePay {
            if let chosen = ProviderSettings.ApplePay(rawValue: applePay) {
                mode = chosen
            } else {
                report(
                    "processor.applePay", .invalidProcessor,
                    "processor.applePay must be passThrough or decrypted (got '\(applePay.prefix(40))')")
                valid = false
            }
        }
        let account = text("merchantAccount", merchantAccount)
        let channel = text("processingChannelId", processingChannelId)
        let webhookSecret = text("webhookSecretFile", webhookSecretFile)
        let webhookHMAC = text("webhookHMACKeyFile", webhookHMACKeyFile)
        let publicKey = text("publicKeyFile", publicKeyFile)
        // Adyen keeps an idempotency key 31 days: a deadline past that would wait for what nobody can tell any more.
        if let hours = webhookDeadlineHours, !(1...(31 * 24)).contains(hours) {
            report(
                "processor.webhookDeadlineHours", .outOfRange,
                "processor.webhookDeadlineHours must be 1 to 744 (31 days, Adyen's key lifetime), got \(hours)")
            valid = false
        }
        if kind == "checkout", mode == .passThrough, publicKeyFile == nil {
            report(
                "processor.publicKeyFile", .invalidProcessor,
                "checkout in passThrough mode needs processor.publicKeyFile: POST /tokens takes the public key")
            valid = false
        }
        guard valid, let base, let key else { return nil }
        return ProviderSettings(
            baseURL: base, secretKeyFile: resolve(key), webhookSecretFile: webhookSecret.map(resolve),
            webhookHMACKeyFile: webhookHMAC.map(resolve), merchantAccount: account, processingChannelId: channel,
            publicKeyFile: publicKey.map(resolve), applePay: mode,
            webhookDeadline: webhookDeadlineHours.map { .seconds($0 * 3600) })
    }
}

extension MerchantServerConfiguration {
    /// Reads a configuration file: the catalog, the `processor` section and the `server` section, each optional
    /// (a file holding only a `server` or only a `processor` section serves the demo catalog). Relative paths in
    /// the `server` section are relative to the file's folder.
    /// A file that holds `server.adminToken` is a secret: it is read again the way key files are (``KeyFile``: no
    /// symbolic link, a regular file of this user's, not open to group or others), and those bytes are used.
    /// - Throws: `ServerStartError` `invalidConfiguration` listing every problem, each with its path
    ///   (``ServerStartError/problems``); `insecureConfigurationFile` for a file with an admin token that others
    ///   may read.
    public static func load(file: String) throws(ServerStartError) -> MerchantServerConfiguration {
        let url = URL(fileURLWithPath: file)
        guard var data = try? Data(contentsOf: url) else {
            throw ServerStartError(.invalidConfiguration, "cannot read the configuration file \(file)")
        }
        var decoded = ConfigurationFile.decode(data)
        if let token = decoded.server?.adminToken, !token.isEmpty {
            do {
                data = try KeyFile.read(file, description: "the configuration file holding server.adminToken")
            } catch {
                throw ServerStartError(keyFile: error, insecure: .insecureConfigurationFile)
            }
            decoded = ConfigurationFile.decode(data)
        }
        var configuration = MerchantServerConfiguration()
        let problems = configuration.apply(decoded, folder: url.deletingLastPathComponent())
        guard problems.isEmpty else {
            let lines = problems.map { "  \($0)" }.joined(separator: "\n")
            throw ServerStartError(
                .invalidConfiguration,
                "\(file) has \(problems.count) problem\(problems.count == 1 ? "" : "s"):\n\(lines)",
                problems: problems)
        }
        return configuration
    }

    /// Checks every field of a decoded file and sets what it configures.
    /// - Returns: every problem found (decoding's and the rules'), each once, in the order of the file's sections.
    mutating func apply(_ file: ConfigurationFile, folder: URL) -> [ConfigurationProblem] {
        var problems = file.problems
        func report(_ path: String, _ code: ConfigurationProblem.Code, _ message: String) {
            problems.append(ConfigurationProblem(path: path, code: code, message: message))
        }
        func resolve(_ path: String) -> String {
            path.hasPrefix("/") ? path : folder.appendingPathComponent(path).standardizedFileURL.path
        }
        if let catalog = file.catalog { store = catalog }

        // The processor: the section, or the old server.processor URL.
        let section = file.processor
        let alias = file.server?.processor
        if alias != nil, section?.url != nil {
            report(
                "server.processor", .conflict,
                "give the processor's URL once: processor.url (server.processor is its old name)")
        }
        let url = section?.url ?? alias
        let kind = section?.kind ?? (url == nil ? "sandbox" : "http")
        let settings = ProcessorSettings(
            kind: kind, timeoutSeconds: section?.timeoutSeconds ?? store.processor.timeoutSeconds)
        if file.catalog == nil {
            // With a catalog, its validation has reported these already.
            for problem in settings.problems(at: "processor") {
                report(problem.field ?? "processor", .invalidProcessor, problem.message)
            }
        }
        store.processor = settings
        switch kind {
        case "http":
            if let url {
                if let choice = ProcessorChoice.http(parsing: url) {
                    processor = choice
                } else {
                    report(
                        section?.url != nil ? "processor.url" : "server.processor", .invalidURL,
                        "the processor's URL must be an http(s) URL with a host (got '\(url.prefix(80))')")
                }
            } else {
                report("processor.url", .invalidProcessor, "a processor of kind http needs a url")
            }
        case "stripe", "adyen", "checkout":
            if let section, let settings = section.providerSettings(kind: kind, resolve: resolve, report: report) {
                processor =
                    switch kind {
                    case "stripe": .stripe(settings)
                    case "adyen": .adyen(settings)
                    default: .checkout(settings)
                    }
            }
            if url != nil {
                report(
                    section?.url != nil ? "processor.url" : "server.processor", .invalidProcessor,
                    "only a processor of kind http has a url (this one is of kind \(kind): give processor.baseURL)")
            }
        case "sandbox":
            processor = .sandbox
            if url != nil {
                report(
                    section?.url != nil ? "processor.url" : "server.processor", .invalidProcessor,
                    "only a processor of kind http has a url (this one is of kind sandbox)")
            }
        default:
            break  // reported by ProcessorSettings
        }
        // The webhooks' secrets, each for the kinds whose provider signs with it (relative to the file's folder).
        let secretFiles: [(String, String?, [WebhookProvider])] = [
            ("webhookSecretFile", section?.webhookSecretFile, [.stripe, .checkout]),
            ("webhookHMACKeyFile", section?.webhookHMACKeyFile, [.adyen]),
        ]
        for (key, path, providers) in secretFiles {
            guard let path else { continue }
            guard !path.isEmpty else {
                report("processor.\(key)", .malformed, "processor.\(key) is empty (leave it out for no webhooks)")
                continue
            }
            guard let provider = providers.first(where: { $0.rawValue == kind }) else {
                let kinds = providers.map(\.rawValue).joined(separator: " or ")
                report(
                    "processor.\(key)", .invalidProcessor,
                    "processor.\(key) is for a processor of kind \(kinds) (this one is of kind \(kind))")
                continue
            }
            webhookSecretFiles[provider] = resolve(path)
        }

        if let section, let fields = ProcessorSection.fields[kind] {
            // The webhooks' secret files are checked below, with the kinds whose provider signs with them.
            let webhookFiles: Set<String> = ["webhookSecretFile", "webhookHMACKeyFile"]
            for (name, given) in section.given.sorted(by: { $0.key < $1.key }) where !webhookFiles.contains(name) {
                if given, !fields.required.contains(name), !fields.optional.contains(name), name != "url" {
                    report(
                        "processor.\(name)", .invalidProcessor,
                        "processor.\(name) is not a setting of a processor of kind \(kind)")
                } else if !given, fields.required.contains(name), name != "url" {
                    report(
                        "processor.\(name)", .invalidProcessor, "a processor of kind \(kind) needs processor.\(name)")
                }
            }
            if kind == "http" {
                if section.bearerTokenFile?.isEmpty == true {
                    report("processor.bearerTokenFile", .malformed, "processor.bearerTokenFile is empty")
                }
                if section.bearerTokenFile != nil, section.clientCertificate != nil {
                    report(
                        "processor.clientCertificate", .conflict,
                        "give one way to authenticate: processor.bearerTokenFile or processor.clientCertificate")
                }
                processorAuthentication = HTTPProcessorAuthentication(
                    bearerTokenFile: section.bearerTokenFile.flatMap { $0.isEmpty ? nil : resolve($0) },
                    clientCertificate: section.clientCertificate.map {
                        CertificateKeyPaths(certificate: resolve($0.certificate), key: resolve($0.key))
                    })
            }
        }

        // The one public URL.
        if file.publicBaseURL != nil, file.server?.publicURL != nil {
            report(
                "publicBaseURL", .conflict, "give the public URL once: server.publicURL (publicBaseURL is its old name)"
            )
        }
        if let text = file.server?.publicURL ?? file.publicBaseURL {
            let path = file.server?.publicURL != nil ? "server.publicURL" : "publicBaseURL"
            if let url = PublicURL(text) {
                publicURL = url
            } else {
                report(path, .invalidURL, "\(path) \(PublicURL.rule) (got '\(text.prefix(80))')")
            }
        }

        guard let server = file.server else { return Self.once(problems) }
        func check(_ value: Int?, _ key: String, _ range: ClosedRange<Int>, _ rule: String, set: (Int) -> Void) {
            guard let value else { return }
            if range.contains(value) {
                set(value)
            } else {
                report("server.\(key)", .outOfRange, "server.\(key) \(rule) (got \(value))")
            }
        }
        if let host = server.host {
            if host.isEmpty { report("server.host", .malformed, "server.host is empty") } else { self.host = host }
        }
        check(server.port, "port", 0...65_535, "must be 0 to 65535 (0 picks a free port)") { port = UInt16($0) }
        if let text = server.store {
            do {
                var location = try OrderStoreLocation(parsing: text)
                if case .sqlite(let path) = location, !path.hasPrefix(":") { location = .sqlite(path: resolve(path)) }
                storeLocation = location
            } catch {
                report("server.store", .invalidStore, "server.store: \(error.message)")
            }
        }
        check(server.storePoolSize, "storePoolSize", 1...100, "must be 1 to 100") { storePoolSize = $0 }
        check(server.maximumBodySize, "maximumBodySize", 1...(1 << 30), "must be 1 to 2^30 bytes") {
            maximumBodySize = $0
        }
        check(server.connectionTimeout, "connectionTimeout", 0...86_400, "must be 0 to 86400 seconds (0: none)") {
            connectionTimeout = $0
        }
        check(server.requestTimeout, "requestTimeout", 1...86_400, "must be > 0") { requestTimeout = $0 }
        check(server.connectionLimit, "connectionLimit", 1...1_000_000, "must be 1 to 1000000") { connectionLimit = $0 }
        check(server.perClientConnectionLimit, "perClientConnectionLimit", 0...Int.max, "must be >= 0 (0: no limit)") {
            perClientConnectionLimit = $0
        }
        if let limits = server.rateLimits {
            if limits.off {
                rateLimits = nil
            } else {
                var chosen = RateLimits()
                if let checkouts = limits.checkouts { chosen.checkouts = checkouts }
                if let updates = limits.updates { chosen.updates = updates }
                for (name, limit) in [("checkouts", chosen.checkouts), ("updates", chosen.updates)]
                where limit.perMinute < 1 || limit.burst < 1 {
                    report(
                        "server.rateLimits.\(name)", .outOfRange,
                        "server.rateLimits.\(name) needs perMinute >= 1 and burst >= 1")
                }
                rateLimits = chosen
            }
        }
        check(server.checkoutLifetimeSeconds, "checkoutLifetimeSeconds", 60...Int.max, "must be at least 60") {
            checkoutLifetime = .seconds($0)
        }
        check(server.pruneIntervalSeconds, "pruneIntervalSeconds", 1...Int.max, "must be > 0") {
            pruneInterval = .seconds($0)
        }
        if let proxy = server.proxy {
            if proxy.isEmpty { report("server.proxy", .invalidURL, "server.proxy is empty (leave it out for none)") }
            self.proxy = proxy
        }
        check(server.threads, "threads", 1...1024, "must be 1 to 1024") { threads = $0 }
        var keyPaths: [(String, CertificateKeyPaths)] = []
        for (index, paths) in (server.paymentProcessing ?? []).enumerated() {
            keyPaths.append(("server.paymentProcessing[\(index)]", paths))
        }
        if let identity = server.merchantIdentity { keyPaths.append(("server.merchantIdentity", identity)) }
        for (path, paths) in keyPaths {
            if paths.certificate.isEmpty { report("\(path).certificate", .malformed, "\(path).certificate is empty") }
            if paths.key.isEmpty { report("\(path).key", .malformed, "\(path).key is empty") }
        }
        let resolvePaths = { (paths: CertificateKeyPaths) in
            CertificateKeyPaths(certificate: resolve(paths.certificate), key: resolve(paths.key))
        }
        if let paymentProcessing = server.paymentProcessing {
            self.paymentProcessing = paymentProcessing.map(resolvePaths)
        }
        if let identity = server.merchantIdentity { merchantIdentity = resolvePaths(identity) }
        for (key, value) in [("trustedRoot", server.trustedRoot), ("gatewayTrustedRoots", server.gatewayTrustedRoots)]
        where value?.isEmpty == true {
            report("server.\(key)", .malformed, "server.\(key) is empty")
        }
        if let root = server.trustedRoot { trustedRootPath = resolve(root) }
        if let roots = server.gatewayTrustedRoots { gatewayTrustedRootsPath = resolve(roots) }
        if let token = server.adminToken {
            if token.isEmpty {
                report(
                    "server.adminToken", .malformed,
                    "server.adminToken is empty (leave it out to turn the admin API off)")
            } else if let problem = Self.adminTokenProblem(token) {
                report("server.adminToken", .tooShort, "server.adminToken: \(problem)")
            } else {
                adminToken = token
            }
        }
        var networks: [IPNetwork] = []
        for (index, text) in (server.trustedProxies ?? []).enumerated() {
            if let network = IPNetwork(text) {
                networks.append(network)
            } else {
                report(
                    "server.trustedProxies[\(index)]", .invalidAddress,
                    "server.trustedProxies[\(index)] must be an IPv4 or IPv6 address or network such as 10.0.0.0/8 "
                        + "or 2001:db8::/32, with no bit set past the prefix (got '\(text.prefix(80))')")
            }
        }
        if server.trustedProxies != nil { trustedProxies.networks = networks }
        if let name = server.forwardedHeader {
            if let header = ForwardingHeader.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) {
                trustedProxies.header = header
            } else {
                report(
                    "server.forwardedHeader", .invalidChoice,
                    "server.forwardedHeader must be X-Forwarded-For or Forwarded (got '\(name.prefix(80))')")
            }
        }
        check(server.reconcileIntervalSeconds, "reconcileIntervalSeconds", 1...Int.max, "must be > 0") {
            reconcileInterval = .seconds($0)
        }
        check(
            server.reconcileAfterSeconds, "reconcileAfterSeconds", 31...Int.max,
            "must be more than 30 (the longest processor time limit)"
        ) { reconcileAfter = .seconds($0) }
        if let sdk = server.applePayJSSDK { loadsApplePayJSSDK = sdk }
        let parties: [String: WritableKeyPath<Self, Bulkhead.Limits>] = [
            "processor": \.processorShare, "merchantValidation": \.merchantValidationShare,
            "tokenNotifications": \.tokenNotificationShare,
        ]
        for (party, share) in (server.shares ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let keyPath = parties[party] else {
                report(
                    "server.shares.\(party)", .invalidChoice,
                    "server.shares has processor, merchantValidation and tokenNotifications (got '\(party.prefix(80))')"
                )
                continue
            }
            var limits = self[keyPath: keyPath]
            check(share.inFlight, "shares.\(party).inFlight", 1...1_000_000, "must be 1 to 1000000") {
                limits.maximumInFlight = $0
            }
            check(share.queued, "shares.\(party).queued", 0...1_000_000, "must be 0 to 1000000") {
                limits.maximumQueued = $0
            }
            check(share.waitMilliseconds, "shares.\(party).waitMilliseconds", 0...600_000, "must be 0 to 600000") {
                limits.maximumWait = .milliseconds($0)
            }
            self[keyPath: keyPath] = limits
        }
        check(
            server.tokenNotificationTimeLimitSeconds, "tokenNotificationTimeLimitSeconds", 1...60,
            "must be 1 to 60 (Apple waits for the answer)"
        ) { tokenNotificationTimeLimit = .seconds($0) }
        if let failures = server.adminFailureLimit {
            if let limit = failures.limit, limit.perMinute < 1 || limit.burst < 1 {
                report(
                    "server.adminFailureLimit", .outOfRange,
                    "server.adminFailureLimit needs perMinute >= 1 and burst >= 1, or \"off\"")
            } else {
                adminFailureLimit = failures.limit
            }
        }
        return Self.once(problems)
    }

    /// Each problem once (a field the catalog and a section both decode reports once).
    private static func once(_ problems: [ConfigurationProblem]) -> [ConfigurationProblem] {
        var seen = Set<String>()
        return problems.filter { seen.insert("\($0.path)|\($0.code.rawValue)").inserted }
    }
}
