import Cryptography
import Foundation
import Foundations
import HTTPClient
import HTTPCore
import MerchantIntegrations
import MerchantTestSupport
import Sandbox
import TestSupport
import Testing

@Suite("Merchant validation holds a bounded share of the server")
struct MerchantValidationShareTests {
    @Test("a full share answers 503 serviceBusy with Retry-After at once, and frees its place when a call ends")
    func fullShareIsRefusedAtOnce() async throws {
        let sandbox = try await SharedSandbox.get()
        let hole = try BlackHole()
        let gateway = "https://127.0.0.1:\(hole.port)"
        let validator = MerchantValidator(
            merchantIdentifier: sandbox.merchantIdentifier, displayName: "Shop", domain: "shop.example",
            gatewayBaseURL: gateway,
            identity: ClientIdentity(
                certificatePEM: Data(sandbox.merchantIdentity.certificate.pemRepresentation.utf8),
                privateKeyPEM: Data(sandbox.merchantIdentity.privateKey.pemRepresentation.utf8)),
            timeout: .seconds(120), share: .init(maximumInFlight: 1, maximumQueued: 0, maximumWait: .seconds(1)))
        // The one place is taken by a session that will never be answered.
        let stuck = Task { try await validator.session(validationURL: nil, requestHost: nil) }
        while validator.share.counts.inFlight < 1 { try await Task.sleep(for: .milliseconds(5)) }
        let started = ContinuousClock.now
        do {
            _ = try await validator.session(validationURL: nil, requestHost: nil)
            Issue.record("a session past the share was requested")
        } catch {
            #expect(error.code == "serviceBusy")
            #expect(error.status == 503)
            #expect(error.headers["Retry-After"] == "1")
        }
        // Refused without waiting for the gateway (its call has a 120 s deadline).
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(validator.share.counts.refused == 1)
        // The stuck call is cancelled; its place comes back.
        stuck.cancel()
        _ = try? await stuck.value
        #expect(validator.share.counts.inFlight == 0)
    }
}
