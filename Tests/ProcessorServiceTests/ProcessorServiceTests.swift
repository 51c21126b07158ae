import Foundation
import Foundations
import HTTPClient
import ProcessorAPI
import ProcessorService
import SQLite
import TestSupport
import Testing

/// A service on 127.0.0.1 (port 0) with a ledger in a temporary folder, and a client for its JSON.
struct ServiceHarness {
    let folder: TemporaryDirectory
    let server: ProcessorServer
    let client = HTTPClient(configuration: .init(timeout: .seconds(30)))

    var ledgerPath: String { folder.path("ledger.sqlite") }

    init(rootFingerprint: String? = nil, hangDuration: Duration = .seconds(60)) throws {
        folder = try TemporaryDirectory(prefix: "processor-service")
        server = try ProcessorServer.start(
            .init(
                ledgerPath: folder.path("ledger.sqlite"), rootFingerprint: rootFingerprint, hangDuration: hangDuration))
    }

    /// Runs `body` on a new service, then shuts it down and removes its ledger, also when `body` throws.
    static func with(
        rootFingerprint: String? = nil, _ body: (ServiceHarness) async throws -> Void
    ) async throws {
        let harness = try ServiceHarness(rootFingerprint: rootFingerprint)
        defer { harness.folder.remove() }
        try await withCleanup {
            try await body(harness)
        } cleanup: {
            await harness.server.shutdown()
        }
    }

    func url(_ path: String) -> String { server.url.absoluteString + path }

    func post<T: Encodable>(_ path: String, _ body: T) async throws -> HTTPClientResponse {
        try await client.send(try .postJSON(url(path), encoding: body))
    }

    func get(_ path: String) async throws -> HTTPClientResponse {
        try await client.send(HTTPClientRequest(url: url(path)))
    }

    func errorCode(_ response: HTTPClientResponse) -> String? {
        try? response.decode(ErrorEnvelope.self).error.code
    }
}

/// A 3-D Secure charge body for a Visa device PAN.
func chargeBody(
    key: String, amount: Int64 = 1250, currency: String = "USD", pan: String = "4817499999010019",
    root: String? = nil
) -> CreateChargeBody {
    CreateChargeBody(
        idempotencyKey: key, amount: amount, currencyCode: currency,
        paymentMethod: PaymentMethodBody(
            network: "Visa", primaryAccountNumber: pan, expirationDate: "301231",
            cryptogram: Data("cryptogram-bytes".utf8).base64EncodedString(), eciIndicator: "7"),
        rootFingerprint: root)
}

@Suite("ProcessorService over loopback")
struct ProcessorServiceTests {
    @Test("approves, declines on the 51/52 triggers, replays a key and refuses a key reused for another amount")
    func approveDeclineReplay() async throws {
        try await ServiceHarness.with { harness in
            let approved = try await harness.post("/v1/charges", chargeBody(key: "k-approve"))
            #expect(approved.status == 200)
            let charge = try approved.decode(ChargeEnvelope.self).charge
            #expect(charge.status == .approved)
            #expect(charge.reference.hasPrefix("prc_"))
            #expect(charge.lastFour == "0019")
            #expect(charge.amount == 1250 && charge.currencyCode == "USD" && charge.refundedAmount == 0)

            let declined = try await harness.post("/v1/charges", chargeBody(key: "k-funds", amount: 1251))
            #expect(declined.status == 200)
            #expect(try declined.decode(ChargeEnvelope.self).charge.status == .declined)
            #expect(try declined.decode(ChargeEnvelope.self).charge.declineCode == "insufficientFunds")
            let lost = try await harness.post("/v1/charges", chargeBody(key: "k-lost", pan: "4817499999090052"))
            #expect(try lost.decode(ChargeEnvelope.self).charge.declineCode == "lostCard")

            let replay = try await harness.post("/v1/charges", chargeBody(key: "k-approve"))
            #expect(try replay.decode(ChargeEnvelope.self).charge == charge)
            let conflict = try await harness.post("/v1/charges", chargeBody(key: "k-approve", amount: 1300))
            #expect(conflict.status == 409)
            #expect(harness.errorCode(conflict) == "idempotencyConflict")
            let otherCurrency = try await harness.post("/v1/charges", chargeBody(key: "k-approve", currency: "EUR"))
            #expect(harness.errorCode(otherCurrency) == "idempotencyConflict")

            let list = try await harness.get("/v1/charges").decode(ChargeListEnvelope.self).charges
            #expect(list.map(\.idempotencyKey) == ["k-approve", "k-funds", "k-lost"])
        }
    }

    @Test("answers 500 on the 53 trigger without committing; refuses malformed bodies without echoing card data")
    func triggerAndValidation() async throws {
        try await ServiceHarness.with { harness in
            let failed = try await harness.post("/v1/charges", chargeBody(key: "k-53", amount: 1253))
            #expect(failed.status == 500)
            let lookup = try await harness.get("/v1/charges/by-idempotency-key/k-53")
            #expect(lookup.status == 404)
            #expect(harness.errorCode(lookup) == "chargeNotFound")

            var bad = chargeBody(key: "k-bad", pan: "4817x99999010019")
            let refused = try await harness.post("/v1/charges", bad)
            #expect(refused.status == 400)
            #expect(!String(decoding: refused.body, as: UTF8.self).contains("4817"))
            bad = chargeBody(key: "bad/key")
            #expect(try await harness.post("/v1/charges", bad).status == 400)
        }
    }

    @Test("looks up by key, voids, refunds partly, fully and idempotently, and refuses refunds beyond the charge")
    func voidAndRefund() async throws {
        try await ServiceHarness.with { harness in
            let charge = try await harness.post("/v1/charges", chargeBody(key: "k-refund", amount: 1000))
                .decode(ChargeEnvelope.self).charge
            let found = try await harness.get("/v1/charges/by-idempotency-key/k-refund").decode(ChargeEnvelope.self)
            #expect(found.charge == charge)

            let partial = try await harness.post(
                "/v1/charges/\(charge.reference)/refunds", CreateRefundBody(amount: 400, idempotencyKey: "r-1"))
            #expect(partial.status == 200)
            let first = try partial.decode(RefundEnvelope.self)
            #expect(first.charge.status == .partiallyRefunded && first.charge.refundedAmount == 400)
            let again = try await harness.post(
                "/v1/charges/\(charge.reference)/refunds", CreateRefundBody(amount: 400, idempotencyKey: "r-1"))
            #expect(try again.decode(RefundEnvelope.self).refund == first.refund)
            let reused = try await harness.post(
                "/v1/charges/\(charge.reference)/refunds", CreateRefundBody(amount: 500, idempotencyKey: "r-1"))
            #expect(harness.errorCode(reused) == "idempotencyConflict")
            let tooMuch = try await harness.post(
                "/v1/charges/\(charge.reference)/refunds", CreateRefundBody(amount: 601, idempotencyKey: "r-2"))
            #expect(tooMuch.status == 422)
            #expect(harness.errorCode(tooMuch) == "refundExceedsCharge")
            let rest = try await harness.post(
                "/v1/charges/\(charge.reference)/refunds", CreateRefundBody(amount: 600, idempotencyKey: "r-3"))
            #expect(try rest.decode(RefundEnvelope.self).charge.status == .refunded)
            let notVoidable = try await harness.post("/v1/charges/\(charge.reference)/void", [String: String]())
            #expect(notVoidable.status == 409)
            #expect(harness.errorCode(notVoidable) == "notVoidable")

            let other = try await harness.post("/v1/charges", chargeBody(key: "k-void")).decode(ChargeEnvelope.self)
            let voided = try await harness.post("/v1/charges/\(other.charge.reference)/void", [String: String]())
            #expect(try voided.decode(ChargeEnvelope.self).charge.status == .voided)
            let voidedAgain = try await harness.post("/v1/charges/\(other.charge.reference)/void", [String: String]())
            #expect(try voidedAgain.decode(ChargeEnvelope.self).charge.status == .voided)
            let missing = try await harness.post("/v1/charges/prc_nothing/void", [String: String]())
            #expect(missing.status == 404)
            #expect(harness.errorCode(missing) == "chargeNotFound")
        }
    }

    @Test("the ledger survives a restart, keeps no PAN or cryptogram, and a retried key is not a second charge")
    func survivesRestart() async throws {
        let folder = try TemporaryDirectory(prefix: "processor-restart")
        defer { folder.remove() }
        let path = folder.path("ledger.sqlite")
        let first = try ProcessorServer.start(ledgerPath: path)
        let client = HTTPClient(configuration: .init(timeout: .seconds(30)))
        let charge = try await client.send(
            try .postJSON(first.url.absoluteString + "/v1/charges", encoding: chargeBody(key: "k-durable"))
        ).decode(ChargeEnvelope.self).charge
        await first.shutdown()
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let second = try ProcessorServer.start(ledgerPath: path)
        let found = try await client.send(
            HTTPClientRequest(url: second.url.absoluteString + "/v1/charges/by-idempotency-key/k-durable"))
        #expect(try found.decode(ChargeEnvelope.self).charge == charge)
        let retried = try await client.send(
            try .postJSON(second.url.absoluteString + "/v1/charges", encoding: chargeBody(key: "k-durable")))
        #expect(try retried.decode(ChargeEnvelope.self).charge == charge)
        let all = try await client.send(HTTPClientRequest(url: second.url.absoluteString + "/v1/charges"))
        #expect(try all.decode(ChargeListEnvelope.self).charges.count == 1)
        await second.shutdown()

        let connection = try Connection(path: path, readOnly: true)
        let dump = try connection.query("SELECT * FROM charges").map { row in
            row.values.map(\.description).joined(separator: " ")
        }.joined(separator: "\n")
        let everything = try connection.query("SELECT group_concat(pan_last_four) AS lastFour FROM charges")
        #expect(everything.first?["lastFour"] == .text("0019"))
        #expect(!dump.contains("4817499999010019"))
        #expect(!dump.contains(Data("cryptogram-bytes".utf8).base64EncodedString()))
    }

    @Test("declines notSandboxToken when the root fingerprint is not the configured one")
    func notSandboxToken() async throws {
        let root = String(repeating: "ab", count: 32)
        try await ServiceHarness.with(rootFingerprint: root) { harness in
            let foreign = try await harness.post(
                "/v1/charges", chargeBody(key: "k-foreign", root: String(repeating: "cd", count: 32)))
            #expect(try foreign.decode(ChargeEnvelope.self).charge.declineCode == "notSandboxToken")
            let none = try await harness.post("/v1/charges", chargeBody(key: "k-none"))
            #expect(try none.decode(ChargeEnvelope.self).charge.declineCode == "notSandboxToken")
            let ours = try await harness.post("/v1/charges", chargeBody(key: "k-ours", root: root))
            #expect(try ours.decode(ChargeEnvelope.self).charge.status == .approved)
        }
    }

    @Test("faults over HTTP: failBeforeCommit answers 500 and commits nothing; DELETE disarms; bad faults are 400")
    func faultsOverHTTP() async throws {
        try await ServiceHarness.with { harness in
            let armed = try await harness.post("/v1/faults", FaultBody(kind: .failBeforeCommit, count: 2))
            #expect(armed.status == 200)
            #expect(try await harness.post("/v1/charges", chargeBody(key: "k-f1")).status == 500)
            #expect(try await harness.get("/v1/charges/by-idempotency-key/k-f1").status == 404)
            let disarmed = try await harness.client.send(
                HTTPClientRequest(method: "DELETE", url: harness.url("/v1/faults")))
            #expect(disarmed.status == 204)
            #expect(try await harness.post("/v1/charges", chargeBody(key: "k-f1")).status == 200)
            #expect(try await harness.post("/v1/faults", FaultBody(kind: .delay, count: 0)).status == 400)
        }
    }
}
