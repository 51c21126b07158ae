import ArgumentParser
import Foundation
import Foundations
import MerchantCore
import MerchantSandbox
import MerchantServer
import MerchantStore
import MerchantWallet

/// `applepay serve`: the merchant server (checkout API, merchant validation, payments, orders on SQLite).
struct ServeCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract:
            "Run the merchant server: checkout API, merchant validation, payments and orders on SQLite or PostgreSQL.",
        usage: """
            applepay serve (--sandbox DIR [--sandbox-gateway URL] | --processor URL) [--config FILE] \
            [--store sqlite:PATH|postgresql://...] [--host ADDRESS] [--port N] [--public-url URL] [--apple-pay-sdk]
            """,
        discussion: """
            Serves the checkout page at / (in sandbox mode with a sandbox payment sheet in every browser). \
            Prints the URL once listening, then one JSON log line per request on standard error. Refuses to start \
            when a key is missing, unreadable, readable by others, or not the key of its certificate, and without \
            --sandbox when no --processor is given. The admin API under /admin/v1/ is on when APPLEPAY_ADMIN_TOKEN \
            (or the file's server.adminToken, the file then 0600) is set to a token of at least 32 characters; \
            failed attempts are limited per client (429). A reconciler settles payments whose outcome was not seen, \
            at start-up and every 30 s. With --sandbox, Wallet orders are on: payment answers carry \
            orderDetails and the orders web service answers under /wallet. SIGINT or SIGTERM stop accepting \
            connections, finish the requests in flight, and exit 0.
            """)

    @Option(
        name: .customLong("sandbox"),
        help: ArgumentHelp("Trust the sandbox's root and use its merchant certificates and keys.", valueName: "DIR"))
    var sandboxFolder: String?

    @Option(
        name: .customLong("sandbox-gateway"),
        help: ArgumentHelp(
            "With --sandbox: the sandbox gateway (applepay sandbox gateway) that merchant validation uses.",
            valueName: "URL"))
    var sandboxGateway: String?

    @Flag(
        name: .customLong("apple-pay-sdk"),
        help: "The checkout page also loads Apple's Apple Pay JS SDK (CSP allows its host).")
    var applePaySDK = false

    @Option(
        name: .customLong("config"),
        help: ArgumentHelp(
            "A configuration (JSON): the catalog, a \"processor\" and a \"server\" section, each optional "
                + "(no catalog: the demo store).", valueName: "FILE"))
    var configurationFile: String?

    @Option(
        name: .customLong("processor"),
        help: ArgumentHelp(
            "The payment processor (docs/PROCESSOR-PROTOCOL.md). Required without --sandbox; with --sandbox and "
                + "no --processor, the sandbox processor runs in process.", valueName: "URL"))
    var processor: String?

    @Option(
        name: .customLong("store"),
        help: ArgumentHelp(
            "Where orders live: sqlite:PATH (default sqlite:applepay-orders.sqlite) or a PostgreSQL URI "
                + "(postgres://USER@HOST:PORT/DB, postgresql:///DB?host=/socket/dir) shared by several servers.",
            valueName: "LOCATION"))
    var store: String?

    @Option(help: ArgumentHelp("The address to listen on (default 127.0.0.1).", valueName: "ADDRESS"))
    var host: String?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("The port to listen on; 0 picks a free one (default 8080).", valueName: "N"))
    var port: UInt16?

    @Option(
        name: .customLong("public-url"),
        help: ArgumentHelp(
            "The https base URL the server is reached at; every published URL (subscription management, token "
                + "notifications, the Wallet web service and order pages) is under it. Default: the server's own "
                + "address, http://HOST:PORT (local use: Apple refuses http URLs).", valueName: "URL"))
    var publicURL: String?

    @Option(
        name: .customLong("apns-url"),
        help: ArgumentHelp(
            "Push Wallet order updates to this APNs (e.g. `applepay sandbox apns`).", valueName: "URL"))
    var apnsURL: String?

    @Option(
        name: .customLong("apns-key"),
        help: ArgumentHelp(
            "The APNs authentication key (ES256); its id from AuthKey_<ID>.p8.", valueName: "FILE.p8"))
    var apnsKey: String?

    @Option(
        name: .customLong("apns-key-id"),
        help: ArgumentHelp("The key id, when the file is not named AuthKey_<ID>.p8.", valueName: "ID"))
    var apnsKeyID: String?

    @Option(
        name: .customLong("apns-team-id"),
        help: ArgumentHelp("The team id (the JWT issuer; default SANDBOX001).", valueName: "ID"))
    var apnsTeamID: String?

    @Option(
        name: .customLong("wallet-url"),
        help: ArgumentHelp(
            "Old name: --public-url PUBLIC is the same as --wallet-url PUBLIC/wallet.", valueName: "URL"))
    var walletURL: String?

    /// The flags' values, each parsed once, here where its text enters.
    struct Flags {
        var storeLocation: OrderStoreLocation?
        var processor: ProcessorChoice?
        var publicURL: PublicURL?
        /// The APNs key and its id, with `--apns-url`.
        var apns: (url: String, keyPath: String, keyID: String)?
    }

    func validate() throws {
        _ = try flags()
    }

    /// The flags read into their types; a usage error names the flag at fault.
    func flags() throws -> Flags {
        if sandboxGateway != nil, sandboxFolder == nil {
            throw ValidationError("--sandbox-gateway needs --sandbox DIR")
        }
        var flags = Flags()
        if let store {
            do throws(OrderStoreError) {
                flags.storeLocation = try OrderStoreLocation(parsing: store)
            } catch {
                throw ValidationError(error.message)
            }
        }
        if let processor {
            guard let choice = ProcessorChoice.http(parsing: processor) else {
                throw ValidationError("--processor must be an http(s) URL with a host (got '\(processor)')")
            }
            flags.processor = choice
        }
        if publicURL != nil, walletURL != nil {
            throw ValidationError("give --public-url or its old name --wallet-url")
        }
        if let text = publicURL ?? walletURL {
            let flag = publicURL != nil ? "--public-url" : "--wallet-url"
            var base = text
            if publicURL == nil {
                guard text.hasSuffix("/wallet") else {
                    throw ValidationError(
                        "--wallet-url must end in /wallet (it is --public-url URL/wallet; use --public-url)")
                }
                base = String(text.dropLast("/wallet".count))
            }
            guard let url = PublicURL(base) else {
                throw ValidationError(
                    "\(flag) must be an https URL with a host and no query, fragment or trailing slash (got '\(text)')")
            }
            flags.publicURL = url
        }
        if let apnsURL {
            guard let apnsKey else { throw ValidationError("--apns-url needs --apns-key FILE.p8") }
            let name = URL(fileURLWithPath: apnsKey).lastPathComponent
            var keyID = apnsKeyID
            if keyID == nil, name.hasPrefix("AuthKey_"), name.hasSuffix(".p8") {
                keyID = String(name.dropFirst("AuthKey_".count).dropLast(".p8".count))
            }
            guard let keyID else { throw ValidationError("--apns-key-id is required") }
            flags.apns = (apnsURL, apnsKey, keyID)
        }
        return flags
    }

    /// The configuration file (when given) with the flags over it, and the admin token from the environment.
    /// - Throws: `ValidationError` for a file that does not describe a server or a flag that needs another;
    ///   `ServerStartError` for a file that cannot be trusted (an admin token others may read), refused like a key.
    func serverConfiguration() throws -> MerchantServerConfiguration {
        let flags = try flags()
        var configuration = MerchantServerConfiguration()
        if let configurationFile {
            do throws(ServerStartError) {
                configuration = try MerchantServerConfiguration.load(file: configurationFile)
            } catch {
                guard error.code != .invalidConfiguration else { throw ValidationError(error.message) }
                throw error
            }
        }
        if let sandboxFolder { configuration.useSandbox(folder: sandboxFolder) }
        if let storeLocation = flags.storeLocation { configuration.storeLocation = storeLocation }
        if let host { configuration.host = host }
        if let port { configuration.port = port }
        if let processor = flags.processor { configuration.processor = processor }
        if let publicURL = flags.publicURL { configuration.publicURL = publicURL }
        if let sandboxGateway { configuration.sandboxGatewayURL = sandboxGateway }
        if applePaySDK { configuration.loadsApplePayJSSDK = true }
        if let apns = flags.apns {
            guard configuration.walletOrders != nil else {
                throw ValidationError("--apns-url needs Wallet orders (--sandbox DIR)")
            }
            configuration.walletOrders?.apns = APNsSettings(
                baseURL: apns.url, keyID: apns.keyID, teamID: apnsTeamID ?? "SANDBOX001", keyPath: apns.keyPath,
                trustedRootsPath: configuration.sandboxFolder.map {
                    URL(fileURLWithPath: $0).appendingPathComponent("root.pem").path
                })
        }
        if let token = ProcessInfo.processInfo.environment["APPLEPAY_ADMIN_TOKEN"], !token.isEmpty {
            configuration.adminToken = token
        }
        return configuration
    }

    func perform() async throws -> ExitCode {
        let configuration: MerchantServerConfiguration
        let application: MerchantApplication
        do {
            configuration = try serverConfiguration()
            // Sandbox mode is a plug-in: without --sandbox the server runs its production modules only.
            application = try await MerchantApplication.assemble(
                configuration, plugins: configuration.sandboxFolder != nil ? [SandboxMode()] : [])
        } catch let error as ServerStartError {
            Output.standardError("error: cannot start the server: \(error.message) [\(error.code)]")
            return .failure
        }
        // Its services (the HTTP server, the reconciler, the scheduler, the pushers) stop gracefully on SIGINT or
        // SIGTERM: the server finishes the requests in flight.
        try await Serving.run(
            [application], announcing: "Serving \(application.configuration.store.storeName) on \(application.url)")
        return .success
    }
}
