import Foundation
import Foundations
import MerchantCore

/// Where the order store lives, as given to `applepay serve --store` or the configuration file's `server.store`.
///
/// `sqlite:PATH` (a file, created if missing), `sqlite::memory:` (private, lost at exit), or a PostgreSQL
/// connection URI as libpq reads it: `postgres://USER@HOST:PORT/DB`, `postgresql://...`, including
/// `postgresql:///DB?host=/path/to/socket/dir`.
public enum OrderStoreLocation: Sendable, Equatable {
    case sqlite(path: String)
    case postgres(uri: String)

    /// Parses `sqlite:PATH` or a `postgres://` / `postgresql://` URI.
    /// - Throws: ``OrderStoreError`` `invalidLocation` for anything else, or an empty path.
    public init(parsing text: String) throws(OrderStoreError) {
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            self = .postgres(uri: text)
            return
        }
        guard text.hasPrefix("sqlite:") else {
            throw OrderStoreError(
                .invalidLocation, "--store must be sqlite:PATH or postgresql://... (got \"\(text)\")")
        }
        let path = String(text.dropFirst("sqlite:".count))
        guard !path.isEmpty else { throw OrderStoreError(.invalidLocation, "--store sqlite: needs a file path") }
        self = .sqlite(path: path)
    }

    /// Opens (creating and migrating) the store.
    /// - Parameters:
    ///   - poolSize: connections kept by a PostgreSQL store.
    ///   - clock: the time stamped on rows and events.
    /// - Throws: ``OrderStoreError`` `storage` when it cannot be opened.
    public func open(poolSize: Int = 4, clock: @escaping @Sendable () -> Date = { Date() })
        async throws(OrderStoreError) -> any OrderStore
    {
        switch self {
        case .sqlite(let path): try SQLiteOrderStore(path: path, clock: clock)
        case .postgres(let uri): try await PostgresOrderStore(uri: uri, poolSize: poolSize, clock: clock)
        }
    }

    /// The location without a password, for logs.
    public var redacted: String {
        switch self {
        case .sqlite(let path):
            return "sqlite:" + path
        case .postgres(let uri):
            guard var components = URLComponents(string: uri), components.password != nil else { return uri }
            components.password = "***"
            return components.string ?? "postgresql://***"
        }
    }
}
