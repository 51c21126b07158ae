import Cryptography
import Foundation
import Foundations
import HTTP2Server

/// A test APNs: HTTP/2 over TLS (ALPN h2) with a server certificate from the sandbox authority. It accepts
/// `POST /3/device/<device token>` only with a valid provider token (`authorization: bearer <JWT>`: ES256 signed by
/// the configured key, `kid` = key id, `iss` = team id, `iat` within the last hour) and `apns-topic` = the order
/// type identifier, records each push, and lists them at `GET /pushes?after=N&deviceToken=T&wait=S` (a long poll
/// of up to S seconds, for simulated devices). Errors answer like APNs: `{"reason": "InvalidProviderToken"}` etc.
public final class SandboxAPNs: Sendable {
    /// A push as received.
    public struct Push: Sendable, Codable, Hashable {
        public var sequence: Int
        public var deviceToken: String
        public var topic: String
        public var payload: String
        public var apnsID: String
        public var receivedAt: Date
    }

    /// What a provider token must be.
    struct Expectations: Sendable {
        var keyID: String
        var teamID: String
        var key: PublicKey
        var topic: String
    }

    /// `https://127.0.0.1:<port>`.
    public let url: String
    let server: HTTP2Server
    let log: PushLog

    /// Starts the service on 127.0.0.1 (`port` 0: any free port).
    /// - Parameters:
    ///   - authority: issues the TLS certificate (chained to the sandbox root: clients trust `root.pem`).
    ///   - folder: where the TLS certificate chain and key are written (key 0600).
    ///   - keyID: the `kid` a provider token must carry.
    ///   - teamID: the `iss` a provider token must carry.
    ///   - authKey: the key a provider token must be signed with (ES256).
    ///   - topic: the `apns-topic` every push must name (the order type identifier).
    ///   - port: 0 picks a free one.
    /// - Throws: `CryptographyError`, `SandboxError.Code.writeFailed`, `HTTP2ServerError`.
    public static func start(
        authority: SandboxAuthority, folder: URL, keyID: String, teamID: String, key authKey: PublicKey,
        topic: String, port: UInt16 = 0
    ) throws -> SandboxAPNs {
        let expectations = Expectations(keyID: keyID, teamID: teamID, key: authKey, topic: topic)
        let key = try PrivateKey.generate(.p256)
        var builder = CertificateBuilder(
            subject: DistinguishedName(commonName: "localhost", organization: SandboxAuthority.organization),
            publicKey: key.publicKey, notBefore: Date() - SandboxAuthority.day,
            notAfter: Date() + 30 * SandboxAuthority.day)
        builder.basicConstraints = .endEntity
        builder.keyUsage = [.digitalSignature]
        builder.extendedKeyUsage = [.serverAuth]
        // subjectAltName: DNS localhost, IP 127.0.0.1.
        let names: [UInt8] = [0x82, 0x09] + Array("localhost".utf8) + [0x87, 0x04, 127, 0, 0, 1]
        builder.extensions = [CertificateExtension(oid: "2.5.29.17", value: Data([0x30, UInt8(names.count)] + names))]
        let certificate = try builder.signed(
            by: authority.intermediate.certificate, key: authority.intermediate.privateKey)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let chainPath = folder.appendingPathComponent("apns-tls.pem")
        let keyPath = folder.appendingPathComponent("apns-tls.key.pem")
        try AtomicFile.write(
            certificate.pemRepresentation + authority.intermediate.certificate.pemRepresentation, to: chainPath,
            mode: AtomicFile.publicMode)
        try AtomicFile.write(key.pemRepresentation, to: keyPath, mode: AtomicFile.privateMode)
        let log = PushLog()
        let server = try HTTP2Server.start(
            port: port, certificateChainPath: chainPath.path, privateKeyPath: keyPath.path
        ) { request in
            Self.handle(request, expectations: expectations, log: log)
        }
        return SandboxAPNs(url: "https://127.0.0.1:\(server.port)", server: server, log: log)
    }

    private init(url: String, server: HTTP2Server, log: PushLog) {
        self.url = url
        self.server = server
        self.log = log
    }

    /// Every push received so far.
    public var pushes: [Push] { log.all }

    /// Stops accepting connections.
    public func shutdown() { server.shutdown() }

    /// Makes an APNs authentication key as Apple's portal delivers it: `AuthKey_<KEYID>.p8` (PKCS#8 PEM, 0600).
    /// - Returns: the key id and the file.
    public static func makeAuthKey(in folder: URL) throws -> (keyID: String, path: String, key: PrivateKey) {
        let key = try PrivateKey.generate(.p256)
        let keyID = String(
            SecureRandom.bytes(8).map { String(format: "%02X", $0) }.joined().prefix(10))
        let path = folder.appendingPathComponent("AuthKey_\(keyID).p8")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try AtomicFile.write(key.pemRepresentation, to: path, mode: AtomicFile.privateMode)
        return (keyID, path.path, key)
    }

    static func handle(_ request: HTTP2Request, expectations: Expectations, log: PushLog) -> HTTP2Response {
        func reason(_ status: Int, _ text: String) -> HTTP2Response {
            HTTP2Response(
                status: status, headers: ["content-type": "application/json"],
                body: Data(#"{"reason":"\#(text)"}"#.utf8))
        }
        let parts = request.path.split(separator: "?", maxSplits: 1)
        let path = String(parts.first ?? "")
        var query: [String: String] = [:]
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let item = pair.split(separator: "=", maxSplits: 1).map(String.init)
                query[item[0]] = item.count == 2 ? item[1].removingPercentEncoding ?? item[1] : ""
            }
        }
        if request.method == "GET", path == "/pushes" {
            let after = Int(query["after"] ?? "") ?? 0
            let wait = min(max(Double(query["wait"] ?? "") ?? 0, 0), 30)
            let pushes = log.waitForPushes(after: after, deviceToken: query["deviceToken"], seconds: wait)
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            encoder.outputFormatting = [.sortedKeys]
            let body = (try? encoder.encode(["pushes": pushes])) ?? Data()
            return HTTP2Response(status: 200, headers: ["content-type": "application/json"], body: body)
        }
        guard path.hasPrefix("/3/device/") else { return reason(404, "BadPath") }
        guard request.method == "POST" else { return reason(405, "MethodNotAllowed") }
        let deviceToken = String(path.dropFirst("/3/device/".count))
        guard !deviceToken.isEmpty, deviceToken.count <= 200, deviceToken.allSatisfy(\.isHexDigit) else {
            return reason(400, "BadDeviceToken")
        }
        guard let authorization = request.headers["authorization"], authorization.lowercased().hasPrefix("bearer ")
        else { return reason(403, "MissingProviderToken") }
        switch ProviderToken.check(String(authorization.dropFirst("bearer ".count)), expectations: expectations) {
        case .valid: break
        case .expired: return reason(403, "ExpiredProviderToken")
        case .invalid: return reason(403, "InvalidProviderToken")
        }
        guard let topic = request.headers["apns-topic"] else { return reason(400, "MissingTopic") }
        guard topic == expectations.topic else { return reason(400, "BadTopic") }
        let apnsID = UUID().uuidString
        log.append(
            deviceToken: deviceToken, topic: topic, payload: String(decoding: request.body, as: UTF8.self),
            apnsID: apnsID)
        return HTTP2Response(status: 200, headers: ["apns-id": apnsID])
    }
}

/// Checks an APNs provider token (ES256 JWT).
enum ProviderToken {
    enum Verdict { case valid, expired, invalid }

    static func check(_ jwt: String, expectations: SandboxAPNs.Expectations, now: Date = Date()) -> Verdict {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = base64URL(parts[0]), let claimsData = base64URL(parts[1]),
            let signature = base64URL(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any],
            header["alg"] as? String == "ES256", header["kid"] as? String == expectations.keyID,
            claims["iss"] as? String == expectations.teamID, let issuedAt = claims["iat"] as? NSNumber,
            expectations.key.isValidRawECDSASignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { return .invalid }
        let age = now.timeIntervalSince1970 - issuedAt.doubleValue
        if age > 3600 { return .expired }
        if age < -60 { return .invalid }
        return .valid
    }

    static func base64URL(_ text: Substring) -> Data? { Base64URL.decode(text) }
}

/// The pushes received, with a condition for long polls. `@unchecked Sendable`: all state is behind `condition`.
final class PushLog: @unchecked Sendable {
    private let condition = NSCondition()
    private var pushes: [SandboxAPNs.Push] = []

    var all: [SandboxAPNs.Push] {
        condition.lock()
        defer { condition.unlock() }
        return pushes
    }

    func append(deviceToken: String, topic: String, payload: String, apnsID: String) {
        condition.lock()
        pushes.append(
            SandboxAPNs.Push(
                sequence: pushes.count + 1, deviceToken: deviceToken, topic: topic, payload: payload, apnsID: apnsID,
                receivedAt: Date()))
        condition.broadcast()
        condition.unlock()
    }

    /// Pushes after `after` (for `deviceToken`, when given), waiting up to `seconds` for the first.
    func waitForPushes(after: Int, deviceToken: String?, seconds: Double) -> [SandboxAPNs.Push] {
        let deadline = Date() + seconds
        condition.lock()
        defer { condition.unlock() }
        while true {
            let found = pushes.filter { $0.sequence > after && (deviceToken == nil || $0.deviceToken == deviceToken) }
            if !found.isEmpty || Date() >= deadline { return found }
            _ = condition.wait(until: deadline)
        }
    }
}
