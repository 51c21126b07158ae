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
    enum SectionKey: String, CodingKey, CaseIterable {
        case server, processor, publicBaseURL
    }

    /// Decodes every section that is present; a section that cannot be decoded is reported and left out.
    static func decode(_ data: Data) -> ConfigurationFile {
        var file = ConfigurationFile()
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            file.problems.append(.init(path: "", code: .malformed, message: "the file is not a JSON object"))
            return file
        }
        if !Set(object.keys).subtracting(SectionKey.allCases.map(\.rawValue)).isEmpty {
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
            typealias CodingKeys = SectionKey
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
/// still read; remembers the fields given and where the section is, so that every later problem is reported at a
/// path made from the coding path (``path(_:)``), never typed by hand.
struct FieldReader<Key: CodingKey> {
    let container: KeyedDecodingContainer<Key>
    let at: FieldPaths<Key>
    var problems: [ConfigurationProblem] = []
    /// The fields read with a value (not absent, not null).
    var given: Set<String> = []

    init(_ decoder: any Decoder, keys: Key.Type) throws {
        container = try decoder.container(keyedBy: Key.self)
        at = FieldPaths(decoder.codingPath)
    }

    mutating func read<T: Decodable>(_ key: Key, as type: T.Type = T.self) -> T? {
        do {
            let value = try container.decodeIfPresent(T.self, forKey: key)
            if value != nil { given.insert(key.stringValue) }
            return value
        } catch {
            problems.append(ConfigurationFile.problem(error))
            return nil
        }
    }
}

/// The paths of a section's fields (`server.port`, `server.shares.processor.inFlight`), made from the section's
/// coding path and its keys.
struct FieldPaths<Key: CodingKey>: Sendable {
    /// The section's own path (`server`).
    let section: String

    init(_ codingPath: [any CodingKey]) {
        section = FieldPath.text(codingPath)
    }

    init(section key: ConfigurationFile.SectionKey) {
        section = key.stringValue
    }

    /// The path of `key`, followed by `rest` (`.checkouts`, `[2]`).
    func callAsFunction(_ key: Key, _ rest: String = "") -> String {
        (section.isEmpty ? key.stringValue : "\(section).\(key.stringValue)") + rest
    }
}

/// The problems found while a configuration is assembled, in the order found; ``reported`` keeps each once.
struct ConfigurationProblems {
    private(set) var found: [ConfigurationProblem]

    init(_ found: [ConfigurationProblem]) {
        self.found = found
    }

    mutating func report(_ path: String, _ code: ConfigurationProblem.Code, _ message: String) {
        found.append(ConfigurationProblem(path: path, code: code, message: message))
    }

    /// Sets `value` when it is within `range`, else reports it at `path` as `\(path) \(rule) (got value)`.
    mutating func check(_ value: Int?, _ path: String, _ range: ClosedRange<Int>, _ rule: String, set: (Int) -> Void) {
        guard let value else { return }
        if range.contains(value) {
            set(value)
        } else {
            report(path, .outOfRange, "\(path) \(rule) (got \(value))")
        }
    }

    /// Each problem once (a field the catalog and a section both decode reports once).
    var reported: [ConfigurationProblem] {
        var seen = Set<String>()
        return found.filter { seen.insert("\($0.path)|\($0.code.rawValue)").inserted }
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

    /// Checks every field of a decoded file and sets what it configures: the catalog, then one reader per section
    /// (``applyProcessor(_:alias:catalogGiven:folder:to:)``, ``applyPublicURL(_:)``,
    /// ``applyServer(_:folder:to:)``).
    /// - Returns: every problem found (decoding's and the rules'), each once, in the order of the file's sections.
    mutating func apply(_ file: ConfigurationFile, folder: URL) -> [ConfigurationProblem] {
        var problems = ConfigurationProblems(file.problems)
        if let catalog = file.catalog { store = catalog }
        applyProcessor(
            file.processor, alias: file.server.map { ($0.processor, $0.at(.processor)) },
            catalogGiven: file.catalog != nil, folder: folder, to: &problems)
        applyPublicURL(file, to: &problems)
        if let server = file.server { applyServer(server, folder: folder, to: &problems) }
        return problems.reported
    }

    /// `path` as given when absolute, else relative to the configuration file's `folder`.
    static func resolve(_ path: String, in folder: URL) -> String {
        path.hasPrefix("/") ? path : folder.appendingPathComponent(path).standardizedFileURL.path
    }

    /// The one public URL: `server.publicURL`, or its old name, the top-level `publicBaseURL`.
    mutating func applyPublicURL(_ file: ConfigurationFile, to problems: inout ConfigurationProblems) {
        let newPath = file.server?.at(.publicURL) ?? FieldPaths<ServerSection.CodingKeys>(section: .server)(.publicURL)
        let oldPath = ConfigurationFile.SectionKey.publicBaseURL.stringValue
        if file.publicBaseURL != nil, file.server?.publicURL != nil {
            problems.report(
                oldPath, .conflict, "give the public URL once: \(newPath) (\(oldPath) is its old name)")
        }
        guard let text = file.server?.publicURL ?? file.publicBaseURL else { return }
        let path = file.server?.publicURL != nil ? newPath : oldPath
        if let url = PublicURL(text) {
            publicURL = url
        } else {
            problems.report(path, .invalidURL, "\(path) \(PublicURL.rule) (got '\(text.prefix(80))')")
        }
    }
}
