import ApplePay
import Foundation
import Foundations
import HTTPClient
import MerchantTestSupport
import ProcessorAPI
import ProcessorService
import Processors
import TestSupport
import Testing

@testable import MerchantCore

/// The daily check: ``StatementComparison`` (pure), Adyen's Settlement details report read as Adyen documents it,
/// and `GET /admin/v1/reconciliation` against the sandbox processor service's own ledger.
@Suite("Reconciliation against the provider's statement")
struct StatementTests {
    static func order(
        _ id: String, transaction: String, status: OrderStatus, amount: Int64 = 1000, refunded: Int64 = 0,
        reference: String? = nil
    ) -> Order {
        Order(
            id: id, checkoutID: "chk_" + id, status: status, currencyCode: "EUR", lines: [],
            totals: OrderTotals(subtotal: amount, discount: 0, shipping: 0, tax: 0, total: amount),
            payment: PaymentRecord(
                id: "pay_" + id, transactionID: transaction, status: .approved, amount: amount, currencyCode: "EUR",
                processorReference: reference),
            refunded: refunded, viewSecret: "s", createdAt: Date(timeIntervalSince1970: 1_900_000_000),
            updatedAt: Date(timeIntervalSince1970: 1_900_000_000))
    }

    @Test("every kind of discrepancy, and none where the two agree")
    func comparison() {
        let orders = [
            Self.order("o1", transaction: "t1", status: .paid),
            Self.order("o2", transaction: "t2", status: .declined),
            Self.order("o3", transaction: "t3", status: .paid),
            Self.order("o4", transaction: "t4", status: .partiallyRefunded, refunded: 300, reference: "psp4"),
            Self.order("o5", transaction: "t5", status: .paid, amount: 1000),
            Self.order("o6", transaction: "t6", status: .paid),
        ]
        let entries = [
            ProviderStatementEntry(
                reference: "psp1", merchantReference: "t1", amount: 1000, currencyCode: "EUR", captured: true),
            ProviderStatementEntry(
                reference: "psp2", merchantReference: "t2", amount: 1000, currencyCode: "EUR", captured: true),
            ProviderStatementEntry(
                reference: "psp3", merchantReference: "t3", amount: 1000, currencyCode: "EUR", captured: false),
            // Found by the provider's reference (no merchant reference echoed).
            ProviderStatementEntry(
                reference: "psp4", merchantReference: nil, amount: 1000, currencyCode: "eur", captured: true,
                refunded: 500),
            ProviderStatementEntry(
                reference: "psp5", merchantReference: "t5", amount: 1200, currencyCode: "EUR", captured: true),
            ProviderStatementEntry(
                reference: "psp9", merchantReference: "t9", amount: 700, currencyCode: "EUR", captured: true),
        ]
        let every = StatementComparison.compare(
            orders: orders, with: ProviderStatement(entries: entries, listsEveryPayment: true))
        #expect(
            every.map(\.kind) == [
                .capturedNotPaid, .paidNotCaptured, .refundMismatch, .amountMismatch, .paidNotCaptured,
                .chargedWithoutOrder,
            ])
        #expect(every.map(\.orderID) == ["o2", "o3", "o4", "o5", "o6", nil])
        #expect(every[2].ours == "refunded 300")
        #expect(every[2].provider == "refunded 500")
        #expect(every.last?.processorReference == "psp9")
        // A settlement report proves nothing about a payment it does not list (o6).
        let settled = StatementComparison.compare(
            orders: orders, with: ProviderStatement(entries: entries, listsEveryPayment: false))
        #expect(!settled.contains { $0.orderID == "o6" })
        #expect(
            StatementComparison.compare(
                orders: [orders[0]], with: ProviderStatement(entries: [entries[0]], listsEveryPayment: true)
            ).isEmpty)
    }

    /// The header Adyen documents and its sample report's two transaction lines (a settlement and a chargeback), with
    /// a refund of the settled payment, a fee line and a payout line.
    static let report = """
        Company Account,Merchant Account,Psp Reference,Merchant Reference,Payment Method,Creation Date,TimeZone,Type,Modification Reference,Gross Currency,Gross Debit (GC),Gross Credit (GC),Exchange Rate,Net Currency,Net Debit (NC),Net Credit (NC),Commission (NC),Markup (NC),Scheme Fees (NC),Interchange (NC),Payment Method Variant,Modification Merchant Reference,Batch Number
        TestCompany,TestMerchant,1813702551707653,3vpzf7,visa,2013-06-03 11:26:49,CET,Settled,1713702551795048,GBP,,5.00,1,GBP,,4.88,,0.04,0.01,0.07,visaclassic,,4
        TestCompany,TestMerchant,1313642467023511,324959451,visa,2013-03-26 22:37:26,CET,Chargeback,2313642467170922,EUR,349.99,,1,EUR,357.49,,7.5,,,,visaclassic,,4
        TestCompany,TestMerchant,1813702551707653,3vpzf7,visa,2013-06-04 09:00:00,CET,Refunded,1713702551799999,GBP,"1.50",,1,GBP,1.50,,,,,,visaclassic,"refund-1, partial",4
        TestCompany,TestMerchant,,,,2013-06-11 04:55:40,CET,Fee,Transaction Fees,GBP,,,1,GBP,0.10,,,,,,,,4
        TestCompany,TestMerchant,,,,2013-06-11 04:55:40,CET,MerchantPayout,,GBP,,,1,GBP,3.28,,,,,,,,4

        """

    @Test("Adyen's Settlement details report: settlements and refunds by Psp Reference, other records skipped")
    func adyenReport() throws {
        let statement = try AdyenSettlementReport(csv: Data(Self.report.utf8)).statement
        #expect(!statement.listsEveryPayment)
        #expect(statement.entries.count == 1)
        let entry = try #require(statement.entries.first)
        #expect(entry.reference == "1813702551707653")
        #expect(entry.merchantReference == "3vpzf7")
        #expect(entry.amount == 500)
        #expect(entry.currencyCode == "GBP")
        #expect(entry.captured)
        #expect(entry.refunded == 150)
        #expect(entry.createdAt == Date(timeIntervalSince1970: 1_370_258_809))
    }

    @Test(
        "a report that cannot be read is refused with the line at fault",
        arguments: [
            ("Psp Reference,Type\n1,Settled\n", "settlementReportMissingColumn"),
            (report.replacingOccurrences(of: ",GBP,,5.00,", with: ",GBP,,5.0x0,"), "settlementReportInvalidAmount"),
            (report + "TestCompany,\"never closed\n", "settlementReportMalformedLine"),
            (
                report.replacingOccurrences(
                    of: "TestMerchant,1813702551707653,3vpzf7,visa,2013-06-03",
                    with: "TestMerchant,,3vpzf7,visa,2013-06-03"), "settlementReportMalformedLine"
            ),
        ])
    func adyenReportRefused(_ text: String, code: String) {
        #expect(throws: SettlementReportError(.init(code), "")) { try AdyenSettlementReport(csv: Data(text.utf8)) }
    }

    @Test(
        "GET /admin/v1/reconciliation: our orders against the processor's ledger; a refund and a charge made there are listed"
    )
    func adminCheck() async throws {
        try await ProcessorHarness.with { ledger in
            try await ServerHarness.with(processor: ledger.processor(timeout: .seconds(10))) { server in
                let (_, _, paid) = try await server.paidCheckout()
                #expect(paid.status == 200, "\(paid.text)")
                let day = Date().formatted(.iso8601.year().month().day())
                let agreed = try await server.admin("GET", "/admin/v1/reconciliation?since=\(day)")
                #expect(agreed.status == 200, "\(agreed.text)")
                #expect(agreed.json["orders"] as? Int == 1)
                #expect(agreed.json["entries"] as? Int == 1)
                #expect((agreed.json["discrepancies"] as? [Any])?.isEmpty == true, "\(agreed.text)")

                // Refunded in the processor's dashboard, bypassing us; and a charge nobody ordered.
                let charge = try #require(try await ledger.charges().first)
                _ = try await ledger.client.send(
                    .postJSON(
                        ledger.service.url.absoluteString + "/v1/charges/\(charge.reference)/refunds",
                        body: Data(#"{"amount": 100, "idempotencyKey": "dashboard-1"}"#.utf8)))
                _ = try await ledger.client.send(
                    .postJSON(
                        ledger.service.url.absoluteString + "/v1/charges",
                        body: Data(
                            #"""
                            {"idempotencyKey": "nobody-ordered", "amount": 999, "currencyCode": "USD",
                             "paymentMethod": {"network": "Visa", "primaryAccountNumber": "4817499999010019",
                             "expirationDate": "301231", "cryptogram": "AAAA"}}
                            """#.utf8)))
                let found = try await server.admin("GET", "/admin/v1/reconciliation?since=\(day)")
                let kinds = (found.json["discrepancies"] as? [[String: Any]])?.compactMap { $0["kind"] as? String }
                #expect(kinds == ["refundMismatch", "chargedWithoutOrder"], "\(found.text)")
                #expect(try await server.admin("GET", "/admin/v1/reconciliation").status == 400)
                #expect(
                    try await server.admin("GET", "/admin/v1/reconciliation?since=\(day)&until=2001-01-01").status
                        == 400)
            }
        }
    }

    @Test("a processor that lists no payments answers 409 statementUnavailable")
    func unavailable() async throws {
        try await ServerHarness.with { server in
            let reply = try await server.admin("GET", "/admin/v1/reconciliation?since=2020-01-01")
            #expect(reply.status == 409)
            #expect(reply.errorCode == "statementUnavailable")
        }
    }
}
