import Foundation
import HTTPCore
import PaymentSheet

/// The merchant API called in process: each request goes straight to a `Responder` (the merchant server's
/// `MerchantAPI`), no socket. Two things a real network would do differently are simulated here:
/// - late answers: an event listed in `lateEvents` waits its seconds on the session's clock first (a
///   `VirtualClock` is advanced, so a 45 s answer costs no real time);
/// - merchant validation: `POST /v1/apple-pay/merchant-session` is answered with a sandbox merchant session, as
///   Apple's gateway would (the server itself can only ask Apple's real gateway).
public struct InProcessTransport: MerchantTransport {
    /// The route each Apple Pay JS event is posted to (see `HTTPMerchantDelegate`), by its last path component.
    static let routeSuffixes: [String: String] = [
        "validatemerchant": "/v1/apple-pay/merchant-session", "paymentmethodselected": "/payment-method",
        "shippingcontactselected": "/shipping-contact", "shippingmethodselected": "/shipping-method",
        "couponcodechanged": "/coupon", "paymentauthorized": "/payment",
    ]

    private let responder: any Responder
    private let clock: any SessionClock
    private let lateEvents: [String: Int]
    private let merchantIdentifier: String
    private let displayName: String

    /// - Parameters:
    ///   - responder: the merchant API.
    ///   - clock: the session's clock, on which late answers wait.
    ///   - lateEvents: seconds to wait before answering, by Apple Pay JS event name.
    ///   - merchantIdentifier: named in the sandbox merchant session.
    ///   - displayName: the merchant session's display name.
    public init(
        responder: any Responder, clock: any SessionClock, lateEvents: [String: Int] = [:],
        merchantIdentifier: String, displayName: String
    ) {
        self.responder = responder
        self.clock = clock
        self.lateEvents = lateEvents
        self.merchantIdentifier = merchantIdentifier
        self.displayName = displayName
    }

    public func send(method: String, path: String, headers: [String: String], body: Data?) async throws
        -> MerchantTransportResponse
    {
        if method == "POST" { try await wait(before: path) }
        if method == "POST" && path == "/v1/apple-pay/merchant-session" {
            return MerchantTransportResponse(status: 200, body: try merchantSession())
        }
        var fields: HTTPHeaders = ["Content-Type": "application/json", "Host": "localhost"]
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { fields[name] = value }
        let request = HTTPRequest(
            method: HTTPMethod(rawValue: method), path: path, headers: fields, body: body ?? Data())
        let response = await responder.respond(to: request)
        return MerchantTransportResponse(status: response.status, body: response.body)
    }

    /// Waits the late answer's seconds, if the route's event has one.
    private func wait(before path: String) async throws {
        guard
            let seconds = lateEvents.first(where: { event, _ in
                Self.routeSuffixes[event].map { path.hasSuffix($0) } ?? false
            })?.value, seconds > 0
        else { return }
        if let virtual = clock as? VirtualClock {
            await virtual.advance(by: .seconds(seconds))
        } else {
            try await clock.sleep(for: .seconds(seconds))
        }
        try Task.checkCancellation()
    }

    /// A merchant session of Apple's shape, valid for five minutes from the clock's now.
    private func merchantSession() throws -> Data {
        let now = Int64(clock.now.timeIntervalSince1970 * 1000)
        let identifier = "SSH" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let session: [String: Any] = [
            "epochTimestamp": now, "expiresAt": now + 300_000, "merchantSessionIdentifier": identifier,
            "merchantIdentifier": merchantIdentifier, "displayName": displayName,
            "nonce": String(UUID().uuidString.prefix(8)).lowercased(),
        ]
        return try JSONSerialization.data(withJSONObject: session, options: [.sortedKeys])
    }
}
