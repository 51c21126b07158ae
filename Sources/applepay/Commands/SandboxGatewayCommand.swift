import ArgumentParser
import Cryptography
import Foundation
import MerchantServer
import Sandbox
import SandboxGateway

/// `applepay sandbox gateway [serve] [--host ADDRESS] [--port N] DIR`: Apple's payment-session endpoint for the
/// sandbox; `applepay sandbox gateway emit ...`: Apple's merchant-token events.
struct SandboxGatewayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway",
        abstract: "Serve Apple's merchant-validation endpoint over HTTPS for a sandbox (Apple Pay on the web).",
        usage: """
            applepay sandbox gateway [serve] [--host ADDRESS] [--port N] DIR
            applepay sandbox gateway emit DIR --event TYPE --merchant-token ID [--notify URL]
            """,
        discussion: """
            Serves POST /paymentservices/paymentSession over HTTPS with a certificate issued by the sandbox root \
            (for localhost and 127.0.0.1), demands the sandbox's Merchant Identity certificate as TLS client \
            certificate (refuses others), checks merchantIdentifier, displayName, initiative and \
            initiativeContext as Apple does, and answers an opaque merchant session. GET /sandbox/v1/activity \
            counts sessions issued and refusals. Prints its URL, then one JSON line per request on standard \
            error. Point `applepay serve --sandbox DIR --sandbox-gateway URL` at it. SIGINT or SIGTERM stop it.
            Apple's merchant-token API too: GET .../merchantId/{merchantId}/merchantToken/event/{eventId} and \
            POST .../merchantId/{merchantId}/merchantToken/unlink (x-request-id required); `emit` records events.

            `applepay sandbox gateway serve --help` describes --host and --port.
            """,
        subcommands: [SandboxGatewayServeCommand.self, SandboxGatewayEmitCommand.self],
        // A folder, not a subcommand, after `gateway`: the gateway is served.
        defaultSubcommand: SandboxGatewayServeCommand.self)
}

/// `applepay sandbox gateway [serve] [--host ADDRESS] [--port N] DIR`.
struct SandboxGatewayServeCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the merchant-validation endpoint (what `applepay sandbox gateway DIR` does).",
        usage: "applepay sandbox gateway [serve] [--host ADDRESS] [--port N] DIR",
        discussion: "See 'applepay sandbox gateway --help'.")

    @Argument(help: ArgumentHelp("The sandbox folder (from applepay sandbox init).", valueName: "DIR"))
    var folder: String

    @Option(help: ArgumentHelp("The address to listen on (default 127.0.0.1).", valueName: "ADDRESS"))
    var host: String?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("The port to listen on; 0 picks a free one (default 8443).", valueName: "N"))
    var port: UInt16?

    func perform() async throws -> ExitCode {
        guard let sandbox = SandboxFolder.load(folder) else { return .noInput }
        let gateway: SandboxGateway
        do {
            gateway = try SandboxGateway.start(sandbox: sandbox, host: host ?? "127.0.0.1", port: port ?? 8443) {
                line in
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
        } catch {
            Output.standardError("error: cannot start the sandbox gateway: \(error)")
            return .failure
        }
        try await Serving.run(
            [ShutdownAction { await gateway.shutdown() }], announcing: "Sandbox Apple Pay gateway on \(gateway.url)")
        return .success
    }
}

/// `applepay sandbox gateway emit DIR --event TYPE --merchant-token ID [--notify URL]`: Apple's "tap" of a
/// merchant-token event.
struct SandboxGatewayEmitCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "emit",
        abstract: "Record a merchant-token event and notify the merchant, as Apple does.",
        usage: """
            applepay sandbox gateway emit DIR --event UNLINK|UPDATED_METADATA|UPDATED_CARD_ART --merchant-token ID \
            [--notify URL]
            """,
        discussion: """
            Records the event in DIR/merchant-tokens/events/ (the running `sandbox gateway DIR` answers it at \
            GET /paymentservices/v1/merchantId/{merchantId}/merchantToken/event/{eventId}), then sends \
            GET {tokenNotificationURL}/notification/merchantToken/{eventId} to the merchant, retrying 5xx and \
            connection failures up to 3 times. Prints {"eventId", "eventType", "notificationURL", "status", \
            "attempts"}. Exit 0 when the merchant answered 2xx (or the token has no notification URL), 1 otherwise.
            """)

    @Argument(help: ArgumentHelp("The sandbox folder (from applepay sandbox init).", valueName: "DIR"))
    var folder: String

    @Option(help: ArgumentHelp("UNLINK, UPDATED_METADATA or UPDATED_CARD_ART.", valueName: "TYPE"))
    var event: String?

    @Option(
        name: .customLong("merchant-token"),
        help: ArgumentHelp(
            "A merchantTokenIdentifier this sandbox issued (sandbox mint --merchant-token).", valueName: "ID"))
    var merchantToken: String?

    @Option(
        help: ArgumentHelp(
            "Call this scheme, host and port instead of the token's registered tokenNotificationURL's "
                + "(e.g. http://127.0.0.1:8080 for a local merchant server).", valueName: "URL"))
    var notify: String?

    func validate() throws {
        guard let event else { throw ValidationError("--event is required") }
        guard merchantToken != nil else { throw ValidationError("--merchant-token is required") }
        guard ["UNLINK", "UPDATED_METADATA", "UPDATED_CARD_ART"].contains(event) else {
            throw ValidationError("--event must be UNLINK, UPDATED_METADATA or UPDATED_CARD_ART")
        }
    }

    func perform() async throws -> ExitCode {
        guard let sandbox = SandboxFolder.load(folder) else { return .noInput }
        let emission = try await MerchantTokenEvents.emit(
            event ?? "", sandbox: sandbox, merchantToken: merchantToken ?? "", notify: notify,
            trustedRootsPEM: Data(sandbox.rootCertificate.pemRepresentation.utf8))
        print(try Output.json(emission))
        guard emission.notificationURL != nil else { return .success }
        return (200..<300).contains(emission.status ?? 0) ? .success : .failure
    }
}
