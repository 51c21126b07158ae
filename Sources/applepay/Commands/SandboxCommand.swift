import ApplePay
import Cryptography
import Foundation
import Foundations
import Sandbox

/// `applepay sandbox`: a test Apple that issues certificates and mints signed, encrypted tokens.
struct SandboxCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "sandbox",
            abstract: "Play Apple's part: a test certificate authority and real signed, encrypted payment tokens.",
            subcommands: [
                SandboxInitCommand.self, SandboxMintCommand.self, SandboxGatewayCommand.self, SandboxAPNsCommand.self,
                SandboxWalletCommand.self,
            ])
    }
}

/// Exit statuses shared by the sandbox and merchant commands.
enum SandboxExit {
    /// A named input file does not exist or cannot be read (`EX_NOINPUT`).
    static let noInput: Int32 = 66

    /// The sandbox in `folder`, or `nil` once the reason it cannot be loaded is on standard error (exit `noInput`).
    static func load(_ folder: String) -> Sandbox? {
        do {
            return try Sandbox.load(from: URL(fileURLWithPath: folder))
        } catch {
            Output.standardError("error: cannot load the sandbox \(folder): \(error)")
            return nil
        }
    }
}

/// `applepay sandbox init DIR --merchant-id ID [--force]`.
struct SandboxInitCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "init",
            abstract: "Create a sandbox folder: an Apple-shaped authority and one merchant's certificates and keys.",
            usage: ["DIR --merchant-id ID [--force] [--pretty]"],
            options: [
                ("--merchant-id ID", "The merchant identifier, e.g. merchant.com.example.shop (required)."),
                ("--force", "Replace an existing sandbox in DIR."),
                ("--pretty", "Indent the JSON report."),
            ],
            discussion: """
                Writes root.pem, intermediate.pem, merchant-ca.pem, leaf-ec.pem, leaf-rsa.pem,
                payment-processing-ec.pem, payment-processing-rsa.pem, merchant-identity.pem, wallet-ca.pem and
                order-type-id.pem (the Order Type ID certificate for Wallet orders) (each with a .key.pem
                beside it, mode 0600) and sandbox.json, then prints {"folder", "merchantIdentifier", "files",
                "rootSHA256"}. Configure a verifier with root.pem as its trust anchor. DIR must be new, empty, or
                (with --force) an earlier sandbox; everything is staged and renamed into place, so a failure leaves
                nothing half-written.
                """)
    }

    var folder: String
    var merchantIdentifier: String
    var force: Bool
    var pretty: Bool

    init(arguments: inout Arguments) throws {
        force = arguments.flag("--force")
        pretty = arguments.flag("--pretty")
        guard let identifier = try arguments.option("--merchant-id") else {
            throw UsageError("--merchant-id is required")
        }
        merchantIdentifier = identifier
        folder = try arguments.positional("DIR")
        do {
            try MerchantIdentifier.validate(merchantIdentifier)
        } catch let error as SandboxError {
            throw UsageError(error.message)
        }
    }

    struct Report: Encodable {
        var folder: String
        var merchantIdentifier: String
        var files: [String]
        var rootSHA256: String
    }

    func run() async throws -> Int32 {
        let sandbox = try Sandbox.create(
            at: URL(fileURLWithPath: folder), merchantIdentifier: merchantIdentifier, force: force)
        let fingerprint = sandbox.rootCertificate.sha256Fingerprint.map { String(format: "%02x", $0) }.joined()
        print(
            try Output.json(
                Report(
                    folder: sandbox.folder.path, merchantIdentifier: sandbox.merchantIdentifier,
                    files: Sandbox.fileNames.map { sandbox.folder.appendingPathComponent($0).path },
                    rootSHA256: fingerprint), pretty: pretty))
        return ExitCode.success
    }
}

/// `applepay sandbox mint DIR --amount 10.75 --currency USD [...]`, or `--batch REQUESTS.jsonl --out-dir DIR` for
/// many tokens from one process.
struct SandboxMintCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "mint",
            abstract: "Mint a signed, encrypted PKPaymentToken for the sandbox's merchant.",
            usage: [
                "DIR --amount AMOUNT --currency CODE [--kind EC_v1|RSA_v1] [--emv] [--out FILE] [options]",
                "DIR --batch REQUESTS.jsonl|- --out-dir FOLDER [--kind EC_v1|RSA_v1] [--emv] [card options]",
            ],
            options: [
                ("--amount AMOUNT", "The total in the currency, e.g. 10.75 (required without --batch)."),
                ("--currency CODE", "ISO 4217 alphabetic code, e.g. USD (required without --batch)."),
                ("--kind VERSION", "EC_v1 (default) or RSA_v1."),
                ("--network NAME", "Apple Pay JS network name (default visa)."),
                ("--pan DIGITS", "Device PAN (default: a test card for the network)."),
                ("--type TYPE", "Card type (default debit; credit for amex)."),
                ("--expiration YYMMDD", "applicationExpirationDate (default: end of the month in three years)."),
                ("--cardholder-name NAME", "Adds cardholderName to the payload."),
                ("--application-data BASE64", "The request's applicationData, base64 as Apple Pay JS sends it."),
                ("--signing-time ISO8601", "The CMS signing time (default now), e.g. 2026-01-02T03:04:05Z."),
                ("--emv", "An EMV payload instead of 3DSecure."),
                (
                    "--merchant-token",
                    "Issue a merchant token (MPAN): the payload carries merchantTokenIdentifier and "
                        + "merchantTokenMetadata, and the sandbox records it for `sandbox gateway`."
                ),
                ("--token-notification-url URL", "With --merchant-token: the request's tokenNotificationURL."),
                ("--out FILE", "Write the token to FILE (mode 0600) instead of standard output."),
                ("--batch FILE", "Mint one token per JSON line of FILE ('-': standard input); see below."),
                ("--out-dir FOLDER", "With --batch: where each token is written, as FOLDER/NAME.json (mode 0600)."),
                ("--pretty", "Indent the JSON."),
            ],
            discussion: """
                The token opens with the merchant's payment-processing-ec.key.pem (EC_v1) or
                payment-processing-rsa.key.pem (RSA_v1) and verifies against the sandbox's root.pem.

                Batch mode loads the sandbox once and mints every token in this one process. Each line of the
                requests file is a JSON object:
                  {"name": "chk_1", "amount": "12.34", "currency": "USD", "applicationData": "BASE64"}
                with optional "kind" (EC_v1 or RSA_v1) and "pan" overriding --kind and --pan for that line; the
                other card options apply to every token. "name" (1 to 128 of A-Z a-z 0-9 . _ -, not starting with
                a dot, unique) names the file NAME.json. Every line is checked before anything is minted: a bad
                line is reported with its number and nothing is written (exit 1). Blank lines are skipped. Prints
                {"minted": N, "outDir": FOLDER, "seconds": S} when done.
                """)
    }

    /// One token to mint: a line of a batch file, or the single token the options describe.
    struct Order: Sendable {
        var name: String?
        var amount: Decimal
        var currency: Currency
        var applicationData: String?
        var version: TokenVersion
        var pan: String?
    }

    /// A line of a `--batch` file.
    struct BatchLine: Decodable {
        var name: String
        var amount: String
        var currency: String
        var applicationData: String?
        var kind: String?
        var pan: String?
    }

    /// A batch file line that cannot be minted; names the file and the line.
    struct BatchError: Error, CustomStringConvertible {
        var description: String
    }

    enum Mode {
        case single(Order, out: String?)
        case batch(file: String, outDirectory: String)
    }

    var folder: String
    var mode: Mode
    var version: TokenVersion
    var network: PaymentNetwork
    var pan: String?
    var cardType: CardType?
    var expiration: String?
    var cardholderName: String?
    var signingTime: Date?
    var emv: Bool
    var pretty: Bool
    var merchantToken: Bool
    var tokenNotificationURL: String?

    init(arguments: inout Arguments) throws {
        emv = arguments.flag("--emv")
        merchantToken = arguments.flag("--merchant-token")
        tokenNotificationURL = try arguments.option("--token-notification-url")
        if tokenNotificationURL != nil && !merchantToken {
            throw UsageError("--token-notification-url needs --merchant-token")
        }
        pretty = arguments.flag("--pretty")
        version = try arguments.option("--kind", as: { TokenVersion(rawValue: $0) }) ?? .ecV1
        network = PaymentNetwork(rawValue: try arguments.option("--network") ?? "visa")
        pan = try arguments.option("--pan")
        cardType = try arguments.option("--type", as: { CardType(rawValue: $0) })
        expiration = try arguments.option("--expiration")
        cardholderName = try arguments.option("--cardholder-name")
        signingTime = try arguments.option("--signing-time", as: { ISO8601DateFormatter().date(from: $0) })
        let batch = try arguments.option("--batch")
        let outDirectory = try arguments.option("--out-dir")
        let amountText = try arguments.option("--amount")
        let currencyText = try arguments.option("--currency")
        let applicationData = try arguments.option("--application-data")
        let out = try arguments.option("--out")
        if let batch {
            guard let outDirectory else { throw UsageError("--batch needs --out-dir FOLDER") }
            for (name, value) in [
                ("--amount", amountText), ("--currency", currencyText), ("--application-data", applicationData),
                ("--out", out),
            ] where value != nil {
                throw UsageError("\(name) cannot be used with --batch: give it on each line of the requests file")
            }
            mode = .batch(file: batch, outDirectory: outDirectory)
        } else {
            if outDirectory != nil { throw UsageError("--out-dir needs --batch") }
            guard let amountText else { throw UsageError("--amount is required") }
            guard let currencyText else { throw UsageError("--currency is required") }
            mode = .single(
                try Self.singleOrder(
                    amount: amountText, currency: currencyText, applicationData: applicationData, version: version,
                    pan: pan), out: out)
        }
        folder = try arguments.positional("DIR")
    }

    /// The token the options describe; a bad value is a usage error.
    static func singleOrder(
        amount: String, currency: String, applicationData: String?, version: TokenVersion, pan: String?
    ) throws(UsageError) -> Order {
        do {
            return try order(
                name: nil, amount: amount, currency: currency, applicationData: applicationData, version: version,
                pan: pan)
        } catch {
            throw UsageError(error.description)
        }
    }

    /// Checks one token's amount, currency and applicationData.
    static func order(
        name: String?, amount amountText: String, currency currencyText: String, applicationData: String?,
        version: TokenVersion, pan: String?
    ) throws(BatchError) -> Order {
        guard let currency = Currency(code: currencyText) else {
            throw BatchError(
                description:
                    "unknown currency '\(currencyText.prefix(12))': use an ISO 4217 code such as USD, EUR or JPY")
        }
        let amount: Decimal
        do {
            amount = try currency.parseAmount(amountText)
        } catch {
            throw BatchError(description: "invalid --amount: \(error.message)")
        }
        guard amount >= 0 else { throw BatchError(description: "invalid --amount: the total must not be negative") }
        if let applicationData, Data(base64Encoded: applicationData) == nil {
            throw BatchError(description: "--application-data must be base64, as Apple Pay JS sends it")
        }
        return Order(
            name: name, amount: amount, currency: currency, applicationData: applicationData, version: version,
            pan: pan)
    }

    func run() async throws -> Int32 {
        let sandbox = try Sandbox.load(from: URL(fileURLWithPath: folder))
        switch mode {
        case .single(let order, let out):
            let token = try mint(order, with: sandbox)
            let json = try token.jsonData(pretty: pretty)
            if let out {
                try AtomicFile.write(
                    json + Data("\n".utf8), to: URL(fileURLWithPath: out), mode: AtomicFile.privateMode)
                Output.standardError(
                    "wrote \(order.version.rawValue) token \(token.transactionIdentifier.prefix(16))… to \(out)")
            } else {
                print(String(decoding: json, as: UTF8.self))
            }
        case .batch(let file, let outDirectory):
            let started = Date()
            let orders = try readBatch(file)
            // Cards are checked before anything is written, so a bad PAN on the last line writes nothing either.
            let cards = try orders.map { try card(pan: $0.pan) }
            let directory = URL(fileURLWithPath: outDirectory)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for (order, card) in zip(orders, cards) {
                let token = try mint(order, card: card, with: sandbox)
                try AtomicFile.write(
                    try token.jsonData(pretty: pretty) + Data("\n".utf8),
                    to: directory.appendingPathComponent("\(order.name ?? "token").json"),
                    mode: AtomicFile.privateMode)
            }
            struct Report: Encodable {
                var minted: Int
                var outDir: String
                var seconds: Double
            }
            let seconds = (Date().timeIntervalSince(started) * 1000).rounded() / 1000
            print(try Output.json(Report(minted: orders.count, outDir: directory.path, seconds: seconds)))
        }
        return ExitCode.success
    }

    /// Reads and checks every line of a batch file (`-`: standard input).
    private func readBatch(_ file: String) throws -> [Order] {
        let data: Data
        if file == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let read = FileManager.default.contents(atPath: file) else {
                throw BatchError(description: "cannot read the requests file \(file)")
            }
            data = read
        }
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
        var orders: [Order] = []
        var names = Set<String>()
        for (index, line) in String(decoding: data, as: UTF8.self).split(
            separator: "\n", omittingEmptySubsequences: false
        ).enumerated() {
            let place = "\(file == "-" ? "standard input" : file) line \(index + 1)"
            guard !line.allSatisfy(\.isWhitespace) else { continue }
            let entry: BatchLine
            do {
                entry = try JSONDecoder().decode(BatchLine.self, from: Data(line.utf8))
            } catch {
                throw BatchError(
                    description:
                        "\(place): not a request object {\"name\", \"amount\", \"currency\", \"applicationData\"}")
            }
            guard (1...128).contains(entry.name.count), !entry.name.hasPrefix("."),
                entry.name.allSatisfy({ allowed.contains($0) })
            else {
                throw BatchError(description: "\(place): name must be 1 to 128 of A-Z a-z 0-9 . _ - (no leading dot)")
            }
            guard names.insert(entry.name).inserted else {
                throw BatchError(description: "\(place): the name '\(entry.name)' is used twice")
            }
            var lineVersion = version
            if let kind = entry.kind {
                guard let parsed = TokenVersion(rawValue: kind) else {
                    throw BatchError(description: "\(place): kind must be EC_v1 or RSA_v1")
                }
                lineVersion = parsed
            }
            do {
                orders.append(
                    try Self.order(
                        name: entry.name, amount: entry.amount, currency: entry.currency,
                        applicationData: entry.applicationData, version: lineVersion, pan: entry.pan ?? pan))
            } catch {
                throw BatchError(description: "\(place): \(error.description)")
            }
        }
        return orders
    }

    /// The card the options (and a batch line's PAN) describe.
    private func card(pan: String?) throws -> SandboxCard {
        if let pan {
            return try SandboxCard(
                network: network, type: cardType ?? (network == .amex ? .credit : .debit), devicePAN: pan,
                expirationDate: expiration ?? SandboxCard.testCard(network: .visa)?.expirationDate ?? "301231",
                cardholderName: cardholderName)
        }
        guard var test = SandboxCard.testCard(network: network) else {
            throw UsageError("no test card for network '\(network.rawValue)': give one with --pan")
        }
        if let cardType { test.type = cardType }
        if let expiration {
            test = try SandboxCard(
                network: test.network, type: test.type, devicePAN: test.devicePAN, expirationDate: expiration)
        }
        test.cardholderName = cardholderName
        return test
    }

    private func mint(_ order: Order, card: SandboxCard? = nil, with sandbox: Sandbox) throws -> MintedToken {
        let request = MintRequest(
            card: try card ?? self.card(pan: order.pan), amount: order.amount, currencyCode: order.currency.code,
            applicationData: order.applicationData.map { .base64($0) },
            paymentDataType: emv ? .emv : .threeDSecure, signingTime: signingTime ?? Date())
        if merchantToken {
            let (token, issue) = try sandbox.mintWithMerchantToken(
                request, tokenNotificationURL: tokenNotificationURL, version: order.version)
            Output.standardError("merchant token \(issue.identifier)")
            return token
        }
        return try sandbox.mint(request, version: order.version)
    }
}
