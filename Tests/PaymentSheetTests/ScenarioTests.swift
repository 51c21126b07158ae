import ApplePay
import Foundation
import InProcessMerchant
import PaymentSheet
import TestSupport
import Testing

@Suite("Scenarios")
struct ScenarioTests {
    static let examples = [
        "plain-purchase", "unserviceable-address", "coupon-invalid-then-valid", "recurring-subscription", "cancel",
        "merchant-timeout",
    ]

    @Test("every example scenario parses", arguments: examples)
    func parses(name: String) throws {
        let scenario = try Scenario.load(from: Repository.scenarios.appendingPathComponent("\(name).json"))
        #expect(!scenario.actions.isEmpty)
        #expect(scenario.paymentRequest != nil)
    }

    @Test("the in-process merchant server prices, refuses and accepts the scenario's store")
    func couponScenario() async throws {
        let scenario = try Scenario.load(
            from: Repository.scenarios.appendingPathComponent("coupon-invalid-then-valid.json"))
        let sandbox = try await SharedSandbox.get()
        let result = try await InProcessMerchant.run(scenario, sandbox: sandbox)
        #expect(result.outcome.kind == .success)
        let coupons = result.transcript.filter { $0.event == "couponcodechanged" }
        #expect(
            coupons.map { $0.fields["answer"]?["errors"]?[0]?["code"]?.stringValue } == [
                "couponCodeInvalid", "couponCodeExpired", nil,
            ])
        // 89.99 − 9.00 + 4.99 shipping = 85.98; tax 7.25 % = 6.23; total 92.21.
        #expect(result.transcript.last?.fields["total"]?["amount"] == .string("92.21"))
    }

    /// A scenario document with one member replaced.
    func document(_ change: (inout [String: Any]) -> Void) throws -> Data {
        let data = try Data(contentsOf: Repository.scenarios.appendingPathComponent("plain-purchase.json"))
        var object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        change(&object)
        return try JSONSerialization.data(withJSONObject: object)
    }

    @Test("an invalid scenario names the bad field")
    func invalidFields() throws {
        func field(_ change: (inout [String: Any]) -> Void) throws -> String? {
            let data = try document(change)
            do {
                _ = try Scenario.parse(data)
                return nil
            } catch {
                return error.field
            }
        }
        #expect(try field { _ in } == nil)
        #expect(
            try field { object in
                var wallet = object["wallet"] as? [String: Any] ?? [:]
                var cards = wallet["cards"] as? [[String: Any]] ?? []
                cards[1]["devicePAN"] = "1234"
                wallet["cards"] = cards
                object["wallet"] = wallet
            } == "wallet.cards[1].devicePAN")
        #expect(
            try field { object in
                var wallet = object["wallet"] as? [String: Any] ?? [:]
                var cards = wallet["cards"] as? [[String: Any]] ?? []
                cards[0]["expirationDate"] = "2913"
                wallet["cards"] = cards
                object["wallet"] = wallet
            } == "wallet.cards[0].expirationDate")
        #expect(
            try field { object in
                var wallet = object["wallet"] as? [String: Any] ?? [:]
                var cards = wallet["cards"] as? [[String: Any]] ?? []
                cards[0]["issuingCountry"] = "XX"
                wallet["cards"] = cards
                object["wallet"] = wallet
            } == "wallet.cards[0].issuingCountry")
        #expect(
            try field { object in
                var request = object["paymentRequest"] as? [String: Any] ?? [:]
                request["currencyCode"] = "usd"
                object["paymentRequest"] = request
            } == "paymentRequest.currencyCode")
        #expect(
            try field { object in
                object["actions"] = [["action": "authorize"], ["action": "fly"]]
            } == "actions[1].action")
        #expect(
            try field { object in
                object["actions"] = [["action": "selectShippingContact", "contact": 7]]
            } == "actions[0].contact")
        #expect(
            try field { object in
                object["actions"] = [["action": "selectCard", "card": "Amex 1000"]]
            } == "actions[0].card")
        #expect(try field { object in object.removeValue(forKey: "wallet") } == "wallet")
        #expect(
            try field { object in
                object["merchant"] = ["lateEvents": ["payment": 40]]
            } == "merchant.lateEvents.payment")
        #expect(
            try field { object in
                object["merchant"] = ["coupons": [["code": "X", "percentOff": "ten"]]]
            } == "merchant.coupons[0].percentOff")
        #expect(try field { object in object["initiative"] = "kiosk" } == "initiative")
    }

    @Test("a scenario that is not JSON, or not an object, is refused")
    func notAScenario() {
        #expect(throws: PaymentSheetError(.invalidScenario, "")) { try Scenario.parse(Data("[1, 2]".utf8)) }
        #expect(throws: PaymentSheetError(.invalidScenario, "")) { try Scenario.parse(Data("{".utf8)) }
    }
}
