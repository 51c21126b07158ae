import ApplePay
import Cryptography
import Foundation
import Foundations
import HTTPClient
import WalletOrders

/// A simulated device's Wallet for one order: registers with the orders web service named by `orderDetails`,
/// downloads and checks the package as Wallet does (served as `application/vnd.apple.finance.order`, signature to
/// the sandbox root, manifest hashes, `order.json` against Apple's schema), and downloads it again when told that it
/// changed, with `If-Modified-Since`.
public final class SandboxWallet: Sendable {
    public let details: PaymentOrderDetails
    public let deviceIdentifier: String
    public let pushToken: String
    let trust: TrustStore
    let client: HTTPClient
    /// Where the web service's `https` origin is answered, when not at itself (see ``init(details:roots:deviceIdentifier:pushToken:client:connectTo:)``).
    let connectTo: String?

    /// What a download gave.
    public enum Download: Sendable {
        /// A valid package: the order and the raw `.order` bytes.
        case order(WalletOrder, package: Data, lastModified: String?)
        /// `304`: nothing changed since the last download.
        case notModified
        /// The package failed a check (which one and why).
        case invalid(OrderPackage.Refusal)
        /// The server answered something else.
        case failed(status: Int, body: String)
    }

    /// - Parameters:
    ///   - roots: the trust anchors for package signatures (the sandbox's `root.pem`).
    ///   - connectTo: the address that answers for `webServiceURL`'s scheme, host and port, as a TLS proxy in front of
    ///     a server does (`http://127.0.0.1:8080` for `https://127.0.0.1:8080/wallet`); nil: `webServiceURL` itself.
    public init(
        details: PaymentOrderDetails, roots: [Certificate], deviceIdentifier: String = UUID().uuidString,
        pushToken: String = SecureRandom.bytes(32).map { String(format: "%02x", $0) }.joined(),
        client: HTTPClient = HTTPClient(configuration: .init(timeout: .seconds(20))), connectTo: String? = nil
    ) throws {
        self.connectTo = connectTo.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.details = details
        self.deviceIdentifier = deviceIdentifier
        self.pushToken = pushToken
        self.trust = try TrustStore(roots: roots)
        self.client = client
    }

    private var base: String {
        let url =
            details.webServiceURL.hasSuffix("/") ? String(details.webServiceURL.dropLast()) : details.webServiceURL
        guard let connectTo, let components = URLComponents(string: url) else { return url }
        return connectTo + components.percentEncodedPath
    }
    private var authorization: (name: String, value: String) {
        ("Authorization", "AppleOrder \(details.authenticationToken)")
    }

    /// `POST v1/devices/{device}/registrations/{type}/{order}`: returns the status (201 new, 200 existing).
    public func register() async throws -> Int {
        let body = try JSONSerialization.data(withJSONObject: ["pushToken": pushToken])
        let response = try await client.send(
            HTTPClientRequest(
                method: "POST",
                url: "\(base)/v1/devices/\(deviceIdentifier)/registrations/\(details.orderTypeIdentifier)/"
                    + details.orderIdentifier,
                headers: [authorization, ("Content-Type", "application/json")], body: body))
        return response.status
    }

    /// `GET v1/orders/{type}/{order}`, checked as Wallet checks it.
    public func download(ifModifiedSince: String? = nil, now: Date = Date()) async throws -> Download {
        var headers = [authorization]
        if let ifModifiedSince { headers.append(("If-Modified-Since", ifModifiedSince)) }
        let response = try await client.send(
            HTTPClientRequest(
                url: "\(base)/v1/orders/\(details.orderTypeIdentifier)/\(details.orderIdentifier)", headers: headers))
        if response.status == 304 { return .notModified }
        guard response.status == 200 else {
            return .failed(status: response.status, body: String(decoding: response.body.prefix(500), as: UTF8.self))
        }
        let mediaType = response.header("Content-Type")?.split(separator: ";").first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard mediaType == OrderPackage.mediaType else {
            return .invalid(
                OrderPackage.Refusal(
                    check: .mediaType,
                    message: "served as \(mediaType ?? "nothing"), not \(OrderPackage.mediaType)"))
        }
        switch OrderPackage.verify(response.body, roots: trust, at: now) {
        case .success(let verified):
            return .order(verified.order, package: response.body, lastModified: response.header("Last-Modified"))
        case .failure(let refusal):
            return .invalid(refusal)
        }
    }

    /// Waits (long poll, up to `seconds`) at the sandbox APNs for pushes to this device after `after`; returns
    /// their sequence numbers.
    /// - Parameter apns: the sandbox APNs' client (HTTP/2, trusting the sandbox root).
    public func waitForPushes(apns: HTTPClient, url: String, after: Int, seconds: Int = 10) async throws -> [Int] {
        struct Answer: Decodable {
            struct Push: Decodable { var sequence: Int }
            var pushes: [Push]
        }
        let response = try await apns.send(
            HTTPClientRequest(url: "\(url)/pushes?after=\(after)&deviceToken=\(pushToken)&wait=\(seconds)"))
        guard response.status == 200 else {
            throw HTTPClientError(.transferFailed, "the sandbox APNs answered \(response.status)")
        }
        return try JSONDecoder().decode(Answer.self, from: response.body).pushes.map(\.sequence)
    }

    /// Plays the device: registers, downloads and checks the order, then follows pushes from the sandbox APNs and
    /// downloads again (with `If-Modified-Since`) after each, reporting every state change to `report`. Stops after
    /// `maximumUpdates` pushes, or when `stop` returns true between long polls.
    public func run(
        apnsURL: String?, apns: HTTPClient?, maximumUpdates: Int = .max, report: (JSONValue) -> Void,
        stop: () -> Bool = { false }
    ) async throws {
        let status = try await register()
        report(
            Self.event(
                "registered", ["status": .number(Decimal(status)), "deviceIdentifier": .string(deviceIdentifier)]))
        guard status == 200 || status == 201 else { return }
        var lastModified: String?
        func fetch(_ reason: String) async throws {
            switch try await download(ifModifiedSince: lastModified) {
            case .order(let order, _, let modified):
                lastModified = modified
                var fields = Self.summary(order)
                fields["reason"] = .string(reason)
                report(Self.event("order", fields))
            case .notModified:
                report(Self.event("notModified", ["reason": .string(reason)]))
            case .invalid(let refusal):
                report(
                    Self.event(
                        "invalid", ["check": .string(refusal.check.rawValue), "message": .string(refusal.message)]))
            case .failed(let status, let body):
                report(Self.event("downloadFailed", ["status": .number(Decimal(status)), "body": .string(body)]))
            }
        }
        try await fetch("registered")
        guard let apnsURL, let apns else { return }
        var seen = 0
        var updates = 0
        while updates < maximumUpdates, !stop() {
            let pushes = try await waitForPushes(apns: apns, url: apnsURL, after: seen)
            guard let last = pushes.last else { continue }
            seen = last
            updates += 1
            report(Self.event("push", ["sequence": .number(Decimal(last))]))
            try await fetch("push")
        }
    }

    /// A state change as the `applepay sandbox wallet` command prints it (one JSON line each).
    public static func event(_ name: String, _ fields: [String: JSONValue]) -> JSONValue {
        var members = fields
        members["event"] = .string(name)
        return .object(members)
    }

    /// The summary of an order a person follows: status, fulfilment status, carrier, tracking, updatedAt.
    public static func summary(_ order: WalletOrder) -> [String: JSONValue] {
        var fields: [String: JSONValue] = [
            "orderIdentifier": .string(order.orderIdentifier), "status": .string(order.status),
            "updatedAt": .string(order.updatedAt), "paymentStatus": .string(order.payment.status),
        ]
        if let fulfillment = order.fulfillments.first {
            fields["fulfillmentStatus"] = .string(fulfillment.status)
            if let carrier = fulfillment.carrier { fields["carrier"] = .string(carrier) }
            if let tracking = fulfillment.trackingNumber { fields["trackingNumber"] = .string(tracking) }
        }
        return fields
    }
}
