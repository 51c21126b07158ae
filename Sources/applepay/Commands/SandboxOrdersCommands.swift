import ApplePay
import ArgumentParser
import Cryptography
import Foundation
import HTTPClient
import MerchantServer
import Sandbox

/// `applepay sandbox apns DIR [--port N] [--team-id ID]`: plays APNs for Wallet order updates.
struct SandboxAPNsCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns",
        abstract: "Play APNs: HTTP/2 over TLS, provider-token (ES256 JWT) and topic checks, pushes recorded.",
        usage: "applepay sandbox apns DIR [--port N] [--team-id ID]",
        discussion: """
            Uses (or makes, on first use) the APNs authentication key DIR/apns/AuthKey_<KEYID>.p8 (mode 0600) \
            and a TLS certificate from the sandbox authority (clients trust DIR/root.pem). The topic must be the \
            sandbox's order type identifier. Prints {"url", "keyID", "teamID", "keyPath", "topic", \
            "trustedRoots"} once listening; `applepay serve --sandbox DIR --apns-url URL` sends pushes to it. GET \
            /pushes?after=N&deviceToken=T&wait=S lists the pushes received (a long poll of up to S seconds). \
            SIGINT or SIGTERM stop it.
            """)

    @Argument(help: ArgumentHelp("The sandbox folder (from applepay sandbox init).", valueName: "DIR"))
    var folder: String

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("The port on 127.0.0.1; 0 picks a free one (default 0).", valueName: "N"))
    var port: UInt16?

    @Option(
        name: .customLong("team-id"),
        help: ArgumentHelp("The JWT issuer to accept (default: the sandbox's team, SANDBOX001).", valueName: "ID"))
    var teamID: String?

    struct Report: Encodable {
        var url: String
        var keyID: String
        var teamID: String
        var keyPath: String
        var topic: String
        var trustedRoots: String
    }

    func perform() async throws -> ExitCode {
        let sandbox = try Sandbox.load(from: URL(fileURLWithPath: folder))
        let key = try Self.authKey(sandbox)
        let team = teamID ?? sandbox.configuration.teamIdentifier
        let apns = try SandboxAPNs.start(
            authority: sandbox.authority, folder: sandbox.folder.appendingPathComponent("apns"),
            keyID: key.keyID, teamID: team, key: key.key.publicKey, topic: sandbox.orderTypeIdentifier, port: port ?? 0)
        let report = Report(
            url: apns.url, keyID: key.keyID, teamID: team, keyPath: key.path, topic: sandbox.orderTypeIdentifier,
            trustedRoots: sandbox.folder.appendingPathComponent(Sandbox.File.root).path)
        try await Serving.run([ShutdownAction { apns.shutdown() }], announcing: try Output.json(report))
        return .success
    }

    /// The sandbox's APNs key: the first `apns/AuthKey_*.p8`, made when there is none.
    static func authKey(_ sandbox: Sandbox) throws -> (keyID: String, path: String, key: PrivateKey) {
        let folder = sandbox.folder.appendingPathComponent("apns")
        let existing = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted().first {
            $0.hasPrefix("AuthKey_") && $0.hasSuffix(".p8")
        }
        if let existing {
            let path = folder.appendingPathComponent(existing).path
            let key = try PrivateKey(pem: try String(contentsOfFile: path, encoding: .utf8))
            return (String(existing.dropFirst("AuthKey_".count).dropLast(".p8".count)), path, key)
        }
        return try SandboxAPNs.makeAuthKey(in: folder)
    }
}

/// `applepay sandbox wallet DIR --order-details JSON [--apns-url URL] [--updates N] [--connect-to URL]`: plays a
/// device's Wallet.
struct SandboxWalletCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "wallet",
        abstract: "Play a device's Wallet for an order: register, download, verify, follow pushes.",
        usage:
            "applepay sandbox wallet DIR --order-details JSON|@FILE [--apns-url URL] [--updates N] [--connect-to URL]",
        discussion: """
            Registers a new device for the order, downloads the package and checks it as Wallet does (the \
            signature over manifest.json chains to DIR/root.pem, every manifest hash, the order type \
            identifier, the schema), then long-polls the sandbox APNs for pushes to its token and downloads again \
            with If-Modified-Since after each. Prints one JSON line per state change: registered, order (status, \
            fulfillmentStatus, carrier, trackingNumber, updatedAt), push, notModified, invalid, downloadFailed. \
            Exit 0 when it ran to its end, 1 when the package was invalid or a download failed.
            """)

    @Argument(help: ArgumentHelp("The sandbox folder (from applepay sandbox init).", valueName: "DIR"))
    var folder: String

    @Option(
        name: .customLong("order-details"),
        help: ArgumentHelp(
            "The payment answer's orderDetails (or the whole answer), inline or @FILE.", valueName: "JSON"))
    var orderDetails: String?

    @Option(
        name: .customLong("apns-url"),
        help: ArgumentHelp("The sandbox APNs (`applepay sandbox apns`) to follow pushes from.", valueName: "URL"))
    var apnsURL: String?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Stop after N pushes (default: run until interrupted).", valueName: "N"))
    var updates: Int?

    @Option(
        name: .customLong("connect-to"),
        help: ArgumentHelp(
            "Reach webServiceURL's https origin at URL, as a TLS proxy in front of the server would (a server "
                + "without --public-url publishes https://HOST:PORT/wallet; give http://HOST:PORT).",
            valueName: "URL"))
    var connectTo: String?

    func validate() throws {
        _ = try details()
    }

    /// The order's details, from the option's JSON or the file it names.
    func details() throws -> PaymentOrderDetails {
        guard let text = orderDetails else { throw ValidationError("--order-details is required") }
        let data: Data
        if text.hasPrefix("@") {
            guard let contents = FileManager.default.contents(atPath: String(text.dropFirst())) else {
                throw ValidationError("\(text.dropFirst()): no such file")
            }
            data = contents
        } else {
            data = Data(text.utf8)
        }
        struct Answer: Decodable { var orderDetails: PaymentOrderDetails }
        if let answer = try? JSONDecoder().decode(Answer.self, from: data) { return answer.orderDetails }
        if let direct = try? JSONDecoder().decode(PaymentOrderDetails.self, from: data) { return direct }
        throw ValidationError(
            "--order-details must be {orderTypeIdentifier, orderIdentifier, webServiceURL, authenticationToken}")
    }

    func perform() async throws -> ExitCode {
        let details = try details()
        let sandbox = try Sandbox.load(from: URL(fileURLWithPath: folder))
        let wallet = try SandboxWallet(details: details, roots: [sandbox.rootCertificate], connectTo: connectTo)
        var apns: HTTPClient?
        if apnsURL != nil {
            var configuration = HTTPClient.Configuration(
                timeout: .seconds(40), trustedRootsPEM: Data(sandbox.rootCertificate.pemRepresentation.utf8))
            configuration.http2 = true
            apns = HTTPClient(configuration: configuration)
        }
        var failed = false
        try await wallet.run(apnsURL: apnsURL, apns: apns, maximumUpdates: updates ?? .max) { event in
            if case .object(let fields) = event, case .string(let name)? = fields["event"],
                name == "invalid" || name == "downloadFailed"
            {
                failed = true
            }
            if let line = try? Output.json(event) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
        }
        return failed ? .failure : .success
    }
}
