import Foundation

/// Which payment processor the server assembles, read once from `--processor URL` or the file's `"processor"`
/// section (`{"kind": "http", "url": "https://processor.internal:9090", "timeoutSeconds": 10}`; the old
/// `server.processor` URL is read as an alias of kind `http`). The call time limit, `processor.timeoutSeconds`, is
/// the catalog's ``MerchantCore/ProcessorSettings`` (every kind has one).
///
/// Shaped for more connectors: each kind is a case with the settings it needs (a base URL, key files).
public enum ProcessorChoice: Sendable, Hashable {
    /// No processor named (kind `sandbox`, the default): only sandbox mode may start, its plug-in running the
    /// sandbox processor in process; outside it the server refuses to start (`noProcessor`).
    case sandbox
    /// A service speaking docs/PROCESSOR-PROTOCOL.md at `url` (kind `http`).
    case http(url: URL)

    /// The section's `kind`.
    public var kind: String {
        switch self {
        case .sandbox: "sandbox"
        case .http: "http"
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
