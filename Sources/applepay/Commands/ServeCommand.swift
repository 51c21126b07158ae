import Dispatch
import Foundation
import Foundations
import MerchantCore
import MerchantSandbox
import MerchantServer
import MerchantStore
import MerchantWallet

/// `applepay serve`: the merchant server (checkout API, merchant validation, payments, orders on SQLite).
struct ServeCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "serve",
            abstract:
                "Run the merchant server: checkout API, merchant validation, payments and orders on SQLite or PostgreSQL.",
            usage: [
                "(--sandbox DIR [--sandbox-gateway URL] | --processor URL) [--config FILE] "
                    + "[--store sqlite:PATH|postgresql://...] [--host ADDRESS] [--port N] [--public-url URL] "
                    + "[--apple-pay-sdk]"
            ],
            options: [
                ("--sandbox DIR", "Trust the sandbox's root and use its merchant certificates and keys."),
                (
                    "--sandbox-gateway URL",
                    "With --sandbox: the sandbox gateway (applepay sandbox gateway) that merchant validation uses."
                ),
                ("--apple-pay-sdk", "The checkout page also loads Apple's Apple Pay JS SDK (CSP allows its host)."),
                (
                    "--config FILE",
                    "A configuration (JSON): the catalog, a \"processor\" and a \"server\" section, each optional "
                        + "(no catalog: the demo store)."
                ),
                (
                    "--processor URL",
                    "The payment processor (docs/PROCESSOR-PROTOCOL.md). Required without --sandbox; with --sandbox and "
                        + "no --processor, the sandbox processor runs in process."
                ),
                (
                    "--store LOCATION",
                    "Where orders live: sqlite:PATH (default sqlite:applepay-orders.sqlite) or a PostgreSQL URI "
                        + "(postgres://USER@HOST:PORT/DB, postgresql:///DB?host=/socket/dir) shared by several servers."
                ),
                ("--host ADDRESS", "The address to listen on (default 127.0.0.1)."),
                ("--port N", "The port to listen on; 0 picks a free one (default 8080)."),
                (
                    "--public-url URL",
                    "The https base URL the server is reached at; every published URL (subscription management, "
                        + "token notifications, the Wallet web service and order pages) is under it. Default: the "
                        + "server's own address, http://HOST:PORT (local use: Apple refuses http URLs)."
                ),
                ("--apns-url URL", "Push Wallet order updates to this APNs (e.g. `applepay sandbox apns`)."),
                ("--apns-key FILE.p8", "The APNs authentication key (ES256); its id from AuthKey_<ID>.p8."),
                ("--apns-key-id ID", "The key id, when the file is not named AuthKey_<ID>.p8."),
                ("--apns-team-id ID", "The team id (the JWT issuer; default SANDBOX001)."),
                ("--wallet-url URL", "Old name: --public-url PUBLIC is the same as --wallet-url PUBLIC/wallet."),
            ],
            discussion: """
                Serves the checkout page at / (in sandbox mode with a sandbox payment sheet in every browser).
                Prints the URL once listening, then one JSON log line per request on standard error. Refuses to start
                when a key is missing, unreadable, readable by others, or not the key of its certificate, and without
                --sandbox when no --processor is given. The admin API under /admin/v1/ is on when APPLEPAY_ADMIN_TOKEN
                (or the file's server.adminToken, the file then 0600) is set to a token of at least 32 characters;
                failed attempts are limited per client (429). A reconciler settles payments whose outcome was not seen,
                at start-up and every 30 s. With --sandbox, Wallet orders are on: payment answers carry
                orderDetails and the orders web service answers under /wallet. SIGINT or SIGTERM stop accepting connections, finish the requests in
                flight, and exit 0.
                """)
    }

    var configuration: MerchantServerConfiguration

    init(arguments: inout Arguments) throws {
        let configFile = try arguments.option("--config")
        let sandbox = try arguments.option("--sandbox")
        let store = try arguments.option("--store")
        let host = try arguments.option("--host")
        let port = try arguments.option("--port", as: { UInt16($0) })
        let processor = try arguments.option("--processor")
        let sandboxGateway = try arguments.option("--sandbox-gateway")
        let applePaySDK = arguments.flag("--apple-pay-sdk")
        if sandboxGateway != nil, sandbox == nil { throw UsageError("--sandbox-gateway needs --sandbox DIR") }
        let apnsURL = try arguments.option("--apns-url")
        let apnsKey = try arguments.option("--apns-key")
        var apnsKeyID = try arguments.option("--apns-key-id")
        let apnsTeamID = try arguments.option("--apns-team-id") ?? "SANDBOX001"
        let walletURL = try arguments.option("--wallet-url")
        let publicURLText = try arguments.option("--public-url")
        // Each value parsed once, here where its text enters.
        let storeLocation = try store.map { text throws(UsageError) in
            do throws(OrderStoreError) {
                return try OrderStoreLocation(parsing: text)
            } catch {
                throw UsageError(error.message)
            }
        }
        let processorChoice = try processor.map { text throws(UsageError) in
            guard let choice = ProcessorChoice.http(parsing: text) else {
                throw UsageError("--processor must be an http(s) URL with a host (got '\(text)')")
            }
            return choice
        }
        if publicURLText != nil, walletURL != nil { throw UsageError("give --public-url or its old name --wallet-url") }
        let publicURL = try (publicURLText ?? walletURL).map { text throws(UsageError) in
            let flag = publicURLText != nil ? "--public-url" : "--wallet-url"
            var base = text
            if publicURLText == nil {
                guard text.hasSuffix("/wallet") else {
                    throw UsageError(
                        "--wallet-url must end in /wallet (it is --public-url URL/wallet; use --public-url)")
                }
                base = String(text.dropLast("/wallet".count))
            }
            guard let url = PublicURL(base) else {
                throw UsageError(
                    "\(flag) must be an https URL with a host and no query, fragment or trailing slash (got '\(text)')")
            }
            return url
        }
        var configuration = MerchantServerConfiguration()
        if let configFile {
            do {
                configuration = try MerchantServerConfiguration.load(file: configFile)
            } catch  where error.code == .invalidConfiguration {
                throw UsageError(error.message)
            } catch {
                // A file that cannot be trusted (an admin token others may read): refused like a key file.
                throw ServerStartError(error.code, "cannot start the server: \(error.message) [\(error.code)]")
            }
        }
        if let sandbox { configuration.useSandbox(folder: sandbox) }
        if let storeLocation { configuration.storeLocation = storeLocation }
        if let host { configuration.host = host }
        if let port { configuration.port = port }
        if let processorChoice { configuration.processor = processorChoice }
        if let publicURL { configuration.publicURL = publicURL }
        if let sandboxGateway { configuration.sandboxGatewayURL = sandboxGateway }
        if applePaySDK { configuration.loadsApplePayJSSDK = true }
        if let apnsURL {
            guard configuration.walletOrders != nil else {
                throw UsageError("--apns-url needs Wallet orders (--sandbox DIR)")
            }
            guard let apnsKey else { throw UsageError("--apns-url needs --apns-key FILE.p8") }
            let name = URL(fileURLWithPath: apnsKey).lastPathComponent
            if apnsKeyID == nil, name.hasPrefix("AuthKey_"), name.hasSuffix(".p8") {
                apnsKeyID = String(name.dropFirst("AuthKey_".count).dropLast(".p8".count))
            }
            guard let apnsKeyID else { throw UsageError("--apns-key-id is required") }
            configuration.walletOrders?.apns = APNsSettings(
                baseURL: apnsURL, keyID: apnsKeyID, teamID: apnsTeamID, keyPath: apnsKey,
                trustedRootsPath: configuration.sandboxFolder.map {
                    URL(fileURLWithPath: $0).appendingPathComponent("root.pem").path
                })
        }
        if let token = ProcessInfo.processInfo.environment["APPLEPAY_ADMIN_TOKEN"], !token.isEmpty {
            configuration.adminToken = token
        }
        self.configuration = configuration
    }

    func run() async throws -> Int32 {
        let application: MerchantApplication
        do {
            // Sandbox mode is a plug-in: without --sandbox the server runs its production modules only.
            application = try await MerchantApplication.start(
                configuration, plugins: configuration.sandboxFolder != nil ? [SandboxMode()] : [])
        } catch {
            Output.standardError("error: cannot start the server: \(error.message) [\(error.code)]")
            return ExitCode.failure
        }
        return await Self.serve(
            announcing: "Serving \(application.configuration.store.storeName) on \(application.url)"
        ) { await application.shutdown() }
    }

    /// The end of every serving command: prints `announcement` as a line, waits for SIGINT or SIGTERM, then runs
    /// `shutdown` and exits with success.
    static func serve(announcing announcement: String, shutdown: () async -> Void) async -> Int32 {
        FileHandle.standardOutput.write(Data((announcement + "\n").utf8))
        await waitForTermination()
        await shutdown()
        return ExitCode.success
    }

    /// Suspends until SIGINT or SIGTERM arrives.
    static func waitForTermination() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = SignalOnce(continuation)
            for number in [SIGINT, SIGTERM] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { once.fire() }
                source.resume()
                once.keep(source)
            }
        }
    }
}

/// Resumes the waiting task on the first signal; keeps the signal sources alive.
private final class SignalOnce: @unchecked Sendable {
    // Guarded by `lock`.
    private var continuation: CheckedContinuation<Void, Never>?
    private var sources: [any DispatchSourceSignal] = []
    private let lock = NSLock()

    init(_ continuation: CheckedContinuation<Void, Never>) { self.continuation = continuation }

    func keep(_ source: any DispatchSourceSignal) { lock.withLock { sources.append(source) } }

    func fire() {
        let pending = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            defer { continuation = nil }
            return continuation
        }
        pending?.resume()
    }
}
