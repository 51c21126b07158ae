import ApplePay
import Cryptography
import Foundation
import Sandbox

/// `applepay sandbox`: a test Apple that issues certificates and mints signed, encrypted tokens.
struct SandboxCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "sandbox",
            abstract: "Play Apple's part: a test certificate authority and real signed, encrypted payment tokens.",
            subcommands: [SandboxInitCommand.self, SandboxMintCommand.self, SandboxGatewayCommand.self])
    }
}

/// Exit statuses shared by the sandbox and merchant commands.
enum SandboxExit {
    /// A named input file does not exist or cannot be read (`EX_NOINPUT`).
    static let noInput: Int32 = 66
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
                payment-processing-ec.pem, payment-processing-rsa.pem, merchant-identity.pem (each with a .key.pem
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

/// `applepay sandbox mint DIR --amount 10.75 --currency USD [...]`.
struct SandboxMintCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "mint",
            abstract: "Mint a signed, encrypted PKPaymentToken for the sandbox's merchant.",
            usage: ["DIR --amount AMOUNT --currency CODE [--kind EC_v1|RSA_v1] [--emv] [--out FILE] [options]"],
            options: [
                ("--amount AMOUNT", "The total in the currency, e.g. 10.75 (required)."),
                ("--currency CODE", "ISO 4217 alphabetic code, e.g. USD (required)."),
                ("--kind VERSION", "EC_v1 (default) or RSA_v1."),
                ("--network NAME", "Apple Pay JS network name (default visa)."),
                ("--pan DIGITS", "Device PAN (default: a test card for the network)."),
                ("--type TYPE", "Card type (default debit; credit for amex)."),
                ("--expiration YYMMDD", "applicationExpirationDate (default: end of the month in three years)."),
                ("--cardholder-name NAME", "Adds cardholderName to the payload."),
                ("--application-data BASE64", "The request's applicationData, base64 as Apple Pay JS sends it."),
                ("--signing-time ISO8601", "The CMS signing time (default now), e.g. 2026-01-02T03:04:05Z."),
                ("--emv", "An EMV payload instead of 3DSecure."),
                ("--out FILE", "Write the token to FILE (mode 0600) instead of standard output."),
                ("--pretty", "Indent the JSON."),
            ],
            discussion: """
                The token opens with the merchant's payment-processing-ec.key.pem (EC_v1) or
                payment-processing-rsa.key.pem (RSA_v1) and verifies against the sandbox's root.pem.
                """)
    }

    var folder: String
    var amount: Decimal
    var currency: Currency
    var version: TokenVersion
    var network: PaymentNetwork
    var pan: String?
    var cardType: CardType?
    var expiration: String?
    var cardholderName: String?
    var applicationData: String?
    var signingTime: Date
    var emv: Bool
    var out: String?
    var pretty: Bool

    init(arguments: inout Arguments) throws {
        emv = arguments.flag("--emv")
        pretty = arguments.flag("--pretty")
        guard let amountText = try arguments.option("--amount") else { throw UsageError("--amount is required") }
        guard let currencyText = try arguments.option("--currency") else { throw UsageError("--currency is required") }
        guard let currency = Currency(code: currencyText) else {
            throw UsageError(
                "unknown currency '\(currencyText.prefix(12))': use an ISO 4217 code such as USD, EUR or JPY")
        }
        self.currency = currency
        do {
            amount = try currency.parseAmount(amountText)
        } catch {
            throw UsageError("invalid --amount: \(error.message)")
        }
        guard amount >= 0 else { throw UsageError("invalid --amount: the total must not be negative") }
        version = try arguments.option("--kind", as: { TokenVersion(rawValue: $0) }) ?? .ecV1
        network = PaymentNetwork(rawValue: try arguments.option("--network") ?? "visa")
        pan = try arguments.option("--pan")
        cardType = try arguments.option("--type", as: { CardType(rawValue: $0) })
        expiration = try arguments.option("--expiration")
        cardholderName = try arguments.option("--cardholder-name")
        applicationData = try arguments.option("--application-data")
        if let applicationData, Data(base64Encoded: applicationData) == nil {
            throw UsageError("--application-data must be base64, as Apple Pay JS sends it")
        }
        signingTime = try arguments.option("--signing-time", as: { ISO8601DateFormatter().date(from: $0) }) ?? Date()
        out = try arguments.option("--out")
        folder = try arguments.positional("DIR")
    }

    func run() async throws -> Int32 {
        let sandbox = try Sandbox.load(from: URL(fileURLWithPath: folder))
        let card: SandboxCard
        if let pan {
            card = try SandboxCard(
                network: network, type: cardType ?? (network == .amex ? .credit : .debit), devicePAN: pan,
                expirationDate: expiration ?? SandboxCard.testCard(network: .visa)?.expirationDate ?? "301231",
                cardholderName: cardholderName)
        } else {
            guard var test = SandboxCard.testCard(network: network) else {
                throw UsageError("no test card for network '\(network.rawValue)': give one with --pan")
            }
            if let cardType { test.type = cardType }
            if let expiration {
                test = try SandboxCard(
                    network: test.network, type: test.type, devicePAN: test.devicePAN, expirationDate: expiration)
            }
            test.cardholderName = cardholderName
            card = test
        }
        let request = MintRequest(
            card: card, amount: amount, currencyCode: currency.code,
            applicationData: applicationData.map { .base64($0) },
            paymentDataType: emv ? .emv : .threeDSecure, signingTime: signingTime)
        let token = try sandbox.mint(request, version: version)
        let json = try token.jsonData(pretty: pretty)
        if let out {
            try AtomicFile.write(json + Data("\n".utf8), to: URL(fileURLWithPath: out), mode: AtomicFile.privateMode)
            Output.standardError("wrote \(version.rawValue) token \(token.transactionIdentifier.prefix(16))… to \(out)")
        } else {
            print(String(decoding: json, as: UTF8.self))
        }
        return ExitCode.success
    }
}
