import Foundation
import Foundations
import MerchantCore
import MerchantServer
import MerchantStore
import Processors

/// `applepay reconcile --since DATE [--until DATE] --store LOCATION (--config FILE | --processor URL |
/// --settlement-report FILE.csv) [--json]`: the finance team's daily check of our orders against the provider's
/// own records.
struct ReconcileCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "reconcile",
            abstract: "Compare the orders of a period with the payment provider's own records; print each discrepancy.",
            usage: [
                "--since DATE [--until DATE] --store LOCATION (--config FILE | --processor URL | "
                    + "--settlement-report FILE.csv) [--json]"
            ],
            options: [
                ("--since DATE", "The period's start: YYYY-MM-DD (midnight UTC) or an ISO 8601 time (required)."),
                ("--until DATE", "The period's end, excluded (default: now)."),
                ("--store LOCATION", "The order store: sqlite:PATH or a postgresql:// URI (required)."),
                (
                    "--config FILE",
                    "The server's configuration: its \"processor\" section names the provider and its key files."
                ),
                ("--processor URL", "A processor speaking docs/PROCESSOR-PROTOCOL.md (the sandbox's, say)."),
                (
                    "--settlement-report FILE.csv",
                    "Adyen's Settlement details report, downloaded from the Customer Area (Adyen lists no payments)."
                ),
                ("--json", "Print the report as one JSON object instead of lines of text."),
            ],
            discussion: """
                Reads our orders created in the period (and an hour either side, to match payments begun at its
                edges) and the provider's records: Stripe's PaymentIntents and refunds by creation time, each
                Checkout.com payment by its reference, the processor protocol's charge list, or the rows of an Adyen
                Settlement details report (Settled, Refunded). Prints one line per discrepancy: a capture with no
                order (chargedWithoutOrder), a capture our order does not record as paid (capturedNotPaid), an order
                paid that the provider did not capture (paidNotCaptured; for a settlement report or look-ups by
                reference only when the provider lists the payment), another amount (amountMismatch) or another sum
                refunded (refundMismatch). Exit 0 when the two agree, 1 when there are discrepancies, 2 when the
                provider or the report could not be read, 66 when a file is missing.
                """)
    }

    var since: Date
    var until: Date
    var store: OrderStoreLocation
    var source: Source
    var json: Bool

    enum Source {
        case configuration(String)
        case processor(URL)
        case settlementReport(String)
    }

    init(arguments: inout Arguments) throws {
        json = arguments.flag("--json")
        guard let since = try arguments.option("--since") else { throw UsageError("--since DATE is required") }
        guard let start = StatementCheck.date(parsing: since) else {
            throw UsageError("--since must be YYYY-MM-DD or an ISO 8601 time (got '\(since.prefix(40))')")
        }
        self.since = start
        if let until = try arguments.option("--until") {
            guard let end = StatementCheck.date(parsing: until) else {
                throw UsageError("--until must be YYYY-MM-DD or an ISO 8601 time (got '\(until.prefix(40))')")
            }
            self.until = end
        } else {
            until = Date()
        }
        guard until > self.since else { throw UsageError("--until must come after --since") }
        guard let location = try arguments.option("--store") else {
            throw UsageError("--store sqlite:PATH or postgresql://... is required")
        }
        guard let parsed = try? OrderStoreLocation(parsing: location) else {
            throw UsageError("--store must be sqlite:PATH or a postgresql:// URI")
        }
        store = parsed
        let config = try arguments.option("--config")
        let processor = try arguments.option("--processor")
        let report = try arguments.option("--settlement-report")
        switch (config, processor, report) {
        case (let file?, nil, nil): source = .configuration(file)
        case (nil, let text?, nil):
            guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw UsageError("--processor must be an http(s) URL with a host")
            }
            source = .processor(url)
        case (nil, nil, let file?): source = .settlementReport(file)
        default:
            throw UsageError("give exactly one of --config FILE, --processor URL and --settlement-report FILE.csv")
        }
    }

    func run() async throws -> Int32 {
        for case let path? in [source.file, store.file] where !FileManager.default.fileExists(atPath: path) {
            Output.standardError("error: no such file: \(path)")
            return 66
        }
        let orders: any OrderStore
        do {
            orders = try await store.open(poolSize: 1)
        } catch {
            Output.standardError("error: cannot open \(store.redacted): \(error.message) [\(error.code)]")
            return ExitCode.failure
        }
        let statement: ([Order]) async throws(ProcessorError) -> ProviderStatement
        switch source {
        case .settlementReport(let path):
            let report: AdyenSettlementReport
            do {
                report = try AdyenSettlementReport(csv: try Data(contentsOf: URL(fileURLWithPath: path)))
            } catch let error as SettlementReportError {
                Output.standardError("error: \(path): \(error.message) [\(error.code.rawValue)]")
                return 2
            }
            statement = { _ throws(ProcessorError) in report.statement }
        case .processor(let url):
            let processor = HTTPPaymentProcessor(baseURL: url, timeout: .seconds(30))
            statement = { orders throws(ProcessorError) in
                try await processor.statement(since: since, until: until, orders: orders)
            }
        case .configuration(let file):
            let processor: any PaymentProcessor
            do throws(ServerStartError) {
                processor = try await MerchantApplication.paymentProcessor(
                    for: try MerchantServerConfiguration.load(file: file))
            } catch {
                Output.standardError("error: \(file): \(error.message) [\(error.code.rawValue)]")
                return 2
            }
            guard let lists = processor as? any ProviderStatements else {
                Output.standardError(
                    "error: \(processor.name) lists no payments: give its settlement report (--settlement-report FILE.csv)"
                )
                return 2
            }
            statement = { orders throws(ProcessorError) in
                try await lists.statement(since: since, until: until, orders: orders)
            }
        }
        let report: StatementCheck.Report
        do {
            report = try await StatementCheck(store: orders).run(since: since, until: until, statement: statement)
        } catch let error as ProcessorError {
            Output.standardError("error: the provider's records could not be read: \(error.message) [\(error.code)]")
            return 2
        } catch let error as OrderStoreError {
            Output.standardError("error: the orders could not be read: \(error.message) [\(error.code)]")
            return ExitCode.failure
        }
        if json {
            print(try Output.json(report))
        } else {
            for found in report.discrepancies {
                let names = [found.orderID, found.transactionID.map { "transaction " + $0 }, found.processorReference]
                    .compactMap { $0 }.joined(separator: ", ")
                print("\(found.kind.rawValue) \(names): ours \(found.ours), provider \(found.provider)")
            }
            print(
                "\(report.discrepancies.count) discrepancies between \(report.orders) orders and \(report.entries) "
                    + "provider records from \(report.since.formatted(.iso8601)) to \(report.until.formatted(.iso8601))"
            )
        }
        return report.discrepancies.isEmpty ? ExitCode.success : ExitCode.failure
    }
}

extension ReconcileCommand.Source {
    /// The file the source names, if any.
    var file: String? {
        switch self {
        case .configuration(let path), .settlementReport(let path): path
        case .processor: nil
        }
    }
}

extension OrderStoreLocation {
    /// The SQLite file, if it is one (a store that must exist before a check reads it).
    fileprivate var file: String? {
        if case .sqlite(let path) = self, path != ":memory:" { return path }
        return nil
    }
}
