import ApplePay
import Foundation
import Foundations
import HTTPClient
import MerchantCore

/// How a connector reaches its provider: the base URL, the credentials' headers, the provider's idempotency
/// header, and the call's deadline. Shared by the Stripe, Adyen and Checkout.com connectors.
///
/// Every charge, refund and void carries the idempotency header, so a request sent again (a retry after a 429,
/// a 5xx or a lost answer) can never act twice: the provider answers the first outcome. Retries happen only for
/// requests that carry a key, or read nothing but state (GET), with backoff, inside the call's deadline.
///
/// The credentials' header values never appear in an error message, a log line or a `description`.
public struct ProviderConnection: Sendable, CustomStringConvertible {
    /// The provider's base URL without a trailing `/`.
    public let baseURL: String
    /// The provider's name for messages (`stripe`, `adyen`, `checkout`).
    public let provider: String
    /// The idempotency header's name (`Idempotency-Key`, `Cko-Idempotency-Key`).
    public let idempotencyHeader: String
    /// The deadline of one call, retries included.
    public let timeout: Duration
    /// How many times a request that may be repeated is sent again after a 429, a 5xx or no answer.
    public let retries: Int
    /// The first pause between attempts; doubled each time (a `Retry-After` of up to 2 s is honoured).
    public let backoff: Duration
    private let credentials: [(name: String, value: String)]
    /// Header fields sent with every request that are not secret (Stripe's `Stripe-Version`).
    private let fixedHeaders: [(name: String, value: String)]
    private let client: HTTPClient

    /// - Parameters:
    ///   - credentials: header fields that authenticate every request (secret: never printed).
    ///   - headers: other header fields sent with every request (not secret: the API version a provider pins).
    public init(
        provider: String, baseURL: URL, credentials: [(name: String, value: String)],
        headers: [(name: String, value: String)] = [], idempotencyHeader: String,
        timeout: Duration, retries: Int = 2, backoff: Duration = .milliseconds(200),
        clientIdentity: ClientIdentity? = nil, trustedRootsPEM: Data? = nil, proxy: String? = nil
    ) {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.provider = provider
        self.credentials = credentials
        self.fixedHeaders = headers
        self.idempotencyHeader = idempotencyHeader
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.client = HTTPClient.processorClient(
            timeout: timeout, clientIdentity: clientIdentity, trustedRootsPEM: trustedRootsPEM, proxy: proxy)
    }

    public var description: String { "ProviderConnection(\(provider), \(baseURL))" }

    /// A JSON request body (keys sorted, so a request sent again is the same bytes).
    public static func json(_ body: [String: Any]) throws(ProcessorError) -> Data {
        do {
            return try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes])
        } catch {
            throw ProcessorError(.invalidRequest, "the request could not be encoded")
        }
    }

    /// A request body and its content type.
    public enum Body: Sendable {
        case none
        case form(FormBody)
        case json(Data)
    }

    /// What a 403 means for one request.
    public enum Forbidden: Sendable {
        /// The credentials were refused (`notAuthorized`).
        case credentials
        /// The provider refused this action on this object (Checkout.com's "Void not allowed", "Refund not
        /// allowed"): the answer is the caller's to read.
        case refusal
    }

    /// Sends one request, again after a 429, a 5xx or no answer when it may be repeated (it has a key, or is a GET),
    /// and answers the first answer that is neither.
    /// - Parameters:
    ///   - forbidden: whether a 403 is refused credentials (the default) or the action refused.
    /// - Returns: the final answer, of any status but 401, 429 and 5xx (and 403 unless `forbidden` is `.refusal`).
    /// - Throws: `notAuthorized` on 401 and 403; an unknown-outcome code (`serverError`, `timeout`, `unreachable`)
    ///   when no attempt got a usable answer.
    public func send(
        _ method: String, _ path: String, body: Body = .none, idempotencyKey: String? = nil,
        forbidden: Forbidden = .credentials, what: String
    ) async throws(ProcessorError) -> ProviderAnswer {
        var headers: [(name: String, value: String)] = credentials + fixedHeaders + [("Accept", "application/json")]
        var data: Data?
        switch body {
        case .none: break
        case .form(let form):
            headers.append(("Content-Type", "application/x-www-form-urlencoded"))
            data = Data(form.encoded.utf8)
        case .json(let json):
            headers.append(("Content-Type", "application/json"))
            data = json
        }
        if let idempotencyKey { headers.append((idempotencyHeader, idempotencyKey)) }
        let request = HTTPClientRequest(method: method, url: baseURL + path, headers: headers, body: data)
        let repeatable = idempotencyKey != nil || method == "GET"
        let start = ContinuousClock.now
        var pause = backoff
        var attempt = 0
        while true {
            attempt += 1
            let failure: ProcessorError
            do {
                let response = try await client.send(request)
                let answer = ProviderAnswer(status: response.status, body: response.body, headers: response.headers)
                switch response.status {
                case 403 where forbidden == .refusal:
                    return answer
                case 401, 403:
                    throw ProcessorError(
                        .notAuthorized,
                        "\(provider) refused the credentials (\(response.status)) for the \(what): check the key file")
                case 429, 500...:
                    failure = ProcessorError(
                        .serverError,
                        "\(provider) answered \(response.status)\(answer.errorCode.map { " \($0)" } ?? "") to the \(what)"
                    )
                    if let after = response.header("retry-after").flatMap(Int.init), after > 0 {
                        pause = max(pause, .seconds(min(after, 2)))
                    }
                default:
                    return answer
                }
            } catch let error as ProcessorError {
                throw error
            } catch is CancellationError {
                throw ProcessorError(.timeout, "the \(what) was cancelled before \(provider) answered")
            } catch let error as HTTPClientError {
                switch error.code {
                case .timeout: failure = ProcessorError(.timeout, "\(provider) did not answer the \(what) in time")
                case .responseTooLarge:
                    failure = ProcessorError(.invalidAnswer, "\(provider)'s \(what) answer is too large")
                case .invalidURL, .unsupportedProtocol:
                    throw ProcessorError(.invalidRequest, "the \(provider) URL is not usable: \(error.message)")
                default:
                    failure = ProcessorError(
                        .unreachable, "the \(what) got no complete answer from \(provider) (\(error.code))")
                }
            } catch {
                failure = ProcessorError(.unreachable, "the \(what) to \(provider) failed")
            }
            // Again only when it cannot act twice, and only while the deadline leaves room for it.
            guard repeatable, attempt <= retries, ContinuousClock.now - start + pause < timeout, !Task.isCancelled
            else { throw failure }
            do {
                try await Task.sleep(for: pause)
            } catch {
                throw failure
            }
            pause *= 2
        }
    }
}

extension HTTPClient {
    /// The client of a processor call: the call's time limit (connecting at most 5 s of it), answers up to 1 MB,
    /// and as many connections kept for reuse as the processor's share lets payments be in flight
    /// (`PaymentService.defaultShare`). With fewer, a provider slow enough to hold more calls than that at once had
    /// every call past the bound connect again (over TLS, a handshake a payment) just when it was slow.
    static func processorClient(
        timeout: Duration, clientIdentity: ClientIdentity?, trustedRootsPEM: Data?, proxy: String?
    ) -> HTTPClient {
        HTTPClient(
            configuration: .init(
                timeout: timeout, connectTimeout: min(timeout, .seconds(5)), clientIdentity: clientIdentity,
                trustedRootsPEM: trustedRootsPEM, maximumResponseSize: 1024 * 1024, proxy: proxy,
                maximumKeptConnections: PaymentService.defaultShare.maximumInFlight))
    }
}

/// A provider's answer: its status and body, read as a JSON object when it is one.
public struct ProviderAnswer: Sendable {
    public var status: Int
    public var body: Data
    public var headers: [String: String]

    /// The body as a JSON object, or `nil`.
    public var object: JSONObject? {
        ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any]).map(JSONObject.init)
    }

    /// The provider's error code, wherever it keeps it: Stripe `error.code`, Adyen `errorCode`, Checkout.com
    /// `error_type` with its first `error_codes`.
    public var errorCode: String? {
        guard let object else { return nil }
        if let error = object.object("error") { return error.string("decline_code") ?? error.string("code") }
        if let code = object.string("errorCode") { return code }
        if let type = object.string("error_type") {
            return ([type] + (object.strings("error_codes").prefix(1))).joined(separator: ": ")
        }
        return nil
    }
}

/// A read-only view of a decoded JSON object, with typed look-ups that answer `nil` for a missing member or one
/// of another type.
public struct JSONObject: @unchecked Sendable {
    /// Values from `JSONSerialization`: immutable once built.
    public let members: [String: Any]
    public init(_ members: [String: Any]) { self.members = members }

    public func string(_ name: String) -> String? { members[name] as? String }
    public func object(_ name: String) -> JSONObject? { (members[name] as? [String: Any]).map(JSONObject.init) }
    public func bool(_ name: String) -> Bool? { members[name] as? Bool }
    public func strings(_ name: String) -> [String] { (members[name] as? [Any])?.compactMap { $0 as? String } ?? [] }
    public func objects(_ name: String) -> [JSONObject] {
        (members[name] as? [Any])?.compactMap { ($0 as? [String: Any]).map(JSONObject.init) } ?? []
    }
    /// A whole number (JSON number, not a fraction).
    public func integer(_ name: String) -> Int64? {
        guard let number = members[name] as? NSNumber, !(members[name] is Bool) else { return nil }
        let value = number.int64Value
        return NSNumber(value: value) == number ? value : nil
    }
}

/// An `application/x-www-form-urlencoded` body in the order its fields were added (Stripe's `a[b][c]=v`).
public struct FormBody: Sendable, Equatable {
    public private(set) var fields: [(String, String)] = []

    public init() {}

    public mutating func add(_ name: String, _ value: String?) {
        guard let value else { return }
        fields.append((name, value))
    }

    public var encoded: String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        func escape(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
        return fields.map { "\(escape($0.0))=\(escape($0.1))" }.joined(separator: "&")
    }

    public static func == (lhs: FormBody, rhs: FormBody) -> Bool { lhs.encoded == rhs.encoded }
}

/// Idempotency keys derived from our payment's key, one per kind of request, within a provider's length limit.
public enum ProviderKeys {
    /// `key` for the charge itself, `purpose-key` for the other requests of one payment (cut from the left of
    /// `key` to fit `limit`).
    public static func key(_ key: String, purpose: String? = nil, limit: Int) -> String {
        guard let purpose else { return String(key.prefix(limit)) }
        let room = max(0, limit - purpose.count - 1)
        return purpose + "-" + key.suffix(room)
    }

    /// A path segment: letters, digits and `-._~` kept, everything else percent-encoded.
    public static func pathSegment(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}

extension DeclineReason {
    /// A provider's reason for a decline, as our code when we have one for it, else the provider's own.
    public static func provider(_ code: String?) -> DeclineReason {
        guard let code, !code.isEmpty else { return .doNotHonor }
        switch code.lowercased().replacingOccurrences(of: " ", with: "_") {
        case "insufficient_funds", "not_enough_balance", "20051": return .insufficientFunds
        case "lost_card", "20041": return .lostCard
        case "stolen_card", "20043": return .stolenCard
        case "expired_card", "expired_card_-_pick_up", "20054": return .expiredCard
        case "do_not_honor", "20005": return .doNotHonor
        default: return DeclineReason(code: String(code.prefix(64)))
        }
    }
}

extension ProcessorRefund {
    /// A refund a provider accepted, with `reference` its id for it: the charge after it is as much as the provider
    /// says (`partiallyRefunded` by `amount`; the store knows what else was refunded before).
    /// `isPending`: taken and decided later (its webhook says whether it was given back).
    static func accepted(
        _ reference: String, ofCharge charge: String, amount: Money, idempotencyKey: String, isPending: Bool = false
    ) -> ProcessorRefund {
        ProcessorRefund(
            reference: reference, idempotencyKey: idempotencyKey, amount: amount,
            charge: ProcessorCharge(
                reference: charge, idempotencyKey: "", amount: amount, status: .partiallyRefunded, refunded: amount),
            isPending: isPending)
    }
}
