import Foundation
import Foundations
import HTTPClient
import HTTPCore
import MerchantCore

/// Obtains an Apple Pay merchant session (Apple Pay on the web): POSTs `merchantIdentifier`, `displayName`,
/// `initiative` and `initiativeContext` to Apple's payment session endpoint over TLS with the Merchant Identity
/// certificate as client certificate, and passes Apple's answer back untouched.
///
/// A `validationURL` from the page must be HTTPS on one of Apple's published gateway hosts
/// (`allowedHosts`); anything else is refused before any request goes out, so the server is never an open proxy.
public struct MerchantValidator: Sendable {
    /// Apple's gateway hosts (docs: Apple Pay on the web, "Setting up your server"; see shared/APPLE-PAY.md §3).
    public static let allowedHosts: Set<String> = {
        var hosts: Set<String> = [
            "apple-pay-gateway.apple.com", "cn-apple-pay-gateway.apple.com",
            "apple-pay-gateway-cert.apple.com", "cn-apple-pay-gateway-cert.apple.com",
        ]
        for pod in 1...5 {
            hosts.insert("apple-pay-gateway-nc-pod\(pod).apple.com")
            hosts.insert("apple-pay-gateway-pr-pod\(pod).apple.com")
        }
        for pod in 1...3 {
            hosts.insert("cn-apple-pay-gateway-sh-pod\(pod).apple.com")
            hosts.insert("cn-apple-pay-gateway-tj-pod\(pod).apple.com")
        }
        return hosts
    }()

    /// The path of the payment session endpoint under the gateway base URL.
    public static let sessionPath = "/paymentservices/paymentSession"

    public let merchantIdentifier: String
    public let displayName: String
    /// The `initiativeContext`: the domain the page is served from; `nil` uses the request's `Host`.
    public let domain: String?
    /// Where sessions are requested when the page sends no `validationURL`.
    public let gatewayBaseURL: String
    /// `nil` when no Merchant Identity certificate is configured: validation then answers 503.
    let client: HTTPClient?
    /// In sandbox mode only: the sandbox gateway's base URL (`applepay sandbox gateway`), accepted beside Apple's
    /// hosts as a validation URL with the same scheme, host and port.
    public let sandboxGatewayURL: String?
    /// The share of the server that calls to Apple's gateway may hold (docs/LIMITS.md): past it a session request
    /// is answered `503 serviceBusy` with `Retry-After` at once, and nothing else waits for the gateway.
    public let share: Bulkhead

    /// The default share: 64 sessions in flight, 64 waiting at most 2 s.
    public static let defaultShare = Bulkhead.Limits(maximumInFlight: 64, maximumQueued: 64, maximumWait: .seconds(2))

    /// - Parameters:
    ///   - identity: the Merchant Identity certificate and key (PEM, in memory).
    ///   - trustedRootsPEM: roots to trust instead of the system's (tests: the local gateway's authority).
    ///   - proxy: the proxy to reach Apple through; `nil` goes direct whatever the environment says.
    public init(
        merchantIdentifier: String, displayName: String, domain: String?, gatewayBaseURL: String,
        identity: ClientIdentity?, trustedRootsPEM: Data? = nil, timeout: Duration = .seconds(15),
        sandboxGatewayURL: String? = nil, proxy: String? = nil, share: Bulkhead.Limits = MerchantValidator.defaultShare
    ) {
        self.sandboxGatewayURL = sandboxGatewayURL
        self.share = Bulkhead(name: "merchantValidation", limits: share)
        self.merchantIdentifier = merchantIdentifier
        self.displayName = String(displayName.prefix(64))
        self.domain = domain
        self.gatewayBaseURL = gatewayBaseURL
        self.client = identity.map {
            HTTPClient(
                configuration: .init(
                    timeout: timeout, clientIdentity: $0, trustedRootsPEM: trustedRootsPEM, proxy: proxy))
        }
    }

    /// Whether a page-supplied validation URL may be contacted: HTTPS, default port, no credentials, Apple host.
    public static func isAllowed(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), components.scheme?.lowercased() == "https",
            let host = components.host?.lowercased(), components.user == nil, components.password == nil,
            components.port == nil || components.port == 443
        else { return false }
        return allowedHosts.contains(host)
    }

    /// Whether this validator may contact `url`: one of Apple's gateway hosts, or (sandbox mode) the sandbox gateway.
    public func allows(_ url: String) -> Bool {
        if Self.isAllowed(url) { return true }
        guard let sandboxGatewayURL, let gateway = URLComponents(string: sandboxGatewayURL),
            let components = URLComponents(string: url), components.scheme?.lowercased() == "https",
            gateway.scheme?.lowercased() == "https", components.user == nil, components.password == nil,
            components.host?.lowercased() == gateway.host?.lowercased(), components.port == gateway.port
        else { return false }
        return true
    }

    /// The merchant session JSON from Apple (or the configured gateway).
    /// - Parameters:
    ///   - validationURL: from the page's `onvalidatemerchant` event, if it sent one.
    ///   - requestHost: the `Host` of the request, used as `initiativeContext` when no domain is configured.
    /// - Throws: `HTTPError` `validationURLNotAllowed` (400), `merchantValidationUnavailable` (503),
    ///   `serviceBusy` (503 with `Retry-After`: the gateway's share is full), `merchantValidationFailed` (502) or
    ///   `merchantValidationTimeout` (504).
    public func session(validationURL: String?, requestHost: String?) async throws(HTTPError) -> Data {
        let target: String
        if let validationURL {
            guard allows(validationURL) else {
                throw HTTPError(
                    status: 400, code: "validationURLNotAllowed",
                    message: "The validation URL must be HTTPS on one of Apple's Apple Pay gateway hosts.")
            }
            target = validationURL
        } else {
            target =
                gatewayBaseURL.hasSuffix("/")
                ? String(gatewayBaseURL.dropLast()) + Self.sessionPath : gatewayBaseURL + Self.sessionPath
        }
        guard let client else {
            throw HTTPError(
                status: 503, code: "merchantValidationUnavailable",
                message: "No Merchant Identity certificate is configured, so no merchant session can be requested.")
        }
        let context =
            domain ?? requestHost.map { host in
                host.split(separator: ":").first.map(String.init) ?? host
            } ?? "localhost"
        struct SessionRequest: Encodable {
            var merchantIdentifier: String
            var displayName: String
            var initiative: String
            var initiativeContext: String
        }
        let request: HTTPClientRequest
        do {
            request = try HTTPClientRequest.postJSON(
                target,
                encoding: SessionRequest(
                    merchantIdentifier: merchantIdentifier, displayName: displayName, initiative: "web",
                    initiativeContext: context))
        } catch {
            throw HTTPError.internalError()
        }
        guard await share.acquire() else {
            var busy = HTTPError(
                status: 503, code: "serviceBusy",
                message: "Too many merchant sessions are being requested from Apple at once; try again shortly.")
            busy.headers["Retry-After"] = "1"
            throw busy
        }
        defer { share.release() }
        let response: HTTPClientResponse
        do {
            response = try await client.send(request)
        } catch HTTPClientError.Code.timeout {
            throw HTTPError(
                status: 504, code: "merchantValidationTimeout", message: "Apple's gateway did not answer in time.")
        } catch let error as HTTPClientError {
            throw HTTPError(
                status: 502, code: "merchantValidationFailed",
                message: "Could not reach Apple's gateway (\(error.code)).")
        } catch {
            throw HTTPError(status: 502, code: "merchantValidationFailed", message: "Could not reach Apple's gateway.")
        }
        guard response.status == 200,
            (try? JSONSerialization.jsonObject(with: response.body)) is [String: Any]
        else {
            throw HTTPError(
                status: 502, code: "merchantValidationFailed",
                message: "Apple's gateway refused the merchant session request (HTTP \(response.status)).")
        }
        return response.body
    }
}
