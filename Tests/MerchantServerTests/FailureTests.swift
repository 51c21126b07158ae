import Foundation
import Foundations
import HTTPClient
import MerchantCore
import MerchantServer
import MerchantTestSupport
import ProcessorAPI
import ProcessorService
import Processors
import SQLite
import TestSupport
import Testing

/// Each way a processor's answer can be lost ends in one final state and exactly one charge in the ledger.
@Suite("Payments that survive failure")
struct FailureTests {
    /// Pays a fresh checkout with a fresh token and returns the answer and the token's transaction id.
    static func pay(_ server: ServerHarness) async throws -> (reply: ServerHarness.Reply, checkoutID: String) {
        let (checkout, _, reply) = try await server.paidCheckout()
        return (reply, checkout.id)
    }

    static func transactionID(of orderID: String, _ server: ServerHarness) async throws -> String {
        let order = try await server.admin("GET", "/admin/v1/orders/\(orderID)")
        return try ((order.json["payment"] as? [String: Any])?["transactionId"] as? String).orThrow("transactionId")
    }

    static func reconcile(_ server: ServerHarness) async throws -> [[String: Any]] {
        let pass = try await server.admin("POST", "/admin/v1/reconcile?olderThanSeconds=0")
        #expect(pass.status == 200, "\(pass.text)")
        return pass.json["settled"] as? [[String: Any]] ?? []
    }

    @Test("a late approval: the customer hears 'being confirmed', the reconciler finds the charge and pays the order")
    func lateApproval() async throws {
        try await ProcessorHarness.with(armed: FaultBody(kind: .delay, count: 1, seconds: 15)) { ledger in
            try await ServerHarness.with(
                processor: ledger.processor(timeout: .seconds(2)), configure: { $0.store.processor.timeoutSeconds = 2 },
                body: { server in
                    let (reply, _) = try await Self.pay(server)
                    #expect(reply.status == 202, "\(reply.text)")
                    #expect(reply.errorCode == "paymentOutcomeUnknown")
                    let orderID = try (reply.json["orderId"] as? String).orThrow("orderId")
                    #expect(try server.statuses() == ["unknown/unknown"])
                    let key = try await Self.transactionID(of: orderID, server)
                    try await ledger.waitForCharge(key)
                    let settled = try await Self.reconcile(server)
                    #expect(settled.first?["to"] as? String == "paid")
                    #expect(try server.statuses() == ["paid/approved"])
                    #expect(try await ledger.captured(key).count == 1)
                    #expect(server.log.text.contains("late approval settled"))
                })
            ledger.service.disarm()
        }
    }

    @Test("an answer dropped after the processor committed: unknown, then paid by reconciliation, charged once")
    func droppedAfterCommit() async throws {
        try await ProcessorHarness.with(armed: FaultBody(kind: .dropAfterCommit, count: 1)) { ledger in
            try await ServerHarness.with(processor: ledger.processor(timeout: .seconds(10))) { server in
                let (reply, checkoutID) = try await Self.pay(server)
                #expect(reply.status == 202, "\(reply.text)")
                let orderID = try (reply.json["orderId"] as? String).orThrow("orderId")
                let key = try await Self.transactionID(of: orderID, server)
                // The same token again: the first attempt's answer, not a second charge.
                let events = try await server.admin("GET", "/admin/v1/orders/\(orderID)")
                #expect(events.json["checkoutId"] as? String == checkoutID)
                _ = try await Self.reconcile(server)
                #expect(try server.statuses() == ["paid/approved"])
                #expect(try await ledger.captured(key).count == 1)
            }
        }
    }

    @Test("a 500 before the processor committed: unknown, then declined by reconciliation; a new token then pays once")
    func failedBeforeCommit() async throws {
        try await ProcessorHarness.with(armed: FaultBody(kind: .failBeforeCommit, count: 1)) { ledger in
            try await ServerHarness.with(processor: ledger.processor(timeout: .seconds(10))) { server in
                var checkout = try await server.createCheckout()
                checkout.total = try await server.shipToCalifornia(checkout)
                let path = "/v1/checkouts/\(checkout.id)/payment"
                let first = try await server.post(
                    path,
                    raw: try server.paymentBody(amount: checkout.total, applicationData: checkout.applicationData),
                    checkoutSecret: checkout.secret)
                #expect(first.status == 202, "\(first.text)")
                #expect(first.errorCode == "paymentOutcomeUnknown")
                _ = try await Self.reconcile(server)
                #expect(try server.statuses() == ["declined/declined"])
                let second = try await server.post(
                    path,
                    raw: try server.paymentBody(amount: checkout.total, applicationData: checkout.applicationData),
                    checkoutSecret: checkout.secret)
                #expect(second.status == 200, "\(second.text)")
                #expect(try server.statuses() == ["declined/declined", "paid/approved"])
                let charges = try await ledger.charges()
                #expect(charges.filter { $0.status == .approved }.count == 1)
            }
        }
    }

    @Test("a store failure after an approval: logged with the order, transaction and reference, then reconciled")
    func storeFailureAfterApproval() async throws {
        try await ProcessorHarness.with { ledger in
            try await ServerHarness.with(processor: ledger.processor(timeout: .seconds(10))) { server in
                try Connection(path: server.databasePath).execute(
                    """
                    CREATE TRIGGER test_fail BEFORE INSERT ON events WHEN NEW.kind = 'paymentApproved'
                    BEGIN SELECT RAISE(ABORT, 'injected failure'); END
                    """)
                let (reply, _) = try await Self.pay(server)
                #expect(reply.status == 202, "\(reply.text)")
                #expect(reply.errorCode == "paymentOutcomeUnknown")
                let orderID = try (reply.json["orderId"] as? String).orThrow("orderId")
                #expect(try server.statuses() == ["pending/pending"])
                let line = try #require(
                    server.log.entries.first {
                        $0["msg"] as? String == "processor answered but the store could not record it"
                    })
                #expect(line["orderId"] as? String == orderID)
                let reference = try (line["processorReference"] as? String).orThrow("processorReference")
                let key = try (line["transactionId"] as? String).orThrow("transactionId")
                try Connection(path: server.databasePath).execute("DROP TRIGGER test_fail")
                _ = try await Self.reconcile(server)
                #expect(try server.statuses() == ["paid/approved"])
                let captured = try await ledger.captured(key)
                #expect(captured.map(\.reference) == [reference])
            }
        }
    }

    @Test("the admin API: 401 without or with a wrong token, idempotent refunds, no refund beyond the capture, voids")
    func adminAPI() async throws {
        try await ProcessorHarness.with { ledger in
            try await ServerHarness.with(processor: ledger.processor(timeout: .seconds(10))) { server in
                #expect(try await server.admin("GET", "/admin/v1/orders", token: nil).status == 401)
                #expect(try await server.admin("GET", "/admin/v1/orders", token: "wrong").status == 401)
                #expect(
                    try await server.admin("GET", "/admin/v1/orders", token: ServerHarness.adminToken + "x").status
                        == 401)
                let (paid, _) = try await Self.pay(server)
                let orderID = try (paid.json["orderId"] as? String).orThrow("orderId")
                let list = try await server.admin("GET", "/admin/v1/orders?status=paid")
                let orders = try (list.json["orders"] as? [[String: Any]]).orThrow("orders")
                #expect(orders.map { $0["id"] as? String } == [orderID])
                let full = try await server.admin("GET", "/admin/v1/orders/\(orderID)")
                #expect((full.json["shippingContact"] as? [String: Any])?["givenName"] as? String == "Ada")
                let key = try await Self.transactionID(of: orderID, server)
                let total = try ((full.json["totals"] as? [String: Any])?["total"] as? String).orThrow("total")

                // A partial refund, sent twice with the same key: refunded once.
                let refund = ["amount": "5.00", "idempotencyKey": "refund-1"]
                let first = try await server.admin("POST", "/admin/v1/orders/\(orderID)/refunds", json: refund)
                let again = try await server.admin("POST", "/admin/v1/orders/\(orderID)/refunds", json: refund)
                #expect(first.status == 200, "\(first.text)")
                #expect(again.status == 200, "\(again.text)")
                #expect((first.json["order"] as? [String: Any])?["status"] as? String == "partiallyRefunded")
                let firstID = (first.json["refund"] as? [String: Any])?["id"] as? String
                let againID = (again.json["refund"] as? [String: Any])?["id"] as? String
                #expect(againID == firstID)
                #expect(try await ledger.captured(key).first?.refundedAmount == 500)
                // More than what is left: refused, nothing changes.
                let tooMuch = try await server.admin(
                    "POST", "/admin/v1/orders/\(orderID)/refunds",
                    json: ["amount": total, "idempotencyKey": "refund-2"])
                #expect(tooMuch.status == 422)
                #expect(tooMuch.errorCode == "refundExceedsRemaining")
                #expect(try await ledger.captured(key).first?.refundedAmount == 500)
                // A partly refunded order cannot be voided.
                #expect(try await server.admin("POST", "/admin/v1/orders/\(orderID)/void").status == 409)

                // A second paid order is voided: in the store and in the ledger.
                let (other, _) = try await Self.pay(server)
                let otherID = try (other.json["orderId"] as? String).orThrow("orderId")
                let voided = try await server.admin("POST", "/admin/v1/orders/\(otherID)/void")
                #expect(voided.status == 200, "\(voided.text)")
                #expect(voided.json["status"] as? String == "voided")
                let otherKey = try await Self.transactionID(of: otherID, server)
                #expect(try await ledger.captured(otherKey).map(\.status) == [.voided])
                #expect(try server.statuses() == ["partiallyRefunded/approved", "voided/voided"])
            }
        }
    }

    @Test("without a token configured the admin API does not exist")
    func adminOff() async throws {
        try await ServerHarness.with(
            configure: { $0.adminToken = nil },
            body: { server in
                let reply = try await server.admin("GET", "/admin/v1/orders")
                #expect(reply.status == 404)
            })
    }
}
