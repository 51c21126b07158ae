import ApplePay
import Foundation
import Foundations
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
        /// Sets `key` of the wallet's card `index`.
        func card(_ index: Int, _ key: String, _ value: String) -> (inout [String: Any]) -> Void {
            { object in
                var wallet = object["wallet"] as? [String: Any] ?? [:]
                var cards = wallet["cards"] as? [[String: Any]] ?? []
                cards[index][key] = value
                wallet["cards"] = cards
                object["wallet"] = wallet
            }
        }
        // Each change, and the field its error must name.
        let changes: [(String, (inout [String: Any]) -> Void)] = [
            ("wallet.cards[1].devicePAN", card(1, "devicePAN", "1234")),
            ("wallet.cards[0].expirationDate", card(0, "expirationDate", "2913")),
            ("wallet.cards[0].issuingCountry", card(0, "issuingCountry", "XX")),
            (
                "paymentRequest.currencyCode",
                { object in
                    var request = object["paymentRequest"] as? [String: Any] ?? [:]
                    request["currencyCode"] = "usd"
                    object["paymentRequest"] = request
                }
            ),
            ("actions[1].action", { $0["actions"] = [["action": "authorize"], ["action": "fly"]] }),
            ("actions[0].contact", { $0["actions"] = [["action": "selectShippingContact", "contact": 7]] }),
            ("actions[0].card", { $0["actions"] = [["action": "selectCard", "card": "Amex 1000"]] }),
            ("wallet", { $0.removeValue(forKey: "wallet") }),
            ("merchant.lateEvents.payment", { $0["merchant"] = ["lateEvents": ["payment": 40]] }),
            ("merchant.coupons[0].percentOff", { $0["merchant"] = ["coupons": [["code": "X", "percentOff": "ten"]]] }),
            ("initiative", { $0["initiative"] = "kiosk" }),
        ]
        for (expected, change) in changes {
            #expect(try field(change) == expected)
        }
    }

    @Test("a scenario that is not JSON, or not an object, is refused")
    func notAScenario() {
        #expect(throws: PaymentSheetError(.invalidScenario, "")) { try Scenario.parse(Data("[1, 2]".utf8)) }
        #expect(throws: PaymentSheetError(.invalidScenario, "")) { try Scenario.parse(Data("{".utf8)) }
    }
}
