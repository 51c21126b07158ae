import Cryptography
import Foundation
import Sandbox
import SandboxGateway

/// `applepay sandbox gateway [--host ADDRESS] [--port N] DIR`: Apple's payment-session endpoint for the sandbox.
struct SandboxGatewayCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "gateway",
            abstract: "Serve Apple's merchant-validation endpoint over HTTPS for a sandbox (Apple Pay on the web).",
            usage: ["[--host ADDRESS] [--port N] DIR", "emit DIR --event TYPE --merchant-token ID [--notify URL]"],
            options: [
                ("--host ADDRESS", "The address to listen on (default 127.0.0.1)."),
                ("--port N", "The port to listen on; 0 picks a free one (default 8443)."),
            ],
            discussion: """
                Serves POST /paymentservices/paymentSession over HTTPS with a certificate issued by the sandbox root
                (for localhost and 127.0.0.1), demands the sandbox's Merchant Identity certificate as TLS client
                certificate (refuses others), checks merchantIdentifier, displayName, initiative and
                initiativeContext as Apple does, and answers an opaque merchant session. GET /sandbox/v1/activity
                counts sessions issued and refusals. Prints its URL, then one JSON line per request on standard
                error. Point `applepay serve --sandbox DIR --sandbox-gateway URL` at it. SIGINT or SIGTERM stop it.
                Apple's merchant-token API too: GET .../merchantId/{merchantId}/merchantToken/event/{eventId} and
                POST .../merchantId/{merchantId}/merchantToken/unlink (x-request-id required); `emit` records events.
                """,
            subcommands: [SandboxGatewayEmitCommand.self])
    }

    var folder: String
    var host: String
    var port: UInt16

    init(arguments: inout Arguments) throws {
        host = try arguments.option("--host") ?? "127.0.0.1"
        port = try arguments.option("--port", as: { UInt16($0) }) ?? 8443
        folder = try arguments.positional("DIR")
    }

    func run() async throws -> Int32 {
        guard let sandbox = SandboxExit.load(folder) else { return SandboxExit.noInput }
        let gateway: SandboxGateway
        do {
            gateway = try SandboxGateway.start(sandbox: sandbox, host: host, port: port) { line in
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
        } catch {
            Output.standardError("error: cannot start the sandbox gateway: \(error)")
            return ExitCode.failure
        }
        return await ServeCommand.serve(announcing: "Sandbox Apple Pay gateway on \(gateway.url)") {
            await gateway.shutdown()
        }
    }
}

/// `applepay sandbox gateway emit DIR --event TYPE --merchant-token ID [--notify URL]`: Apple's "tap" of a
/// merchant-token event.
struct SandboxGatewayEmitCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "emit",
            abstract: "Record a merchant-token event and notify the merchant, as Apple does.",
            usage: ["DIR --event UNLINK|UPDATED_METADATA|UPDATED_CARD_ART --merchant-token ID [--notify URL]"],
            options: [
                ("--event TYPE", "UNLINK, UPDATED_METADATA or UPDATED_CARD_ART."),
                (
                    "--merchant-token ID",
                    "A merchantTokenIdentifier this sandbox issued (sandbox mint --merchant-token)."
                ),
                (
                    "--notify URL",
                    "Call this scheme, host and port instead of the token's registered tokenNotificationURL's "
                        + "(e.g. http://127.0.0.1:8080 for a local merchant server)."
                ),
            ],
            discussion: """
                Records the event in DIR/merchant-tokens/events/ (the running `sandbox gateway DIR` answers it at
                GET /paymentservices/v1/merchantId/{merchantId}/merchantToken/event/{eventId}), then sends
                GET {tokenNotificationURL}/notification/merchantToken/{eventId} to the merchant, retrying 5xx and
                connection failures up to 3 times. Prints {"eventId", "eventType", "notificationURL", "status",
                "attempts"}. Exit 0 when the merchant answered 2xx (or the token has no notification URL), 1 otherwise.
                """)
    }

    var folder: String
    var event: String
    var merchantToken: String
    var notify: String?

    init(arguments: inout Arguments) throws {
        guard let event = try arguments.option("--event") else { throw UsageError("--event is required") }
        guard let token = try arguments.option("--merchant-token") else {
            throw UsageError("--merchant-token is required")
        }
        guard ["UNLINK", "UPDATED_METADATA", "UPDATED_CARD_ART"].contains(event) else {
            throw UsageError("--event must be UNLINK, UPDATED_METADATA or UPDATED_CARD_ART")
        }
        self.event = event
        merchantToken = token
        notify = try arguments.option("--notify")
        folder = try arguments.positional("DIR")
    }

    func run() async throws -> Int32 {
        guard let sandbox = SandboxExit.load(folder) else { return SandboxExit.noInput }
        let emission = try await MerchantTokenEvents.emit(
            event, sandbox: sandbox, merchantToken: merchantToken, notify: notify,
            trustedRootsPEM: Data(sandbox.rootCertificate.pemRepresentation.utf8))
        print(try Output.json(emission))
        guard emission.notificationURL != nil else { return ExitCode.success }
        return (200..<300).contains(emission.status ?? 0) ? ExitCode.success : ExitCode.failure
    }
}
