import ApplePay
import ArgumentParser
import Cryptography
import Foundation
import PaymentToken
import Sandbox
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `applepay bench`: measurements.
struct BenchCommand: CommandGroup {
    static let configuration = CommandConfiguration(
        commandName: "bench", abstract: "Measure token verification and decryption, and HTTPClient under load.",
        subcommands: [BenchDecryptCommand.self, BenchHTTPCommand.self])
}

/// `applepay bench decrypt [--seconds S] [--threads N]`
struct BenchDecryptCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt",
        abstract: "Mint tokens in memory, then verify and decrypt them in a loop; print tokens per second.",
        usage: "applepay bench decrypt [--seconds S] [--threads N] [--kind EC_v1|RSA_v1]",
        discussion: """
            A sandbox authority and a Payment Processing certificate are made in memory; 64 distinct tokens are \
            minted and each is opened from its JSON with the full checks (CMS signature, chain, signing time, \
            ECDH, AES-GCM, payload). Prints one JSON line: tokensPerSecond (wall clock), tokensPerCPUSecond \
            (process CPU time, the measure `openssl speed` uses), threads, seconds, tokens. \
            scripts/bench-decrypt.sh compares it with `openssl speed ecdhp256 ecdsap256` (EC_v1) or \
            `openssl speed rsa2048` (RSA_v1).
            """)

    @Option(
        name: .customLong("seconds"), parsing: .unconditional,
        help: ArgumentHelp("How long to run (default 3).", valueName: "S"))
    var secondsOption: Double?

    @Option(
        name: .customLong("threads"), parsing: .unconditional,
        help: ArgumentHelp("Threads sharing one decryptor (default 1).", valueName: "N"))
    var threadsOption: Int?

    @Option(
        name: .customLong("kind"),
        help: ArgumentHelp(
            "EC_v1 (default: one ECDH and one ECDSA verification a token) or RSA_v1 (one RSA-2048 private "
                + "operation and one RSA-2048 verification).", valueName: "VERSION"))
    var kindText: String?

    var seconds: Double { secondsOption ?? 3 }
    var threads: Int { threadsOption ?? 1 }
    var kind: TokenVersion { kindText.flatMap { TokenVersion(rawValue: $0) } ?? .ecV1 }

    func validate() throws {
        if let secondsOption, !(secondsOption > 0 && secondsOption <= 3600) {
            throw ValidationError("invalid value '\(secondsOption)' for --seconds")
        }
        if let threadsOption, !(1...256).contains(threadsOption) {
            throw ValidationError("invalid value '\(threadsOption)' for --threads")
        }
        if let kindText, TokenVersion(rawValue: kindText) == nil {
            throw ValidationError("invalid value '\(kindText)' for --kind")
        }
    }

    struct Report: Encodable {
        var tokensPerSecond: Int
        var tokensPerCPUSecond: Int
        var threads: Int
        var seconds: Double
        var tokens: Int
        var version: String
    }

    /// User CPU time of the process, as `openssl speed` measures by default (`times()` user time).
    static func processCPUTime() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
    }

    func perform() async throws -> ExitCode {
        let now = Date()
        let merchantIdentifier = "merchant.com.example.bench"
        let authority = try SandboxAuthority.generate(now: now)
        let keyAndRequest = try MerchantOnboarding.makeKeyAndRequest(
            .paymentProcessing, merchantIdentifier: merchantIdentifier, rsa: kind == .rsaV1)
        let certificate = try authority.issueMerchantCertificate(
            .paymentProcessing, for: keyAndRequest.request, merchant: .init(identifier: merchantIdentifier), now: now)
        let minter = try TokenMinter(authority: authority)
        let recipient = try PaymentProcessingRecipient(certificate: certificate)
        let card = try SandboxCard(network: .visa, devicePAN: "4761120010000492", expirationDate: "291231")
        let tokens = try (0..<64).map { index in
            try minter.mint(
                MintRequest(card: card, amount: Decimal(100 + index) / 100, currencyCode: "USD", signingTime: now),
                for: recipient
            ).jsonData()
        }
        let identity = try MerchantIdentity(certificate: certificate, privateKey: keyAndRequest.privateKey)
        let decryptor = try PaymentTokenDecryptor(
            merchants: [identity], roots: [authority.root.certificate], maximumAge: 300, now: { now })
        // Warm up once (and prove the tokens open).
        _ = try decryptor.decrypt(jsonData: tokens[0])

        let threadCount = threads
        let duration = seconds
        let total = Mutex(0)
        let failures = Mutex<String?>(nil)
        let cpuStart = Self.processCPUTime()
        let wallStart = Date()
        // One thread per worker, all running until the same deadline.
        let deadline = wallStart.addingTimeInterval(duration)
        let finished = DispatchGroup()
        for worker in 0..<threadCount {
            finished.enter()
            let thread = Thread {
                defer { finished.leave() }
                var count = 0
                var index = worker
                repeat {
                    for _ in 0..<16 {
                        do {
                            _ = try decryptor.decrypt(jsonData: tokens[index % tokens.count])
                        } catch {
                            failures.withLock { $0 = "\(error)" }
                            return
                        }
                        index += 1
                        count += 1
                    }
                } while Date() < deadline
                total.withLock { $0 += count }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        finished.wait()
        let wall = Date().timeIntervalSince(wallStart)
        let cpu = Self.processCPUTime() - cpuStart
        if let failure = failures.withLock({ $0 }) {
            Output.standardError(#"{"error":{"code":"benchFailed","message":"\#(failure)"}}"#)
            return .failure
        }
        let count = total.withLock { $0 }
        let report = Report(
            tokensPerSecond: Int(Double(count) / wall), tokensPerCPUSecond: Int(Double(count) / max(cpu, 1e-9)),
            threads: threadCount, seconds: (wall * 100).rounded() / 100, tokens: count, version: kind.rawValue)
        print(try Output.json(report))
        return .success
    }
}
