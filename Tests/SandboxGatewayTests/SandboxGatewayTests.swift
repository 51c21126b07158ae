import Cryptography
import Foundation
import HTTPClient
import Sandbox
import SandboxGateway
import TestSupport
import Testing

/// Two sandboxes made once on threads of their own: the gateway's, and another whose Merchant Identity
/// certificate the gateway must refuse.
enum GatewaySandboxes {
    private static func make(_ identifier: String) -> MadeOnce<Sandbox> {
        MadeOnce(inFolder: "gateway-sandbox") {
            try Sandbox.create(at: $0.url.appendingPathComponent("sandbox"), merchantIdentifier: identifier)
        }
    }
    private static let own = make("merchant.com.example.gateway")
    private static let other = make("merchant.com.example.other")

    static func gatewaySandbox() async throws -> Sandbox { try await own.value }
    static func otherSandbox() async throws -> Sandbox { try await other.value }
}

@Suite("The sandbox gateway: Apple's payment session endpoint over HTTPS with a client certificate")
struct SandboxGatewayTests {
    static let validBody: [String: String] = [
        "merchantIdentifier": "merchant.com.example.gateway", "displayName": "Example Coffee Roasters",
        "initiative": "web", "initiativeContext": "shop.example.com",
    ]

    func client(for sandbox: Sandbox, identity: Sandbox?) -> HTTPClient {
        HTTPClient(
            configuration: .init(
                timeout: .seconds(20),
                clientIdentity: identity.map {
                    ClientIdentity(
                        certificatePEM: Data($0.merchantIdentity.certificate.pemRepresentation.utf8),
                        privateKeyPEM: Data($0.merchantIdentity.privateKey.pemRepresentation.utf8))
                },
                trustedRootsPEM: Data(sandbox.rootCertificate.pemRepresentation.utf8)))
    }

    func post(_ client: HTTPClient, _ gateway: SandboxGateway, _ body: [String: String]) async throws
        -> HTTPClientResponse
    {
        try await client.send(
            HTTPClientRequest.postJSON(
                gateway.url + "/paymentservices/paymentSession", body: try JSONEncoder().encode(body)))
    }

    @Test("answers a merchant session to the sandbox's Merchant Identity certificate, over TLS it can verify")
    func session() async throws {
        let sandbox = try await GatewaySandboxes.gatewaySandbox()
        let gateway = try SandboxGateway.start(sandbox: sandbox)
        let response = try await post(client(for: sandbox, identity: sandbox), gateway, Self.validBody)
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        let session = try JSONSerialization.jsonObject(with: response.body) as? [String: Any]
        #expect((session?["merchantSessionIdentifier"] as? String)?.hasPrefix("SSH") == true)
        #expect(session?["domainName"] as? String == "shop.example.com")
        #expect(session?["displayName"] as? String == "Example Coffee Roasters")
        let activity = gateway.activity
        #expect(activity.sessionsIssued == 1)
        let fingerprint = sandbox.merchantIdentity.certificate.sha256Fingerprint.map { String(format: "%02x", $0) }
        #expect(activity.lastClientCertificateSHA256 == fingerprint.joined())
        // The activity endpoint says the same.
        let seen = try await client(for: sandbox, identity: sandbox).send(
            HTTPClientRequest(url: gateway.url + "/sandbox/v1/activity"))
        #expect(try seen.decode(SandboxGateway.Activity.self) == activity)
        await gateway.shutdown()
    }

    /// The gateway on the shared sandbox, and another merchant's sandbox: the sandbox, the other one, the gateway.
    static func startedBesideOther() async throws -> (Sandbox, Sandbox, SandboxGateway) {
        let sandbox = try await GatewaySandboxes.gatewaySandbox()
        let other = try await GatewaySandboxes.otherSandbox()
        return (sandbox, other, try SandboxGateway.start(sandbox: sandbox))
    }

    @Test("refuses a request without a client certificate, and one with another merchant's certificate")
    func refusesOtherClients() async throws {
        let (sandbox, other, gateway) = try await Self.startedBesideOther()
        let anonymous = try await post(client(for: sandbox, identity: nil), gateway, Self.validBody)
        #expect(anonymous.status == 401)
        #expect(String(decoding: anonymous.body, as: UTF8.self).contains("clientCertificateRequired"))
        let stranger = try await post(client(for: sandbox, identity: other), gateway, Self.validBody)
        #expect(stranger.status == 403)
        #expect(String(decoding: stranger.body, as: UTF8.self).contains("unknownClientCertificate"))
        #expect(gateway.activity.sessionsIssued == 0)
        #expect(gateway.activity.refused == ["clientCertificateRequired": 1, "unknownClientCertificate": 1])
        await gateway.shutdown()
    }

    @Test("a client that does not trust the sandbox root cannot connect")
    func untrustedServer() async throws {
        let (sandbox, other, gateway) = try await Self.startedBesideOther()
        await #expect(throws: HTTPClientError.self) {
            _ = try await post(client(for: other, identity: sandbox), gateway, Self.validBody)
        }
        await gateway.shutdown()
    }

    @Test(
        "checks the body as Apple does",
        arguments: [
            ("merchantIdentifier", "merchant.com.example.other", "merchantIdentifierMismatch"),
            ("displayName", "", "invalidDisplayName"),
            ("displayName", String(repeating: "x", count: 65), "invalidDisplayName"),
            ("initiative", "app", "invalidInitiative"),
            ("initiativeContext", "https://shop.example.com/", "invalidInitiativeContext"),
            ("initiativeContext", "shop.example.com:8080", "invalidInitiativeContext"),
        ])
    func bodyChecks(field: String, value: String, code: String) async throws {
        let sandbox = try await GatewaySandboxes.gatewaySandbox()
        let gateway = try SandboxGateway.start(sandbox: sandbox)
        var body = Self.validBody
        body[field] = value
        let response = try await post(client(for: sandbox, identity: sandbox), gateway, body)
        #expect(response.status == 400)
        let answer = try JSONSerialization.jsonObject(with: response.body) as? [String: Any]
        #expect(answer?["code"] as? String == code)
        #expect(answer?["statusCode"] as? String == "400")
        await gateway.shutdown()
    }
}
