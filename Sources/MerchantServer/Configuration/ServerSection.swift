import Foundation
import Foundations
import HTTPCore
import HTTPServer
import MerchantCore
import MerchantHTTP
import MerchantStore

/// The `"server"` section: where to listen, the store, limits, keys and whom to trust.
struct ServerSection: Decodable {
    var host: String?
    var port: Int?
    var publicURL: String?
    var store: String?
    var storePoolSize: Int?
    var maximumBodySize: Int?
    var connectionTimeout: Int?
    var requestTimeout: Int?
    var connectionLimit: Int?
    var perClientConnectionLimit: Int?
    var rateLimits: RateLimitsSection?
    var checkoutLifetimeSeconds: Int?
    var pruneIntervalSeconds: Int?
    var proxy: String?
    var threads: Int?
    var paymentProcessing: [CertificateKeyPaths]?
    var merchantIdentity: CertificateKeyPaths?
    var trustedRoot: String?
    var gatewayTrustedRoots: String?
    /// The old `server.processor` URL: an alias of `processor: {"kind": "http", "url": …}`.
    var processor: String?
    var adminToken: String?
    var reconcileIntervalSeconds: Int?
    var reconcileAfterSeconds: Int?
    var applePayJSSDK: Bool?
    /// Addresses and networks of the load balancers whose forwarding header is believed.
    var trustedProxies: [String]?
    /// `X-Forwarded-For` (default) or `Forwarded`: the header they write.
    var forwardedHeader: String?
    /// Each outside party's share (docs/LIMITS.md), by party: `processor`, `merchantValidation`, `tokenNotifications`.
    var shares: [String: ShareSection]?
    /// How long Apple's merchant-token notification waits for its event to be pulled and applied.
    var tokenNotificationTimeLimitSeconds: Int?
    /// Failed admin attempts allowed per client (`{"perMinute", "burst"}`), or `"off"`.
    var adminFailureLimit: RateLimitsSection.Limit?
    /// Fields of the wrong type.
    var problems: [ConfigurationProblem] = []
    /// Where each field is in the file.
    var at = FieldPaths<CodingKeys>(section: .server)

    enum CodingKeys: String, CodingKey {
        case host, port, publicURL, store, storePoolSize, maximumBodySize, connectionTimeout, requestTimeout
        case connectionLimit, perClientConnectionLimit, rateLimits, checkoutLifetimeSeconds, pruneIntervalSeconds,
            proxy, threads
        case paymentProcessing, merchantIdentity, trustedRoot, gatewayTrustedRoots, processor, adminToken
        case reconcileIntervalSeconds, reconcileAfterSeconds, applePayJSSDK
        case trustedProxies, forwardedHeader, shares, tokenNotificationTimeLimitSeconds, adminFailureLimit
    }

    init(from decoder: any Decoder) throws {
        var reader = try FieldReader(decoder, keys: CodingKeys.self)
        host = reader.read(.host)
        port = reader.read(.port)
        publicURL = reader.read(.publicURL)
        store = reader.read(.store)
        storePoolSize = reader.read(.storePoolSize)
        maximumBodySize = reader.read(.maximumBodySize)
        connectionTimeout = reader.read(.connectionTimeout)
        requestTimeout = reader.read(.requestTimeout)
        connectionLimit = reader.read(.connectionLimit)
        perClientConnectionLimit = reader.read(.perClientConnectionLimit)
        rateLimits = reader.read(.rateLimits)
        checkoutLifetimeSeconds = reader.read(.checkoutLifetimeSeconds)
        pruneIntervalSeconds = reader.read(.pruneIntervalSeconds)
        proxy = reader.read(.proxy)
        threads = reader.read(.threads)
        paymentProcessing = reader.read(.paymentProcessing)
        merchantIdentity = reader.read(.merchantIdentity)
        trustedRoot = reader.read(.trustedRoot)
        gatewayTrustedRoots = reader.read(.gatewayTrustedRoots)
        processor = reader.read(.processor)
        adminToken = reader.read(.adminToken)
        reconcileIntervalSeconds = reader.read(.reconcileIntervalSeconds)
        reconcileAfterSeconds = reader.read(.reconcileAfterSeconds)
        applePayJSSDK = reader.read(.applePayJSSDK)
        trustedProxies = reader.read(.trustedProxies)
        forwardedHeader = reader.read(.forwardedHeader)
        shares = reader.read(.shares)
        tokenNotificationTimeLimitSeconds = reader.read(.tokenNotificationTimeLimitSeconds)
        adminFailureLimit = reader.read(.adminFailureLimit)
        problems = reader.problems
        at = reader.at
    }
}

/// `"rateLimits"`: either limit may be given alone; `"off"` instead of the object turns both off.
struct RateLimitsSection: Decodable {
    var checkouts: RateLimit?
    var updates: RateLimit?
    var off = false

    /// One limit, `{"perMinute", "burst"}`, or `"off"` (`limit` nil).
    struct Limit: Decodable {
        var limit: RateLimit?

        init(from decoder: any Decoder) throws {
            limit = try isOff(decoder) ? nil : RateLimit(from: decoder)
        }
    }

    /// Whether the value is the string `"off"`; any other string is an error, anything else is for the caller.
    static func isOff(_ decoder: any Decoder) throws -> Bool {
        guard let text = try? decoder.singleValueContainer().decode(String.self) else { return false }
        guard text == "off" else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "must be \"off\" or an object"))
        }
        return true
    }

    init(from decoder: any Decoder) throws {
        if try Self.isOff(decoder) {
            off = true
            return
        }
        struct Fields: Decodable {
            var checkouts: RateLimit?
            var updates: RateLimit?
        }
        let fields = try Fields(from: decoder)
        checkouts = fields.checkouts
        updates = fields.updates
    }
}

/// One outside party's share in `"shares"`: calls in flight at once, callers waiting, and how long one waits
/// (milliseconds); a field left out keeps its default.
struct ShareSection: Decodable {
    var inFlight: Int?
    var queued: Int?
    var waitMilliseconds: Int?
}

extension MerchantServerConfiguration {
    /// The `server` section: where to listen, the store, limits, keys, whom to trust, each field checked at its
    /// path.
    mutating func applyServer(_ server: ServerSection, folder: URL, to problems: inout ConfigurationProblems) {
        let at = server.at
        if let host = server.host {
            if host.isEmpty {
                problems.report(at(.host), .malformed, "\(at(.host)) is empty")
            } else {
                self.host = host
            }
        }
        problems.check(server.port, at(.port), 0...65_535, "must be 0 to 65535 (0 picks a free port)") {
            port = UInt16($0)
        }
        if let text = server.store {
            do {
                var location = try OrderStoreLocation(parsing: text)
                if case .sqlite(let path) = location, !path.hasPrefix(":") {
                    location = .sqlite(path: Self.resolve(path, in: folder))
                }
                storeLocation = location
            } catch {
                problems.report(at(.store), .invalidStore, "\(at(.store)): \(error.message)")
            }
        }
        problems.check(server.storePoolSize, at(.storePoolSize), 1...100, "must be 1 to 100") { storePoolSize = $0 }
        problems.check(server.maximumBodySize, at(.maximumBodySize), 1...(1 << 30), "must be 1 to 2^30 bytes") {
            maximumBodySize = $0
        }
        problems.check(
            server.connectionTimeout, at(.connectionTimeout), 0...86_400, "must be 0 to 86400 seconds (0: none)"
        ) {
            connectionTimeout = $0
        }
        problems.check(server.requestTimeout, at(.requestTimeout), 1...86_400, "must be > 0") { requestTimeout = $0 }
        problems.check(server.connectionLimit, at(.connectionLimit), 1...1_000_000, "must be 1 to 1000000") {
            connectionLimit = $0
        }
        problems.check(
            server.perClientConnectionLimit, at(.perClientConnectionLimit), 0...Int.max, "must be >= 0 (0: no limit)"
        ) {
            perClientConnectionLimit = $0
        }
        if let limits = server.rateLimits {
            if limits.off {
                rateLimits = nil
            } else {
                var chosen = RateLimits()
                if let checkouts = limits.checkouts { chosen.checkouts = checkouts }
                if let updates = limits.updates { chosen.updates = updates }
                for (name, limit) in [("checkouts", chosen.checkouts), ("updates", chosen.updates)]
                where limit.perMinute < 1 || limit.burst < 1 {
                    problems.report(
                        at(.rateLimits, ".\(name)"), .outOfRange,
                        "\(at(.rateLimits, ".\(name)")) needs perMinute >= 1 and burst >= 1")
                }
                rateLimits = chosen
            }
        }
        problems.check(
            server.checkoutLifetimeSeconds, at(.checkoutLifetimeSeconds), 60...Int.max, "must be at least 60"
        ) {
            checkoutLifetime = .seconds($0)
        }
        problems.check(server.pruneIntervalSeconds, at(.pruneIntervalSeconds), 1...Int.max, "must be > 0") {
            pruneInterval = .seconds($0)
        }
        if let proxy = server.proxy {
            if proxy.isEmpty {
                problems.report(at(.proxy), .invalidURL, "\(at(.proxy)) is empty (leave it out for none)")
            }
            self.proxy = proxy
        }
        problems.check(server.threads, at(.threads), 1...1024, "must be 1 to 1024") { threads = $0 }
        var keyPaths: [(String, CertificateKeyPaths)] = []
        for (index, paths) in (server.paymentProcessing ?? []).enumerated() {
            keyPaths.append((at(.paymentProcessing, "[\(index)]"), paths))
        }
        if let identity = server.merchantIdentity { keyPaths.append((at(.merchantIdentity), identity)) }
        for (path, paths) in keyPaths {
            if paths.certificate.isEmpty {
                problems.report("\(path).certificate", .malformed, "\(path).certificate is empty")
            }
            if paths.key.isEmpty { problems.report("\(path).key", .malformed, "\(path).key is empty") }
        }
        let resolvePaths = { (paths: CertificateKeyPaths) in
            CertificateKeyPaths(
                certificate: Self.resolve(paths.certificate, in: folder), key: Self.resolve(paths.key, in: folder))
        }
        if let paymentProcessing = server.paymentProcessing {
            self.paymentProcessing = paymentProcessing.map(resolvePaths)
        }
        if let identity = server.merchantIdentity { merchantIdentity = resolvePaths(identity) }
        for (key, value) in [
            (ServerSection.CodingKeys.trustedRoot, server.trustedRoot),
            (.gatewayTrustedRoots, server.gatewayTrustedRoots),
        ]
        where value?.isEmpty == true {
            problems.report(at(key), .malformed, "\(at(key)) is empty")
        }
        if let root = server.trustedRoot { trustedRootPath = Self.resolve(root, in: folder) }
        if let roots = server.gatewayTrustedRoots { gatewayTrustedRootsPath = Self.resolve(roots, in: folder) }
        if let token = server.adminToken {
            if token.isEmpty {
                problems.report(
                    at(.adminToken), .malformed,
                    "\(at(.adminToken)) is empty (leave it out to turn the admin API off)")
            } else if let problem = Self.adminTokenProblem(token) {
                problems.report(at(.adminToken), .tooShort, "\(at(.adminToken)): \(problem)")
            } else {
                adminToken = token
            }
        }
        var networks: [IPNetwork] = []
        for (index, text) in (server.trustedProxies ?? []).enumerated() {
            if let network = IPNetwork(text) {
                networks.append(network)
            } else {
                problems.report(
                    at(.trustedProxies, "[\(index)]"), .invalidAddress,
                    "\(at(.trustedProxies, "[\(index)]")) must be an IPv4 or IPv6 address or network such as 10.0.0.0/8 "
                        + "or 2001:db8::/32, with no bit set past the prefix (got '\(text.prefix(80))')")
            }
        }
        if server.trustedProxies != nil { trustedProxies.networks = networks }
        if let name = server.forwardedHeader {
            if let header = ForwardingHeader.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) {
                trustedProxies.header = header
            } else {
                problems.report(
                    at(.forwardedHeader), .invalidChoice,
                    "\(at(.forwardedHeader)) must be X-Forwarded-For or Forwarded (got '\(name.prefix(80))')")
            }
        }
        problems.check(server.reconcileIntervalSeconds, at(.reconcileIntervalSeconds), 1...Int.max, "must be > 0") {
            reconcileInterval = .seconds($0)
        }
        problems.check(
            server.reconcileAfterSeconds, at(.reconcileAfterSeconds), 31...Int.max,
            "must be more than 30 (the longest processor time limit)"
        ) { reconcileAfter = .seconds($0) }
        if let sdk = server.applePayJSSDK { loadsApplePayJSSDK = sdk }
        let parties: [String: WritableKeyPath<Self, Bulkhead.Limits>] = [
            "processor": \.processorShare, "merchantValidation": \.merchantValidationShare,
            "tokenNotifications": \.tokenNotificationShare,
        ]
        for (party, share) in (server.shares ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let keyPath = parties[party] else {
                problems.report(
                    at(.shares, ".\(party)"), .invalidChoice,
                    "\(at(.shares)) has processor, merchantValidation and tokenNotifications (got '\(party.prefix(80))')"
                )
                continue
            }
            var limits = self[keyPath: keyPath]
            problems.check(share.inFlight, at(.shares, ".\(party).inFlight"), 1...1_000_000, "must be 1 to 1000000") {
                limits.maximumInFlight = $0
            }
            problems.check(share.queued, at(.shares, ".\(party).queued"), 0...1_000_000, "must be 0 to 1000000") {
                limits.maximumQueued = $0
            }
            problems.check(
                share.waitMilliseconds, at(.shares, ".\(party).waitMilliseconds"), 0...600_000, "must be 0 to 600000"
            ) {
                limits.maximumWait = .milliseconds($0)
            }
            self[keyPath: keyPath] = limits
        }
        problems.check(
            server.tokenNotificationTimeLimitSeconds, at(.tokenNotificationTimeLimitSeconds), 1...60,
            "must be 1 to 60 (Apple waits for the answer)"
        ) { tokenNotificationTimeLimit = .seconds($0) }
        if let failures = server.adminFailureLimit {
            if let limit = failures.limit, limit.perMinute < 1 || limit.burst < 1 {
                problems.report(
                    at(.adminFailureLimit), .outOfRange,
                    "\(at(.adminFailureLimit)) needs perMinute >= 1 and burst >= 1, or \"off\"")
            } else {
                adminFailureLimit = failures.limit
            }
        }

    }
}
