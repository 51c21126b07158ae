import Cryptography
import Foundation
import Foundations
import HTTPCore
import HTTPServer
import Sandbox
import Synchronization

/// Apple's Apple Pay gateway as far as merchant validation goes, played by the sandbox: HTTPS with a certificate
/// from the sandbox root, the sandbox-issued Merchant Identity certificate demanded as TLS client certificate,
/// `POST /paymentservices/paymentSession` checked as Apple checks it, answered with an opaque merchant session.
///
/// The routes are a ``Router`` (``routes(_:)``), so more of Apple's gateway (merchant tokens) can be added beside
/// the session endpoint. `GET /sandbox/v1/activity` tells tests what the gateway saw.
public final class SandboxGateway: Sendable {
    /// What the gateway has seen, for tests and the operator.
    public struct Activity: Sendable, Codable, Equatable {
        /// Merchant sessions issued.
        public var sessionsIssued = 0
        /// Requests refused, by error code (`clientCertificateRequired`, `unknownClientCertificate`, body checks).
        public var refused: [String: Int] = [:]
        /// The SHA-256 of the last accepted client certificate (hex), the sandbox's Merchant Identity certificate.
        public var lastClientCertificateSHA256: String?
        /// The `initiativeContext` of the last session issued.
        public var lastInitiativeContext: String?
        /// Merchant-token events answered and tokens unlinked.
        public var merchantTokenEventsServed = 0
        public var merchantTokensUnlinked = 0
        /// `updateMerchantMetadata` calls that changed a token's notification URL.
        public var merchantMetadataUpdates = 0

        public init() {}
    }

    /// The base URL, e.g. `https://localhost:8443` (the certificate names `localhost` and `127.0.0.1`).
    public let url: String
    public let port: UInt16
    private let server: HTTPServer
    private let state: GatewayState

    /// What the gateway has seen so far.
    public var activity: Activity { state.activity.withLock { $0 } }

    /// Starts the gateway for a sandbox.
    /// - Parameters:
    ///   - sandbox: the authority whose root signs the gateway's certificate and whose Merchant Identity
    ///     certificate is the only client certificate accepted.
    ///   - host: the address to listen on (an IP literal or `localhost`).
    ///   - port: 0 picks a free one.
    ///   - log: receives one JSON line per request.
    /// - Throws: `HTTPServer.StartError`, or `CryptographyError` when the certificate cannot be issued.
    public static func start(
        sandbox: Sandbox, host: String = "127.0.0.1", port: UInt16 = 0,
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws -> SandboxGateway {
        try SandboxGateway(sandbox: sandbox, host: host, port: port, log: log)
    }

    private init(sandbox: Sandbox, host: String, port: UInt16, log: @escaping @Sendable (String) -> Void) throws {
        let credential = try GatewayCertificate.issue(by: sandbox.authority)
        let state = GatewayState(sandbox: sandbox, log: log)
        var router = Router()
        Self.routes(&router, state: state)
        let server = try HTTPServer.start(
            configuration: .init(
                host: host, port: port, threads: 1, maximumBodySize: 16 * 1024, responderThreads: 2,
                tls: .init(
                    certificatePEM: credential.certificate.pemRepresentation,
                    privateKeyPEM: credential.privateKey.pemRepresentation,
                    clientCertificateAuthoritiesPEM: sandbox.authority.merchantCA.certificate.pemRepresentation
                        + sandbox.authority.root.certificate.pemRepresentation)),
            responder: router)
        let shownHost = host == "127.0.0.1" || host == "localhost" ? "localhost" : host
        self.url = "https://\(shownHost):\(server.port)"
        self.port = server.port
        self.server = server
        self.state = state
    }

    /// Stops accepting connections and finishes the requests in flight.
    public func shutdown() async { await server.shutdown() }

    /// Adds the gateway's routes: Apple's payment session endpoint (both of its paths) and the activity counters.
    static func routes(_ router: inout Router, state: GatewayState) {
        for path in ["/paymentservices/paymentSession", "/paymentservices/startSession"] {
            router.add(.post, path) { request, _ in state.paymentSession(request) }
        }
        router.add(.get, "/paymentservices/v1/merchantId/{merchantId}/merchantToken/event/{eventId}") {
            request, context in
            state.merchantTokenEvent(
                request, merchantID: try context.parameter("merchantId"), eventID: try context.parameter("eventId"))
        }
        router.add(.post, "/paymentservices/v1/merchantId/{merchantId}/merchantToken/unlink") { request, context in
            state.unlinkMerchantToken(request, merchantID: try context.parameter("merchantId"))
        }
        router.add(.post, "/paymentservices/v1/merchantId/{merchantId}/merchantToken/updateMerchantMetadata") {
            request, context in
            state.updateMerchantMetadata(request, merchantID: try context.parameter("merchantId"))
        }
        router.add(.get, "/sandbox/v1/activity") { _, _ in
            let activity = state.activity.withLock { $0 }
            return try HTTPResponse.json(activity)
        }
    }
}

/// The gateway's state and its payment session handler.
final class GatewayState: Sendable {
    let sandbox: Sandbox
    let activity = Mutex(SandboxGateway.Activity())
    let log: @Sendable (String) -> Void

    init(sandbox: Sandbox, log: @escaping @Sendable (String) -> Void) {
        self.sandbox = sandbox
        self.log = log
    }

    /// Apple's refusal: an HTTP status and `{"statusMessage", "statusCode"}` (plus our stable `code`).
    struct Refusal: Error {
        var status: Int
        var code: String
        var message: String
    }

    func paymentSession(_ request: HTTPRequest) -> HTTPResponse {
        do {
            let certificate = try checkClientCertificate(request.clientCertificate)
            let body = try checkBody(request.body)
            let session = merchantSession(for: body)
            let fingerprint = hex(Digest.sha256(certificate.der))
            activity.withLock {
                $0.sessionsIssued += 1
                $0.lastClientCertificateSHA256 = fingerprint
                $0.lastInitiativeContext = body.initiativeContext
            }
            record(["event": "paymentSession", "status": "200", "clientCertificateSHA256": fingerprint])
            return (try? HTTPResponse.json(session)) ?? HTTPError.internalError().response
        } catch let refusal as Refusal {
            activity.withLock { $0.refused[refusal.code, default: 0] += 1 }
            record(["event": "paymentSession", "status": String(refusal.status), "code": refusal.code])
            struct Answer: Encodable {
                var statusMessage: String
                var statusCode: String
                var code: String
            }
            return
                (try? HTTPResponse.json(
                    Answer(statusMessage: refusal.message, statusCode: String(refusal.status), code: refusal.code),
                    status: refusal.status)) ?? HTTPError.internalError().response
        } catch {
            return HTTPError.internalError().response
        }
    }

    /// Only the sandbox's own Merchant Identity certificate, chaining to its merchant CA, is accepted.
    func checkClientCertificate(_ certificate: HTTPRequest.ClientCertificate?) throws -> HTTPRequest.ClientCertificate {
        guard let certificate else {
            throw Refusal(
                status: 401, code: "clientCertificateRequired",
                message: "A Merchant Identity certificate is required as TLS client certificate.")
        }
        guard certificate.isTrusted, certificate.der == sandbox.merchantIdentity.certificate.derRepresentation else {
            throw Refusal(
                status: 403, code: "unknownClientCertificate",
                message: "The client certificate is not this sandbox's Merchant Identity certificate.")
        }
        return certificate
    }

    struct SessionRequest: Decodable {
        var merchantIdentifier: String?
        var displayName: String?
        var initiative: String?
        var initiativeContext: String?
    }

    /// The checks Apple makes on the request body.
    func checkBody(_ data: Data) throws -> SessionRequest {
        guard let body = try? JSONDecoder().decode(SessionRequest.self, from: data) else {
            throw Refusal(status: 400, code: "invalidJSON", message: "The body is not a JSON object.")
        }
        guard body.merchantIdentifier == sandbox.merchantIdentifier else {
            throw Refusal(
                status: 400, code: "merchantIdentifierMismatch",
                message: "merchantIdentifier must be \(sandbox.merchantIdentifier), the identifier of the certificate.")
        }
        guard let name = body.displayName, !name.isEmpty, name.count <= 64 else {
            throw Refusal(status: 400, code: "invalidDisplayName", message: "displayName must be 1 to 64 characters.")
        }
        // Apple's three initiatives: the web (a domain name as context), Messages for Business and an app's merchant
        // session request (`in_app`, PassKit's `onMerchantSessionRequested`), whose contexts are not domain names.
        guard let initiative = body.initiative, ["web", "messaging", "in_app"].contains(initiative) else {
            throw Refusal(
                status: 400, code: "invalidInitiative",
                message: "initiative must be \"web\", \"messaging\" or \"in_app\".")
        }
        guard let context = body.initiativeContext, !context.isEmpty, context.count <= 255,
            initiative != "web" || Self.isDomainName(context)
        else {
            throw Refusal(
                status: 400, code: "invalidInitiativeContext",
                message: "initiativeContext must be the domain name the page is served from (no scheme, port or path).")
        }
        return body
    }

    /// A host name: labels of letters, digits and hyphens, or an IPv4 literal (sandboxes serve on 127.0.0.1).
    static func isDomainName(_ text: String) -> Bool {
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        guard !text.isEmpty, text.count <= 253 else { return false }
        return labels.allSatisfy { label in
            !label.isEmpty && label.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.unicodeScalars.allSatisfy {
                    $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-")
                }
        }
    }

    /// An opaque merchant session in Apple's shape; the page hands it to `completeMerchantValidation` untouched.
    func merchantSession(for body: SessionRequest) -> [String: JSONScalar] {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let random = SecureRandom.bytes(32)
        let signature = SecureRandom.bytes(64)
        return [
            "epochTimestamp": .number(now),
            "expiresAt": .number(now + 3_600_000),
            "merchantSessionIdentifier": .string("SSH" + hex(random.prefix(16)).uppercased()),
            "nonce": .string(hex(random.suffix(4))),
            "merchantIdentifier": .string(hex(Digest.sha256(Data(sandbox.merchantIdentifier.utf8))).uppercased()),
            "domainName": .string(body.initiativeContext ?? ""),
            "displayName": .string(body.displayName ?? ""),
            "signature": .string(signature.base64EncodedString()),
            "operationalAnalyticsIdentifier": .string("\(body.displayName ?? ""):\(hex(random.prefix(8)))"),
            "retries": .number(0),
            "pspId": .string(hex(Digest.sha256(Data(sandbox.merchantIdentifier.utf8))).uppercased()),
            "sandbox": .bool(true),
        ]
    }

    private func record(_ fields: [String: String]) {
        var line = fields
        line["time"] = ISO8601DateFormatter().string(from: Date())
        if let data = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]) {
            log(String(decoding: data, as: UTF8.self))
        }
    }
}

/// A JSON value of the merchant session.
enum JSONScalar: Encodable, Sendable {
    case string(String)
    case number(Int64)
    case bool(Bool)

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        }
    }
}

func hex(_ data: Data) -> String { lowercaseHex(data) }
