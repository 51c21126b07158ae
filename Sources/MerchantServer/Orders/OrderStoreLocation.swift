import Foundation

/// Where the order store lives, as given to `applepay serve --store`.
///
/// `sqlite:PATH` (a file, created if missing) or `sqlite::memory:` (private, lost at exit). A later
/// `postgresql://...` kind plugs in here.
public enum OrderStoreLocation: Sendable, Equatable {
    case sqlite(path: String)

    /// Parses `sqlite:PATH`.
    /// - Throws: ``OrderStoreError`` `invalidLocation` for anything else, or an empty path.
    public init(parsing text: String) throws(OrderStoreError) {
        guard text.hasPrefix("sqlite:") else {
            throw OrderStoreError(.invalidLocation, "--store must be sqlite:PATH (got \"\(text)\")")
        }
        let path = String(text.dropFirst("sqlite:".count))
        guard !path.isEmpty else { throw OrderStoreError(.invalidLocation, "--store sqlite: needs a file path") }
        self = .sqlite(path: path)
    }

    /// Opens (creating and migrating) the store.
    /// - Throws: ``OrderStoreError`` `storage` when it cannot be opened.
    public func open(clock: @escaping @Sendable () -> Date = { Date() }) throws(OrderStoreError) -> any OrderStore {
        switch self {
        case .sqlite(let path): try SQLiteOrderStore(path: path, clock: clock)
        }
    }
}
