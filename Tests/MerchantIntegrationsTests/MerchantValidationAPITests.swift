import Foundation
import HTTPClient
import MerchantCore
import MerchantIntegrations
import MerchantServer
import MerchantTestSupport
import Sandbox
import Synchronization
import TestSupport
import Testing

/// The stand-in gateway (python/gateway.py): HTTPS on 127.0.0.1 demanding a client certificate from the sandbox's
/// merchant CA, with a self-signed server certificate made by the openssl CLI.
final class LocalGateway: Sendable {
    let port: UInt16
    let serverCertificatePath: String
    let logPath: String
    private let process: Process

    var baseURL: String { "https://127.0.0.1:\(port)" }

    /// Requests the gateway received, as JSON lines.
    var received: [String] {
        ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    init(directory: TemporaryDirectory, sandboxFolder: URL) throws {
        let certificate = directory.path("gateway.pem")
        let key = directory.path("gateway.key.pem")
        let made = try Subprocess.runBlocking(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            [
                "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days",
                "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out",
                certificate,
            ], timeout: 60)
        guard made.status == 0 else { throw HarnessError("openssl req failed: \(made.standardError)") }
        // Clients are trusted when their chain reaches the sandbox root through its merchant CA.
        let clientCA = directory.path("client-ca.pem")
        let chain =
            try String(contentsOf: sandboxFolder.appendingPathComponent("merchant-ca.pem"), encoding: .utf8)
            + (try String(contentsOf: sandboxFolder.appendingPathComponent("root.pem"), encoding: .utf8))
        try chain.write(toFile: clientCA, atomically: true, encoding: .utf8)
        logPath = directory.path("gateway-requests.log")
        _ = FileManager.default.createFile(atPath: logPath, contents: Data())

        let script = Repository.root.appendingPathComponent("Tests/MerchantIntegrationsTests/python/gateway.py").path
        // The first line is the port (read here, on the thread `start` made, never on the cooperative pool).
        guard let (process, port) = try PortPrintingScript.launch(script, [certificate, key, clientCA, logPath]) else {
            throw HarnessError("the gateway did not start")
        }
        self.port = port
        self.process = process
        self.serverCertificatePath = certificate
    }

    /// Kills the gateway (SIGKILL: the test process may have SIGTERM blocked, and children inherit the mask).
    /// The child is reaped on a thread of its own, so the caller (a test on Swift's cooperative pool) never waits.
    func stop() {
        let process = self.process
        kill(process.processIdentifier, SIGKILL)
        Thread { process.waitUntilExit() }.start()
    }

    /// Runs `body` with a gateway for the shared sandbox in a folder of its own, then stops it and removes the folder.
    static func with(_ body: (LocalGateway) async throws -> Void) async throws {
        let sandbox = try await SharedSandbox.get()
        let directory = try TemporaryDirectory(prefix: "gateway")
        defer { directory.remove() }
        let gateway = try await LocalGateway.start(directory: directory, sandboxFolder: sandbox.folder)
        defer { gateway.stop() }
        try await body(gateway)
    }

    /// Starts a gateway on a thread of its own (it waits for openssl and for the script's first line).
    static func start(directory: TemporaryDirectory, sandboxFolder: URL) async throws -> LocalGateway {
        try await blocking { try LocalGateway(directory: directory, sandboxFolder: sandboxFolder) }
    }
}

@Suite("Merchant validation against a local gateway that demands the Merchant Identity certificate")
struct MerchantValidationAPITests {
    @Test("posts merchantIdentifier, displayName, initiative and initiativeContext with the client certificate")
    func session() async throws {
        try await LocalGateway.with { gateway in
            try await ServerHarness.with(
                configure: { configuration in
                    configuration.store.merchantValidation.gatewayBaseURL = gateway.baseURL
                    configuration.store.merchantValidation.domain = "shop.example.com"
                    configuration.gatewayTrustedRootsPath = gateway.serverCertificatePath
                },
                body: { server in
                    let reply = try await server.post("/v1/apple-pay/merchant-session", json: [String: Any]())
                    #expect(reply.status == 200, "\(reply.text)")
                    #expect(reply.json["merchantSessionIdentifier"] as? String == "SSH-TEST-SESSION")
                    let sent = try (reply.json["received"] as? [String: Any]).orThrow("received")
                    #expect(sent["merchantIdentifier"] as? String == "merchant.com.example.tests")
                    #expect(sent["displayName"] as? String == "Example Coffee Roasters")
                    #expect(sent["initiative"] as? String == "web")
                    #expect(sent["initiativeContext"] as? String == "shop.example.com")
                    // The gateway saw the Merchant Identity certificate.
                    #expect((reply.json["clientSubject"] as? [String: Any])?.isEmpty == false)
                    #expect(gateway.received.count == 1)
                })

            // Without the client certificate the gateway refuses the TLS handshake.
            let anonymous = HTTPClient(
                configuration: .init(
                    timeout: .seconds(10),
                    trustedRootsPEM: FileManager.default.contents(atPath: gateway.serverCertificatePath)))
            await #expect(throws: HTTPClientError.self) {
                let response = try await anonymous.send(
                    HTTPClientRequest.postJSON(
                        gateway.baseURL + "/paymentservices/paymentSession", body: Data("{}".utf8)))
                // Some TLS stacks report the refusal only when reading: any answer here would be a failure.
                throw HarnessError("answered \(response.status)")
            }
            #expect(gateway.received.count == 1)
        }
    }

    @Test(
        "refuses validation URLs that are not Apple's gateway, without sending anything",
        arguments: [
            "https://evil.example.com/paymentservices/paymentSession",
            "http://apple-pay-gateway.apple.com/paymentservices/paymentSession",
            "https://apple-pay-gateway.apple.com.evil.example/paymentSession",
            "https://apple-pay-gateway.apple.com:8443/paymentservices/paymentSession",
            "https://user@apple-pay-gateway.apple.com/paymentservices/paymentSession",
            "file:///etc/passwd",
            "not a url",
        ])
    func refusesOtherHosts(url: String) async throws {
        try await ServerHarness.with { server in
            let reply = try await server.post("/v1/apple-pay/merchant-session", json: ["validationURL": url])
            #expect(reply.status == 400)
            #expect(reply.errorCode == "validationURLNotAllowed")
        }
    }

    @Test("without a Merchant Identity certificate the server answers 503 merchantValidationUnavailable")
    func noIdentity() async throws {
        try await ServerHarness.with(
            configure: { $0.merchantIdentity = nil },
            body: { server in
                let reply = try await server.post("/v1/apple-pay/merchant-session", json: [String: Any]())
                #expect(reply.status == 503)
                #expect(reply.errorCode == "merchantValidationUnavailable")
            })
    }

    @Test("a validation URL pointing at a reachable non-Apple host gets no request")
    func noRequestToOtherHosts() async throws {
        try await LocalGateway.with { gateway in
            try await ServerHarness.with(
                configure: { configuration in
                    configuration.gatewayTrustedRootsPath = gateway.serverCertificatePath
                },
                body: { server in
                    let reply = try await server.post(
                        "/v1/apple-pay/merchant-session",
                        json: ["validationURL": gateway.baseURL + "/paymentservices/paymentSession"])
                    #expect(reply.errorCode == "validationURLNotAllowed")
                    #expect(gateway.received.isEmpty)
                })
        }
        #expect(MerchantValidator.isAllowed("https://apple-pay-gateway.apple.com/paymentservices/paymentSession"))
        #expect(
            MerchantValidator.isAllowed("https://cn-apple-pay-gateway-tj-pod3.apple.com/paymentservices/startSession"))
        #expect(
            !MerchantValidator.isAllowed("https://apple-pay-gateway-nc-pod6.apple.com/paymentservices/paymentSession"))
    }
}
