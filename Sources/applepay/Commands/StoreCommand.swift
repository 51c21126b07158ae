import Foundation
import Foundations
import MerchantCore
import MerchantServer
import MerchantStore

/// `applepay store`: work on an order store outside the server.
struct StoreCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "store",
            abstract: "Work on an order store: copy an embedded SQLite store into PostgreSQL.",
            subcommands: [StoreMigrateCommand.self])
    }
}

/// `applepay store migrate --from sqlite:PATH --to postgresql://... [--json]`.
struct StoreMigrateCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "migrate",
            abstract: "Copy a SQLite order store into a PostgreSQL one (idempotent; one transaction).",
            usage: ["--from sqlite:PATH --to postgresql://... [--json]"],
            options: [
                ("--from sqlite:PATH", "The SQLite store to copy (required; it must exist)."),
                ("--to URI", "The PostgreSQL store, any libpq URI (required; its schema is created if missing)."),
                ("--json", "Print the counts as one JSON object instead of lines of text."),
            ],
            discussion: """
                Copies checkouts, orders, payments, refunds, the event log, Wallet order fulfilments and device
                registrations, subscriptions, their charges and merchant-token events, with their ids, secrets,
                times and event numbers, in one PostgreSQL transaction: a failed or interrupted run leaves nothing.
                A row already in PostgreSQL is left as it is, so running it again copies nothing and a rerun after a
                failure copies what is missing. Prints, per table, the rows copied and those already present. An
                event number PostgreSQL uses for another event (the target holds another store's data) stops it:
                exit 1, nothing written. Stop the servers writing to the SQLite file first, or run it again after
                they stopped to pick up what they wrote meanwhile.
                """)
    }

    var source: String
    var target: String
    var json: Bool

    init(arguments: inout Arguments) throws {
        json = arguments.flag("--json")
        guard let from = try arguments.option("--from") else { throw UsageError("--from sqlite:PATH is required") }
        guard let to = try arguments.option("--to") else { throw UsageError("--to postgresql://... is required") }
        guard case .sqlite(let path) = try? OrderStoreLocation(parsing: from), path != ":memory:" else {
            throw UsageError("--from must be sqlite:PATH (a file)")
        }
        guard case .postgres(let uri) = try? OrderStoreLocation(parsing: to) else {
            throw UsageError("--to must be a postgres:// or postgresql:// URI")
        }
        source = path
        target = uri
    }

    func run() async throws -> Int32 {
        let redacted = OrderStoreLocation.postgres(uri: target).redacted
        let report: StoreMigration.Report
        do {
            let store = try await PostgresOrderStore(uri: target, poolSize: 1)
            report = try await StoreMigration.copy(sqlitePath: source, to: store)
        } catch {
            Output.standardError(
                "error: cannot migrate sqlite:\(source) to \(redacted): \(error.message) [\(error.code)]")
            return ExitCode.failure
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
        return ExitCode.success
    }
}
