import Foundation
import MerchantCore
import MerchantServer
import TestSupport
import Testing

/// The `processor` section of a provider connector: the issue's shape read into ``ProcessorChoice``, each field
/// checked with its path.
@Suite("Provider processor configuration")
struct ProviderConfigurationTests {
    @Test("reads the Adyen, Stripe and Checkout.com sections, paths relative to the file, with the demo catalog")
    func readsProviders() throws {
        let adyen = try ServerConfigurationTests.load([
            "processor": [
                "kind": "adyen", "baseURL": "https://checkout-test.adyen.com/v71", "apiKeyFile": "adyen.key",
                "merchantAccount": "ExampleECOM", "webhookHMACKeyFile": "adyen.hmac", "applePay": "passThrough",
                "timeoutSeconds": 20,
            ]
        ])
        guard case .adyen(let settings) = adyen.processor else {
            Issue.record("not adyen: \(adyen.processor)")
            return
        }
        #expect(settings.baseURL.absoluteString == "https://checkout-test.adyen.com/v71")
        #expect(settings.secretKeyFile.hasSuffix("/adyen.key") && settings.secretKeyFile.hasPrefix("/"))
        #expect(settings.webhookHMACKeyFile?.hasSuffix("/adyen.hmac") == true)
        #expect(settings.merchantAccount == "ExampleECOM")
        #expect(settings.applePay == .passThrough)
        #expect(adyen.store.processor.timeoutSeconds == 20)
        #expect(adyen.store.storeName == StoreConfiguration.demo.storeName)
        #expect(settings.webhookDeadline == nil)

        // Adyen has no look-up: how long a lost answer waits for its webhook before a person is asked, within the 31
        // days Adyen keeps a key; another provider has no such setting.
        let deadline = try ServerConfigurationTests.load([
            "processor": [
                "kind": "adyen", "baseURL": "https://checkout-test.adyen.com/v71", "apiKeyFile": "adyen.key",
                "merchantAccount": "ExampleECOM", "webhookDeadlineHours": 48,
            ]
        ])
        #expect(deadline.processor.provider?.webhookDeadline == .seconds(48 * 3600))
        for (kind, hours) in [("adyen", 0), ("adyen", 745), ("stripe", 48)] {
            var section: [String: Any] = [
                "kind": kind, "baseURL": "https://x.example", "webhookDeadlineHours": hours,
            ]
            section[kind == "adyen" ? "apiKeyFile" : "secretKeyFile"] = "k"
            if kind == "adyen" { section["merchantAccount"] = "M" }
            let problems = ServerConfigurationTests.problems(["processor": section]).map(\.path)
            #expect(problems.contains("processor.webhookDeadlineHours"), "\(kind) \(hours): \(problems)")
        }

        let stripe = try ServerConfigurationTests.load([
            "processor": [
                "kind": "stripe", "baseURL": "https://api.stripe.com", "secretKeyFile": "/keys/stripe.key",
                "webhookSecretFile": "stripe.whsec", "applePay": "decrypted",
            ],
            "server": ["port": 0],
        ])
        #expect(stripe.processor.provider?.secretKeyFile == "/keys/stripe.key")
        #expect(stripe.processor.provider?.webhookSecretFile?.hasSuffix("/stripe.whsec") == true)
        #expect(stripe.processor.provider?.applePay == .decrypted)

        let checkout = try ServerConfigurationTests.load([
            "processor": [
                "kind": "checkout", "baseURL": "https://api.sandbox.checkout.com", "secretKeyFile": "ck.key",
                "publicKeyFile": "ck.pub", "processingChannelId": "pc_123", "webhookSecretFile": "ck.whsec",
            ]
        ])
        #expect(checkout.processor.kind == .checkout)
        #expect(checkout.processor.provider?.processingChannelId == "pc_123")
        #expect(checkout.processor.provider?.applePay == .passThrough)
    }

    @Test("a missing, empty, misspelt or foreign field is reported with its path")
    func problems() {
        let missing = Set(
            ServerConfigurationTests.problems([
                "processor": ["kind": "adyen", "baseURL": "https://x.example", "url": "https://y.example"]
            ]).map(\.path))
        #expect(missing.isSuperset(of: ["processor.apiKeyFile", "processor.merchantAccount", "processor.url"]))

        let wrong = ServerConfigurationTests.problems([
            "processor": [
                "kind": "stripe", "baseURL": "ftp://x", "secretKeyFile": "", "applePay": "sometimes",
                "merchantAccount": "ExampleECOM",
            ]
        ])
        let paths = Set(wrong.map(\.path))
        #expect(
            paths == [
                "processor.baseURL", "processor.secretKeyFile", "processor.applePay", "processor.merchantAccount",
            ], "\(wrong)")
        #expect(wrong.first { $0.path == "processor.baseURL" }?.code == .invalidURL)
        #expect(
            Set(
                ServerConfigurationTests.problems([
                    "processor": ["kind": "checkout", "baseURL": "https://x.example", "secretKeyFile": "k"]
                ]).map(\.path)) == ["processor.processingChannelId", "processor.publicKeyFile"])
    }

    @Test("a provider's base URL is https; loopback http only in sandbox mode")
    func baseURLRule() {
        let allows = { (text: String, sandbox: Bool) in
            ProviderSettings.allows(URL(string: text)!, sandboxMode: sandbox)
        }
        #expect(allows("https://api.stripe.com", false))
        #expect(!allows("http://api.stripe.com", false))
        #expect(!allows("http://127.0.0.1:9000", false))
        #expect(allows("http://127.0.0.1:9000", true))
        #expect(allows("http://localhost:9000", true))
        #expect(!allows("http://api.stripe.com", true))
    }
}
