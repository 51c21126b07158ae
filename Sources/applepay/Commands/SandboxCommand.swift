import ApplePay
import ArgumentParser
import Cryptography
import Foundation
import Foundations
import Sandbox

/// `applepay sandbox`: a test Apple that issues certificates and mints signed, encrypted tokens.
struct SandboxCommand: CommandGroup {
    static let configuration = CommandConfiguration(
        commandName: "sandbox",
        abstract: "Play Apple's part: a test certificate authority and real signed, encrypted payment tokens.",
        subcommands: [
            SandboxInitCommand.self, SandboxMintCommand.self, SandboxGatewayCommand.self, SandboxAPNsCommand.self,
            SandboxWalletCommand.self,
        ])
}

/// The sandbox folder the sandbox and gateway commands name.
enum SandboxFolder {
    /// The sandbox in `folder`, or `nil` once the reason it cannot be loaded is on standard error (the command then
    /// exits `noInput`).
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
struct SandboxInitCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create a sandbox folder: an Apple-shaped authority and one merchant's certificates and keys.",
        usage: "applepay sandbox init DIR --merchant-id ID [--force] [--pretty]",
        discussion: """
            Writes root.pem, intermediate.pem, merchant-ca.pem, leaf-ec.pem, leaf-rsa.pem, \
            payment-processing-ec.pem, payment-processing-rsa.pem, merchant-identity.pem, wallet-ca.pem and \
            order-type-id.pem (the Order Type ID certificate for Wallet orders) (each with a .key.pem \
            beside it, mode 0600) and sandbox.json, then prints {"folder", "merchantIdentifier", "files", \
            "rootSHA256"}. Configure a verifier with root.pem as its trust anchor. DIR must be new, empty, or \
            (with --force) an earlier sandbox; everything is staged and renamed into place, so a failure leaves \
            nothing half-written.
            """)

    @Argument(help: ArgumentHelp("The folder to create.", valueName: "DIR"))
    var folder: String

    @Option(
        name: .customLong("merchant-id"),
        help: ArgumentHelp("The merchant identifier, e.g. merchant.com.example.shop (required).", valueName: "ID"))
    var merchantIdentifier: String?

    @Flag(help: "Replace an existing sandbox in DIR.")
    var force = false

    @Flag(help: "Indent the JSON report.")
    var pretty = false

    func validate() throws {
        guard let merchantIdentifier else { throw ValidationError("--merchant-id is required") }
        do {
            try MerchantIdentifier.validate(merchantIdentifier)
        } catch let error as SandboxError {
            throw ValidationError(error.message)
        }
    }

    struct Report: Encodable {
        var folder: String
        var merchantIdentifier: String
        var files: [String]
        var rootSHA256: String
    }

    func perform() async throws -> ExitCode {
        let sandbox = try Sandbox.create(
            at: URL(fileURLWithPath: folder), merchantIdentifier: merchantIdentifier ?? "", force: force)
        let fingerprint = sandbox.rootCertificate.sha256Fingerprint.map { String(format: "%02x", $0) }.joined()
        print(
            try Output.json(
                Report(
                    folder: sandbox.folder.path, merchantIdentifier: sandbox.merchantIdentifier,
                    files: Sandbox.fileNames.map { sandbox.folder.appendingPathComponent($0).path },
                    rootSHA256: fingerprint), pretty: pretty))
        return .success
    }
}

/// `applepay sandbox mint DIR --amount 10.75 --currency USD [...]`, or `--batch REQUESTS.jsonl --out-dir DIR` for
/// many tokens from one process.
struct SandboxMintCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "mint",
        abstract: "Mint a signed, encrypted PKPaymentToken for the sandbox's merchant.",
        usage: """
            applepay sandbox mint DIR --amount AMOUNT --currency CODE [--kind EC_v1|RSA_v1] [--emv] [--out FILE] \
            [options]
            applepay sandbox mint DIR --batch REQUESTS.jsonl|- --out-dir FOLDER [--kind EC_v1|RSA_v1] [--emv] \
            [card options]
            """,
        discussion: """
            The token opens with the merchant's payment-processing-ec.key.pem (EC_v1) or \
            payment-processing-rsa.key.pem (RSA_v1) and verifies against the sandbox's root.pem.

            Batch mode loads the sandbox once and mints every token in this one process. Each line of the \
            requests file is a JSON object:
              {"name": "chk_1", "amount": "12.34", "currency": "USD",
               "applicationData": "BASE64"}
            with optional "kind" (EC_v1 or RSA_v1) and "pan" overriding --kind and --pan for that line; the \
            other card options apply to every token. "name" (1 to 128 of A-Z a-z 0-9 . _ -, not starting with \
            a dot, unique) names the file NAME.json. Every line is checked before anything is minted: a bad \
            line is reported with its number and nothing is written (exit 1). Blank lines are skipped. Prints \
            {"minted": N, "outDir": FOLDER, "seconds": S} when done.
            """)

    @Argument(help: ArgumentHelp("The sandbox folder (from applepay sandbox init).", valueName: "DIR"))
    var folder: String

    @Option(
        name: .customLong("amount"), parsing: .unconditional,
        help: ArgumentHelp(
            "The total in the currency, e.g. 10.75 (required without --batch).", valueName: "AMOUNT"))
    var amountText: String?

    @Option(
        name: .customLong("currency"),
        help: ArgumentHelp("ISO 4217 alphabetic code, e.g. USD (required without --batch).", valueName: "CODE"))
    var currencyText: String?

    @Option(name: .customLong("kind"), help: ArgumentHelp("EC_v1 (default) or RSA_v1.", valueName: "VERSION"))
    var kindText: String?

    @Option(
        name: .customLong("network"), help: ArgumentHelp("Apple Pay JS network name (default visa).", valueName: "NAME")
    )
    var networkText: String?

    @Option(help: ArgumentHelp("Device PAN (default: a test card for the network).", valueName: "DIGITS"))
    var pan: String?

    @Option(
        name: .customLong("type"), help: ArgumentHelp("Card type (default debit; credit for amex).", valueName: "TYPE"))
    var cardTypeText: String?

    @Option(
        help: ArgumentHelp(
            "applicationExpirationDate (default: end of the month in three years).", valueName: "YYMMDD"))
    var expiration: String?

    @Option(
        name: .customLong("cardholder-name"),
        help: ArgumentHelp("Adds cardholderName to the payload.", valueName: "NAME"))
    var cardholderName: String?

    @Option(
        name: .customLong("application-data"),
        help: ArgumentHelp(
            "The request's applicationData, base64 as Apple Pay JS sends it.", valueName: "BASE64"))
    var applicationData: String?

    @Option(
        name: .customLong("signing-time"),
        help: ArgumentHelp(
            "The CMS signing time (default now), e.g. 2026-01-02T03:04:05Z.", valueName: "ISO8601"))
    var signingTimeText: String?

    @Flag(help: "An EMV payload instead of 3DSecure.")
    var emv = false

    @Flag(
        name: .customLong("merchant-token"),
        help: ArgumentHelp(
            "Issue a merchant token (MPAN): the payload carries merchantTokenIdentifier and merchantTokenMetadata, "
                + "and the sandbox records it for `sandbox gateway`."))
    var merchantToken = false

    @Option(
        name: .customLong("token-notification-url"),
        help: ArgumentHelp("With --merchant-token: the request's tokenNotificationURL.", valueName: "URL"))
    var tokenNotificationURL: String?

    @Option(help: ArgumentHelp("Write the token to FILE (mode 0600) instead of standard output.", valueName: "FILE"))
    var out: String?

    @Option(
        help: ArgumentHelp(
            "Mint one token per JSON line of FILE ('-': standard input); see below.", valueName: "FILE"))
    var batch: String?

    @Option(
        name: .customLong("out-dir"),
        help: ArgumentHelp(
            "With --batch: where each token is written, as FOLDER/NAME.json (mode 0600).", valueName: "FOLDER"))
    var outDirectory: String?

    @Flag(help: "Indent the JSON.")
    var pretty = false

    /// The card options, read into their types.
    struct CardOptions {
        var version: TokenVersion
        var network: PaymentNetwork
        var cardType: CardType?
        var signingTime: Date?
    }

    func validate() throws {
        _ = try mode()
    }

    /// The card options; a usage error names the option at fault.
    func cardOptions() throws -> CardOptions {
        if tokenNotificationURL != nil && !merchantToken {
            throw ValidationError("--token-notification-url needs --merchant-token")
        }
        var card = CardOptions(version: .ecV1, network: PaymentNetwork(rawValue: networkText ?? "visa"))
        if let kindText {
            guard let version = TokenVersion(rawValue: kindText) else {
                throw ValidationError("invalid value '\(kindText)' for --kind")
            }
            card.version = version
        }
        if let cardTypeText {
            guard let cardType = CardType(rawValue: cardTypeText) else {
                throw ValidationError("invalid value '\(cardTypeText)' for --type")
            }
            card.cardType = cardType
        }
        if let signingTimeText {
            guard let time = ISO8601DateFormatter().date(from: signingTimeText) else {
                throw ValidationError("invalid value '\(signingTimeText)' for --signing-time")
            }
            card.signingTime = time
        }
        return card
    }

    /// One token or a batch, as the options ask; a usage error names the option at fault.
    func mode() throws -> Mode {
        let card = try cardOptions()
        if let batch {
            guard let outDirectory else { throw ValidationError("--batch needs --out-dir FOLDER") }
            for (name, value) in [
                ("--amount", amountText), ("--currency", currencyText), ("--application-data", applicationData),
                ("--out", out),
            ] where value != nil {
                throw ValidationError(
                    "\(name) cannot be used with --batch: give it on each line of the requests file")
            }
            return .batch(file: batch, outDirectory: outDirectory)
        }
        if outDirectory != nil { throw ValidationError("--out-dir needs --batch") }
        guard let amountText else { throw ValidationError("--amount is required") }
        guard let currencyText else { throw ValidationError("--currency is required") }
        return .single(
            try Self.singleOrder(
                amount: amountText, currency: currencyText, applicationData: applicationData, version: card.version,
                pan: pan), out: out)
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

    /// The token the options describe; a bad value is a usage error.
    static func singleOrder(
        amount: String, currency: String, applicationData: String?, version: TokenVersion, pan: String?
    ) throws(ValidationError) -> Order {
        do {
            return try order(
                name: nil, amount: amount, currency: currency, applicationData: applicationData, version: version,
                pan: pan)
        } catch {
            throw ValidationError(error.description)
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

    func perform() async throws -> ExitCode {
        let mode = try mode()
        let options = try cardOptions()
        let sandbox = try Sandbox.load(from: URL(fileURLWithPath: folder))
        switch mode {
        case .single(let order, let out):
            let token = try mint(order, options: options, with: sandbox)
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
            let orders = try readBatch(file, version: options.version)
            // Cards are checked before anything is written, so a bad PAN on the last line writes nothing either.
            let cards = try orders.map { try card(pan: $0.pan, options: options) }
            let directory = URL(fileURLWithPath: outDirectory)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for (order, card) in zip(orders, cards) {
                let token = try mint(order, card: card, options: options, with: sandbox)
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
        return .success
    }

    /// Reads and checks every line of a batch file (`-`: standard input).
    private func readBatch(_ file: String, version: TokenVersion) throws -> [Order] {
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
    private func card(pan: String?, options: CardOptions) throws -> SandboxCard {
        let (network, cardType) = (options.network, options.cardType)
        if let pan {
            return try SandboxCard(
                network: network, type: cardType ?? (network == .amex ? .credit : .debit), devicePAN: pan,
                expirationDate: expiration ?? SandboxCard.testCard(network: .visa)?.expirationDate ?? "301231",
                cardholderName: cardholderName)
        }
        guard var test = SandboxCard.testCard(network: network) else {
            throw ValidationError("no test card for network '\(network.rawValue)': give one with --pan")
        }
        if let cardType { test.type = cardType }
        if let expiration {
            test = try SandboxCard(
                network: test.network, type: test.type, devicePAN: test.devicePAN, expirationDate: expiration)
        }
        test.cardholderName = cardholderName
        return test
    }

    private func mint(_ order: Order, card: SandboxCard? = nil, options: CardOptions, with sandbox: Sandbox) throws
        -> MintedToken
    {
        let request = MintRequest(
            card: try card ?? self.card(pan: order.pan, options: options), amount: order.amount,
            currencyCode: order.currency.code,
            applicationData: order.applicationData.map { .base64($0) },
            paymentDataType: emv ? .emv : .threeDSecure, signingTime: options.signingTime ?? Date())
        if merchantToken {
            let (token, issue) = try sandbox.mintWithMerchantToken(
                request, tokenNotificationURL: tokenNotificationURL, version: order.version)
            Output.standardError("merchant token \(issue.identifier)")
            return token
        }
        return try sandbox.mint(request, version: order.version)
    }
}
