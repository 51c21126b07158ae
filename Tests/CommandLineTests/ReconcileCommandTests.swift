import Foundation
import TestSupport
import Testing

/// `applepay reconcile`: the daily check from the command line, here on an Adyen Settlement details report (the
/// admin API's form, against the processors' own lists, is tested in MerchantServerTests and the provider runs).
@Suite("applepay reconcile")
struct ReconcileCommandTests {
    /// The header Adyen documents and a settlement from its sample report.
    static let report = """
        Company Account,Merchant Account,Psp Reference,Merchant Reference,Payment Method,Creation Date,TimeZone,Type,Modification Reference,Gross Currency,Gross Debit (GC),Gross Credit (GC),Exchange Rate,Net Currency,Net Debit (NC),Net Credit (NC),Commission (NC),Markup (NC),Scheme Fees (NC),Interchange (NC),Payment Method Variant,Modification Merchant Reference,Batch Number
        TestCompany,TestMerchant,1813702551707653,3vpzf7,visa,2013-06-03 11:26:49,CET,Settled,1713702551795048,GBP,,5.00,1,GBP,,4.88,,0.04,0.01,0.07,visaclassic,,4

        """

    @Test("a settlement with no order exits 1; an unreadable report 2, a missing file 66, bad usage 64")
    func settlementReport() async throws {
        let folder = try TemporaryDirectory(prefix: "reconcile")
        defer { folder.remove() }
        let store = folder.path("orders.sqlite")
        // An empty file is an empty SQLite database: the store is created in it.
        #expect(FileManager.default.createFile(atPath: store, contents: nil, attributes: [.posixPermissions: 0o600]))
        let csv = folder.path("settlement_detail_report_batch_4.csv")
        try Data(Self.report.utf8).write(to: URL(fileURLWithPath: csv))
        let common = ["reconcile", "--since", "2013-06-01", "--until", "2013-07-01", "--store", "sqlite:" + store]

        let found = try await CommandLineTool.run(common + ["--settlement-report", csv])
        #expect(found.status == 1, "\(found.standardError)")
        #expect(found.standardOutput.contains("chargedWithoutOrder transaction 3vpzf7, 1813702551707653"))
        #expect(found.standardOutput.contains("1 discrepancies between 0 orders and 1 provider records"))

        let json = try await CommandLineTool.run(common + ["--settlement-report", csv, "--json"])
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
        let discrepancies = try #require(report["discrepancies"] as? [[String: Any]])
        #expect(discrepancies.first?["kind"] as? String == "chargedWithoutOrder")
        #expect(discrepancies.first?["provider"] as? String == "captured 500 GBP")
        #expect(report["listsEveryPayment"] as? Bool == false)

        try Data("Psp Reference,Type\n1,Settled\n".utf8).write(to: URL(fileURLWithPath: csv))
        let unreadable = try await CommandLineTool.run(common + ["--settlement-report", csv])
        #expect(unreadable.status == 2)
        #expect(unreadable.standardError.contains("settlementReportMissingColumn"))

        let missing = try await CommandLineTool.run(common + ["--settlement-report", folder.path("none.csv")])
        #expect(missing.status == 66)
        for arguments in [
            ["reconcile"], common, common + ["--settlement-report", csv, "--processor", "http://127.0.0.1:1"],
            ["reconcile", "--since", "June", "--store", "sqlite:" + store, "--settlement-report", csv],
            ["reconcile", "--since", "2013-06-01", "--until", "2013-05-01", "--store", "sqlite:" + store],
        ] {
            #expect(try await CommandLineTool.run(arguments).status == 64, "\(arguments)")
        }
    }
}
