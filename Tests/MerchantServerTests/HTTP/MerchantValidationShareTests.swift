import Cryptography
import Foundation
import Foundations
import HTTPClient
import HTTPServer
import MerchantIntegrations
import Sandbox
import TestSupport
import Testing

/// A listening socket on 127.0.0.1 that never accepts: connections complete in the kernel's backlog and then
/// hear nothing, as from a gateway that has stopped answering.
final class BlackHole: Sendable {
    let port: UInt16
    private let descriptor: Int32

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(descriptor, 128) == 0 else {
            close(descriptor)
            throw HarnessError("cannot listen")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        self.descriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(descriptor) }
}

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
