// Wallet orders for tests: the sandbox APNs trusting a new provider key, a paid order's details.

import ApplePay
import Cryptography
import Foundation
import MerchantCore
import Sandbox
import TestSupport
import Testing

extension Sandbox {
    /// The sandbox APNs for this sandbox's order type, trusting a new provider key of team `teamID` (written in
    /// `folder`).
    public func startAPNs(teamID: String, in folder: TemporaryDirectory) throws
        -> (SandboxAPNs, (keyID: String, path: String, key: PrivateKey))
    {
        let authKey = try SandboxAPNs.makeAuthKey(in: folder.url)
        let apns = try SandboxAPNs.start(
            authority: authority, folder: folder.url,
            keyID: authKey.keyID, teamID: teamID, key: authKey.key.publicKey, topic: orderTypeIdentifier)
        return (apns, authKey)
    }
}

extension ServerHarness {
    /// Pays a checkout and returns the answer's `orderDetails` and the order's id.
    public func payForOrderDetails() async throws -> (PaymentOrderDetails, String) {
        let reply = try await paidCheckout().reply
        #expect(reply.status == 200, "\(reply.text)")
        let details = try JSONDecoder().decode(
            PaymentOrderDetails.self,
            from: JSONSerialization.data(
                withJSONObject: try (reply.json["orderDetails"] as? [String: Any]).orThrow(
                    "no orderDetails in \(reply.text)")))
        return (details, try (reply.json["orderId"] as? String).orThrow("orderId"))
    }
}
