// Coverage-guided fuzz targets for what a client or an operator hands the merchant side (issue 14), one binary with
// three harnesses chosen by FUZZ_TARGET (libFuzzer) or the first argument (replay):
// - `request`: bytes → ApplePay `PaymentRequest` (JSON) → `validate()`: a decoding error or problems, never a crash.
// - `store`: bytes → `StoreConfiguration.decode` (a `StoreConfigurationError` or a configuration); a configuration
//   that decodes must price a checkout of its first product without trapping.
// - `http`: bytes → an HTTP request (line 1 the method, line 2 the path with its query, header lines, a blank line,
//   the body) → `MerchantAPI.respond(to:)` in process (in-memory SQLite store, sandbox processor, a token opener
//   that refuses every token, no Merchant Identity): every answer is a status 100-499, or a documented 503
//   (`storeUnavailable`, `merchantValidationUnavailable`), and a JSON answer parses. The request comes from a
//   trusted proxy, so its `X-Forwarded-For` (even input lengths) or `Forwarded` (odd) header names the client, which
//   must be the proxy, an address or an obfuscated identifier.
// Built two ways, like FuzzPaymentToken: `scripts/fuzz-merchant.sh` with `-sanitize=fuzzer,address -DFUZZING`, and
// a plain build that replays files: `FuzzMerchant TARGET FILE...` (exit 1 on a finding).
import ApplePay
import Foundation
import Foundations
import FuzzSupport
import HTTPCore
import Logging
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantSandbox
import MerchantServer
import MerchantStore
import PaymentToken
import Synchronization

enum FuzzMerchantHarness {
    enum Target: String, CaseIterable {
        case request, store, http
    }

    /// Runs one input through `target`; a description of the finding, or nil.
    static func run(_ target: Target, _ data: Data) -> String? {
        switch target {
        case .request: return paymentRequest(data)
        case .store: return storeConfiguration(data)
        case .http: return http(data)
        }
    }

    static func paymentRequest(_ data: Data) -> String? {
        guard let request = try? JSONDecoder().decode(PaymentRequest.self, from: data) else { return nil }
        _ = request.validate()
        // What decodes must encode again and decode to the same request.
        guard let encoded = try? JSONEncoder().encode(request) else { return "a decoded request does not encode" }
        guard let again = try? JSONDecoder().decode(PaymentRequest.self, from: encoded) else {
            return "an encoded request does not decode"
        }
        return again == request ? nil : "a request changed through encode and decode"
    }

    static func storeConfiguration(_ data: Data) -> String? {
        guard let configuration = try? StoreConfiguration.decode(data) else { return nil }
        guard let product = configuration.products.first else { return nil }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let pricing = CheckoutPricing(configuration: configuration, clock: { now })
        if let checkout = try? Checkout.create(
            items: [CheckoutItem(sku: product.sku, quantity: 1)], configuration: configuration, now: now)
        {
            _ = try? pricing.paymentRequest(for: checkout)
        }
        return nil
    }

    /// A token opener that refuses everything (the token path has its own fuzz target).
    struct RefusingOpener: PaymentTokenOpening {
        func open(_ token: Data, expecting expectations: PaymentTokenExpectations) throws(PaymentTokenError)
            -> OpenedPaymentToken
        {
            throw PaymentTokenError(.signatureInvalid, "the fuzz harness opens no token")
        }
    }

    /// The API, rebuilt every 5,000 inputs so the in-memory store stays small.
    private static let api = Mutex<(MerchantAPI, Int)?>(nil)

    static func makeAPI() -> MerchantAPI {
        guard let store = try? SQLiteOrderStore(path: ":memory:") else { fatalError("no in-memory store") }
        var configuration = StoreConfiguration.demo
        configuration.processor.timeoutSeconds = 1
        let services = MerchantServices(
            configuration: configuration, store: store, processor: SandboxProcessor(hangDuration: .milliseconds(10)),
            tokenOpener: RefusingOpener(),
            validator: MerchantValidator(
                merchantIdentifier: "merchant.com.example.fuzz", displayName: "Fuzz", domain: nil,
                gatewayBaseURL: "https://apple-pay-gateway.apple.com", identity: nil),
            logger: Logger(label: "applepay.silent") { _ in SwiftLogNoOpLogHandler() })
        return MerchantAPI(
            services: services, rateLimits: RateLimits(checkouts: RateLimit(perMinute: 6000, burst: 6000)))
    }

    static let documented503: Set<String> = ["storeUnavailable", "merchantValidationUnavailable"]

    /// Splits the bytes into a request: method line, path line, headers, blank line, body.
    static func request(from data: Data) -> HTTPRequest {
        let bytes = [UInt8](data)
        var lines: [String] = []
        var index = 0
        var body = Data()
        while index <= bytes.count {
            guard let end = bytes[index...].firstIndex(of: 0x0A) else {
                lines.append(String(decoding: bytes[index...], as: UTF8.self))
                index = bytes.count + 1
                break
            }
            let line = String(decoding: bytes[index..<end], as: UTF8.self)
            index = end + 1
            if lines.count >= 2 && line.isEmpty {
                body = Data(bytes[min(index, bytes.count)...])
                break
            }
            lines.append(line)
        }
        let method = lines.first.map { $0.isEmpty ? "GET" : $0 } ?? "GET"
        let target = lines.count > 1 ? lines[1] : "/"
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var query: [String: String] = [:]
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let item = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                query[String(item[0])] = item.count == 2 ? String(item[1]) : ""
            }
        }
        var headers = HTTPHeaders()
        for line in lines.dropFirst(2) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.add(
                name: String(line[..<colon]),
                value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var request = HTTPRequest(
            method: HTTPMethod(rawValue: method), path: String(parts.first ?? "/"), query: query, headers: headers,
            body: body)
        request.peerAddress = proxy
        request.clientAddress = TrustedProxies(
            [IPNetwork("192.0.2.0/24")!, IPNetwork("2001:db8::/32")!],
            header: data.count % 2 == 0 ? .xForwardedFor : .forwarded
        ).client(peer: proxy, headers: headers)
        if body.count > 64 * 1024 {
            request.body = Data()
            request.bodyLimitExceeded = 64 * 1024
        }
        return request
    }

    /// The peer of every `http` input: a trusted proxy.
    static let proxy = "192.0.2.1"

    static func http(_ data: Data) -> String? {
        let api = api.withLock { state -> MerchantAPI in
            if let (api, count) = state, count < 5_000 {
                state = (api, count + 1)
                return api
            }
            let api = makeAPI()
            state = (api, 1)
            return api
        }
        let request = request(from: data)
        if let client = request.clientAddress, client != proxy, IPAddress(client) == nil, !client.hasPrefix("_") {
            return
                "the forwarding header named a client that is neither an address nor obfuscated: \(client.prefix(80))"
        }
        let answer = Mutex<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let response = await api.respond(to: request)
            answer.withLock { $0 = response }
            done.signal()
        }
        guard done.wait(timeout: .now() + 10) == .success, let response = answer.withLock({ $0 }) else {
            return "no answer within 10 s to \(request.method) \(request.path)"
        }
        let code =
            (try? JSONSerialization.jsonObject(with: response.body) as? [String: Any])
            .flatMap { $0["error"] as? [String: Any] }?["code"] as? String
        if response.status == 503 {
            if let code, documented503.contains(code) { return nil }
            return "503 \(code ?? "-") to \(request.method) \(request.path)"
        }
        guard (100..<500).contains(response.status) else {
            return "status \(response.status) (\(code ?? "-")) to \(request.method) \(request.path)"
        }
        if response.headers["Content-Type"]?.hasPrefix("application/json") == true, !response.body.isEmpty,
            (try? JSONSerialization.jsonObject(with: response.body, options: [.fragmentsAllowed])) == nil
        {
            return "a JSON answer that does not parse to \(request.method) \(request.path)"
        }
        return nil
    }
}

#if FUZZING
    let fuzzTarget: FuzzMerchantHarness.Target = {
        let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? ""
        guard let target = FuzzMerchantHarness.Target(rawValue: name) else {
            fatalError("set FUZZ_TARGET to request, store or http")
        }
        return target
    }()

    /// libFuzzer's entry point: a finding stops the run with the input saved as `crash-…`.
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzMerchant(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        guard let data else { return 0 }
        if let finding = FuzzMerchantHarness.run(fuzzTarget, Data(bytes: data, count: size)) {
            fatalError("finding: \(finding)")
        }
        return 0
    }

    /// SwiftPM's `<module>_main` (see FuzzPaymentToken): hands the process to libFuzzer's driver.
    @_cdecl("FuzzMerchant_main")
    public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
        _ = fuzzTarget
        return runLibFuzzer(argc, argv, fuzzMerchant)
    }
#else
    /// The corpus replayer: `FuzzMerchant request|store|http FILE|DIR...`; exit 1 if any input is a finding.
    @main
    struct CorpusReplayer {
        static func main() {
            let arguments = CommandLine.arguments.dropFirst()
            guard let name = arguments.first, let target = FuzzMerchantHarness.Target(rawValue: name) else {
                FuzzCorpus.usage("FuzzMerchant request|store|http FILE|DIR...")
            }
            FuzzCorpus.replay(FuzzCorpus.files(arguments.dropFirst())) { _, data in
                FuzzMerchantHarness.run(target, data)
            }
        }
    }
#endif
