import ArgumentParser
import Foundation
import Foundations
import MerchantCore
import MerchantServer
import MerchantStore
import Processors

/// `applepay reconcile --since DATE [--until DATE] --store LOCATION (--config FILE | --processor URL |
/// --settlement-report FILE.csv) [--json]`: the finance team's daily check of our orders against the provider's
/// own records.
struct ReconcileCommand: StatusCommand {
    /// Exit statuses of this command beyond 0 (the two agree), 1 (discrepancies, or the orders unreadable), 64 and
    /// 66.
    enum Status {
        /// The provider's records or the settlement report could not be read.
        static let providerUnreadable = ExitCode(2)
    }

    static let configuration = CommandConfiguration(
        commandName: "reconcile",
        abstract: "Compare the orders of a period with the payment provider's own records; print each discrepancy.",
        usage: """
            applepay reconcile --since DATE [--until DATE] --store LOCATION (--config FILE | --processor URL | \
            --settlement-report FILE.csv) [--json]
            """,
        discussion: """
            Reads our orders created in the period (and an hour either side, to match payments begun at its \
            edges) and the provider's records: Stripe's PaymentIntents and refunds by creation time, each \
            Checkout.com payment by its reference, the processor protocol's charge list, or the rows of an Adyen \
            Settlement details report (Settled, Refunded). Prints one line per discrepancy: a capture with no \
            order (chargedWithoutOrder), a capture our order does not record as paid (capturedNotPaid), an order \
            paid that the provider did not capture (paidNotCaptured; for a settlement report or look-ups by \
            reference only when the provider lists the payment), another amount (amountMismatch) or another sum \
            refunded (refundMismatch). Exit 0 when the two agree, 1 when there are discrepancies, 2 when the \
            provider or the report could not be read, 66 when a file is missing.
            """)

    @Option(
        name: .customLong("since"),
        help: ArgumentHelp(
            "The period's start: YYYY-MM-DD (midnight UTC) or an ISO 8601 time (required).", valueName: "DATE"))
    var sinceText: String?

    @Option(
        name: .customLong("until"), help: ArgumentHelp("The period's end, excluded (default: now).", valueName: "DATE"))
    var untilText: String?

    @Option(
        name: .customLong("store"),
        help: ArgumentHelp(
            "The order store: sqlite:PATH or a postgresql:// URI (required).", valueName: "LOCATION"))
    var storeText: String?

    @Option(
        name: .customLong("config"),
        help: ArgumentHelp(
            "The server's configuration: its \"processor\" section names the provider and its key files.",
            valueName: "FILE"))
    var configurationFile: String?

    @Option(
        name: .customLong("processor"),
        help: ArgumentHelp("A processor speaking docs/PROCESSOR-PROTOCOL.md (the sandbox's, say).", valueName: "URL"))
    var processorText: String?

    @Option(
        name: .customLong("settlement-report"),
        help: ArgumentHelp(
            "Adyen's Settlement details report, downloaded from the Customer Area (Adyen lists no payments).",
            valueName: "FILE.csv"))
    var settlementReport: String?

    @Flag(help: "Print the report as one JSON object instead of lines of text.")
    var json = false

    enum Source {
        case configuration(String)
        case processor(URL)
        case settlementReport(String)
    }

    /// The period, the store and the provider's records, as the options name them.
    struct Check {
        var since: Date
        var until: Date
        var store: OrderStoreLocation
        var source: Source
    }

    func validate() throws {
        _ = try check(now: Date())
    }

    /// What the options ask to compare; a usage error names the option at fault.
    func check(now: Date) throws -> Check {
        guard let sinceText else { throw ValidationError("--since DATE is required") }
        guard let since = StatementCheck.date(parsing: sinceText) else {
            throw ValidationError("--since must be YYYY-MM-DD or an ISO 8601 time (got '\(sinceText.prefix(40))')")
        }
        var until = now
        if let untilText {
            guard let end = StatementCheck.date(parsing: untilText) else {
                throw ValidationError(
                    "--until must be YYYY-MM-DD or an ISO 8601 time (got '\(untilText.prefix(40))')")
            }
            until = end
        }
        guard until > since else { throw ValidationError("--until must come after --since") }
        guard let storeText else { throw ValidationError("--store sqlite:PATH or postgresql://... is required") }
        guard let store = try? OrderStoreLocation(parsing: storeText) else {
            throw ValidationError("--store must be sqlite:PATH or a postgresql:// URI")
        }
        let source: Source
        switch (configurationFile, processorText, settlementReport) {
        case (let file?, nil, nil): source = .configuration(file)
        case (nil, let text?, nil):
            guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw ValidationError("--processor must be an http(s) URL with a host")
            }
            source = .processor(url)
        case (nil, nil, let file?): source = .settlementReport(file)
        default:
            throw ValidationError(
                "give exactly one of --config FILE, --processor URL and --settlement-report FILE.csv")
        }
        return Check(since: since, until: until, store: store, source: source)
    }

    func perform() async throws -> ExitCode {
        let check = try check(now: Date())
        let (since, until, store, source) = (check.since, check.until, check.store, check.source)
        for case let path? in [source.file, store.file] where !FileManager.default.fileExists(atPath: path) {
            Output.standardError("error: no such file: \(path)")
            return .noInput
        }
        let orders: any OrderStore
        do {
            orders = try await store.open(poolSize: 1)
        } catch {
            Output.standardError("error: cannot open \(store.redacted): \(error.message) [\(error.code)]")
            return .failure
        }
        let statement: ([Order]) async throws(ProcessorError) -> ProviderStatement
        switch source {
        case .settlementReport(let path):
            let report: AdyenSettlementReport
            do {
                report = try AdyenSettlementReport(csv: try Data(contentsOf: URL(fileURLWithPath: path)))
            } catch let error as SettlementReportError {
                Output.standardError("error: \(path): \(error.message) [\(error.code.rawValue)]")
                return Status.providerUnreadable
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
                return Status.providerUnreadable
            }
            guard let lists = processor as? any ProviderStatements else {
                Output.standardError(
                    "error: \(processor.name) lists no payments: give its settlement report (--settlement-report FILE.csv)"
                )
                return Status.providerUnreadable
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
            return Status.providerUnreadable
        } catch let error as OrderStoreError {
            Output.standardError("error: the orders could not be read: \(error.message) [\(error.code)]")
            return .failure
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
        return report.discrepancies.isEmpty ? .success : .failure
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
