import Cryptography
import Foundation
import Foundations
import HTTPClient
import Logging
import MerchantCore
import Synchronization

/// How the server reaches APNs with token-based authentication.
public struct APNsSettings: Sendable {
    /// `https://api.push.apple.com` (production), `https://api.sandbox.push.apple.com`, or `applepay sandbox apns`.
    public var baseURL: String
    /// The `.p8` key's identifier (the JWT's `kid`).
    public var keyID: String
    /// The team identifier (the JWT's `iss`).
    public var teamID: String
    /// The `.p8` file: a PKCS#8 EC P-256 key, mode 0600.
    public var keyPath: String
    /// PEM roots to trust instead of the system's (the sandbox APNs' authority).
    public var trustedRootsPath: String?
    /// Attempts per device (first try included), with backoff doubling from `initialBackoff`.
    public var attempts: Int = 4
    public var initialBackoff: Duration = .milliseconds(200)

    public init(baseURL: String, keyID: String, teamID: String, keyPath: String, trustedRootsPath: String? = nil) {
        self.baseURL = baseURL
        self.keyID = keyID
        self.teamID = teamID
        self.keyPath = keyPath
        self.trustedRootsPath = trustedRootsPath
    }
}

/// Pushes "this order changed" to devices through APNs: `POST /3/device/<push token>` over HTTP/2 with
/// `authorization: bearer <ES256 JWT>`, `apns-topic: <order type identifier>` and the empty payload `{}`.
/// Transport errors, 429 and 5xx are retried with exponential backoff; other answers are final and logged.
/// APNs has a share of its own (``share``): a push that finds it full waits for its next attempt, so a slow APNs
/// holds at most that many calls and never anything another party needs.
package final class APNsPusher: OrderUpdatePushing {
    let settings: APNsSettings
    /// Calls to APNs in flight and waiting.
    package let share: Bulkhead
    /// 64 in flight, 256 waiting for at most 5 s.
    package static let defaultShare = Bulkhead.Limits(maximumInFlight: 64, maximumQueued: 256, maximumWait: .seconds(5))
    let topic: String
    let key: PrivateKey
    let client: HTTPClient
    let logger: Logger
    /// The current JWT and when it was made: APNs wants a new one at most every 60 minutes and not more often
    /// than every 20.
    private let token = Mutex<(jwt: String, issuedAt: Date)?>(nil)

    /// - Parameters:
    ///   - key: the APNs authentication key (EC P-256, from its `.p8` file).
    ///   - trustedRootsPEM: roots trusted for the APNs server besides the system's (a sandbox APNs).
    package init(
        settings: APNsSettings, key: PrivateKey, trustedRootsPEM roots: Data?, topic: String, logger: Logger,
        share: Bulkhead.Limits = APNsPusher.defaultShare
    ) {
        self.share = Bulkhead(name: "apns", limits: share)
        self.key = key
        var configuration = HTTPClient.Configuration(timeout: .seconds(15), trustedRootsPEM: roots)
        configuration.http2 = true
        self.client = HTTPClient(configuration: configuration)
        self.settings = settings
        self.topic = topic
        self.logger = logger
    }

    /// The JWT for now, made anew after 30 minutes.
    func currentToken(now: Date = Date()) throws -> String {
        if let current = token.withLock({ $0 }), now.timeIntervalSince(current.issuedAt) < 30 * 60 {
            return current.jwt
        }
        let jwt = try JSONWebToken.es256(
            header: ["alg": "ES256", "kid": settings.keyID],
            claims: ["iss": .string(settings.teamID), "iat": .number(Int(now.timeIntervalSince1970))], key: key)
        token.withLock { $0 = (jwt, now) }
        return jwt
    }

    package func orderDidChange(_ registrations: [DeviceRegistration]) async {
        await withTaskGroup(of: Void.self) { group in
            for registration in registrations {
                group.addTask { await self.push(to: registration) }
            }
        }
    }

    private func push(to registration: DeviceRegistration) async {
        var delay = settings.initialBackoff
        for attempt in 1...max(1, settings.attempts) {
            var outcome = ""
            var retry = false
            do {
                let request = HTTPClientRequest(
                    method: "POST", url: "\(settings.baseURL)/3/device/\(registration.pushToken)",
                    headers: [
                        ("authorization", "bearer \(try currentToken())"), ("apns-topic", topic),
                        ("apns-priority", "5"), ("content-type", "application/json"),
                    ], body: Data("{}".utf8))
                guard let response = try await share.withPermit({ try await client.send(request) }) else {
                    throw APNsShareFull()
                }
                outcome = "\(response.status)"
                if response.status == 200 {
                    logger.info(
                        "apns push delivered",
                        metadata: [
                            "orderId": "\(registration.orderID)", "attempt": .stringConvertible(attempt),
                            "http": .stringConvertible(response.httpVersion),
                        ])
                    return
                }
                retry = response.status == 429 || response.status >= 500
                outcome += " " + String(decoding: response.body.prefix(200), as: UTF8.self)
            } catch {
                outcome = "\(error)"
                retry = true
            }
            logger.log(
                level: retry && attempt < settings.attempts ? .warning : .error, "apns push failed",
                metadata: [
                    "orderId": "\(registration.orderID)", "attempt": .stringConvertible(attempt),
                    "outcome": "\(outcome)",
                ])
            guard retry, attempt < settings.attempts else { return }
            try? await Task.sleep(for: delay)
            delay *= 2
        }
    }
}

/// APNs' share was full: the push waits for its next attempt.
private struct APNsShareFull: Error, CustomStringConvertible {
    var description: String { "APNs share full (calls in flight and waiting at their limits)" }
}

/// Compact JWS (RFC 7515) with ES256, as APNs' provider tokens are.
public enum JSONWebToken {
    public enum Claim: Sendable, Encodable, Equatable {
        case string(String)
        case number(Int)
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let text): try container.encode(text)
            case .number(let value): try container.encode(value)
            }
        }
    }

    /// `base64url(header).base64url(claims).base64url(r || s)`.
    public static func es256(header: [String: String], claims: [String: Claim], key: PrivateKey) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let signingInput = base64URL(try encoder.encode(header)) + "." + base64URL(try encoder.encode(claims))
        return signingInput + "." + base64URL(try key.rawECDSASignature(Data(signingInput.utf8)))
    }

    public static func base64URL(_ data: Data) -> String { Base64URL.encode(data) }
}
