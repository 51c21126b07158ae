import ArgumentParser
import Foundation
import Foundations
import MerchantCore
import MerchantServer
import MerchantStore

/// `applepay store`: work on an order store outside the server.
struct StoreCommand: CommandGroup {
    static let configuration = CommandConfiguration(
        commandName: "store", abstract: "Work on an order store: copy an embedded SQLite store into PostgreSQL.",
        subcommands: [StoreMigrateCommand.self])
}

/// `applepay store migrate --from sqlite:PATH --to postgresql://... [--json]`.
struct StoreMigrateCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Copy a SQLite order store into a PostgreSQL one (idempotent; one transaction).",
        usage: "applepay store migrate --from sqlite:PATH --to URI [--json]",
        discussion: """
            Copies checkouts, orders, payments, refunds, the event log, Wallet order fulfilments and device \
            registrations, subscriptions, their charges and merchant-token events, with their ids, secrets, \
            times and event numbers, in one PostgreSQL transaction: a failed or interrupted run leaves nothing. \
            A row already in PostgreSQL is left as it is, so running it again copies nothing and a rerun after a \
            failure copies what is missing. Prints, per table, the rows copied and those already present. An \
            event number PostgreSQL uses for another event (the target holds another store's data) stops it: \
            exit 1, nothing written. Stop the servers writing to the SQLite file first, or run it again after \
            they stopped to pick up what they wrote meanwhile.
            """)

    @Option(help: ArgumentHelp("The SQLite store to copy (required; it must exist).", valueName: "sqlite:PATH"))
    var from: String?

    @Option(
        help: ArgumentHelp(
            "The PostgreSQL store, any libpq URI such as postgresql://HOST/DB (required; its schema is created if "
                + "missing).", valueName: "URI"))
    var to: String?

    @Flag(help: "Print the counts as one JSON object instead of lines of text.")
    var json = false

    func validate() throws {
        _ = try stores()
    }

    /// The SQLite file to copy and the PostgreSQL URI to copy it to.
    func stores() throws -> (source: String, target: String) {
        guard let from else { throw ValidationError("--from sqlite:PATH is required") }
        guard let to else { throw ValidationError("--to postgresql://... is required") }
        guard case .sqlite(let path) = try? OrderStoreLocation(parsing: from), path != ":memory:" else {
            throw ValidationError("--from must be sqlite:PATH (a file)")
        }
        guard case .postgres(let uri) = try? OrderStoreLocation(parsing: to) else {
            throw ValidationError("--to must be a postgres:// or postgresql:// URI")
        }
        return (path, uri)
    }

    func perform() async throws -> ExitCode {
        let (source, target) = try stores()
        let redacted = OrderStoreLocation.postgres(uri: target).redacted
        let report: StoreMigration.Report
        do {
            let store = try await PostgresOrderStore(uri: target, poolSize: 1)
            report = try await StoreMigration.copy(sqlitePath: source, to: store)
        } catch {
            Output.standardError(
                "error: cannot migrate sqlite:\(source) to \(redacted): \(error.message) [\(error.code)]")
            return .failure
        }
        if json {
            struct Summary: Encodable {
                var from: String
                var to: String
                var tables: [StoreMigration.TableCount]
                var copied: Int
                var alreadyPresent: Int
            }
            print(
                try Output.json(
                    Summary(
                        from: "sqlite:" + source, to: redacted, tables: report.tables, copied: report.copied,
                        alreadyPresent: report.alreadyPresent)))
        } else {
            let width = report.tables.map(\.table.count).max() ?? 0
            for count in report.tables {
                let name = count.table.padding(toLength: width, withPad: " ", startingAt: 0)
                print("\(name)  \(count.copied) copied, \(count.alreadyPresent) already present")
            }
            print(
                "Copied \(report.copied) rows from sqlite:\(source) to \(redacted); \(report.alreadyPresent) were already there."
            )
        }
        return .success
    }
}
