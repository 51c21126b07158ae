import ApplePay
import Cryptography
import Foundation
import Foundations
import JSONCoding

/// A payment service provider whose webhooks the server takes.
public enum WebhookProvider: String, Sendable, CaseIterable {
    case stripe, adyen, checkout
}

/// A webhook signing secret: Stripe's `whsec_…` and Checkout.com's secret as their UTF-8 bytes, Adyen's HMAC key
/// from its hex text. Its description shows the length only.
public struct WebhookSecret: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    let bytes: [UInt8]

    /// Stripe's and Checkout.com's secret: the text's bytes, surrounding white space (a file's final newline)
    /// dropped. - Returns: `nil` when nothing is left.
    public init?(text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return nil }
        bytes = Array(trimmed.utf8)
    }

    /// Adyen's HMAC key, given as hex in the Customer Area. - Returns: `nil` unless it is an even number of hex
    /// digits (surrounding white space dropped).
    public init?(hex: String) {
        guard let decoded = Foundations.bytes(fromHex: hex.trimmingCharacters(in: .whitespacesAndNewlines)),
            !decoded.isEmpty
        else { return nil }
        bytes = Array(decoded)
    }

    /// The secret a provider's file holds: hex for Adyen, text for the others.
    public init?(_ provider: WebhookProvider, fileContents data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        switch provider {
        case .adyen: self.init(hex: text)
        case .stripe, .checkout: self.init(text: text)
        }
    }

    public var description: String { "WebhookSecret(\(bytes.count) bytes)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["count": bytes.count]) }

    /// HMAC-SHA256 of `message` under this secret; `nil` only if OpenSSL fails (then nothing verifies).
    func mac(_ message: some DataProtocol) -> Data? { try? HMAC.sha256(key: bytes, message: message) }
}

/// A webhook body read as JSON: first checked by JSONCoding's one grammar within ``limits`` (Adyen's body is read
/// before its items' signatures can be checked, so this is what an unsigned sender reaches).
enum WebhookJSON {
    /// Deep enough for any provider's event, no name twice (the fields signed are the fields acted on), numbers
    /// of at most 64 bytes, at most 1 MiB.
    static let limits = JSONLimits(
        maximumDepth: 64, maximumMembers: 4096, maximumNumberLength: 64, maximumBytes: 1 << 20,
        rejectsDuplicateNames: true)

    /// The body's JSON value, or `nil` when it is not JSON within ``limits``.
    static func parse(_ body: Data) -> JSONValue? {
        let valid = body.withUnsafeBytes { bytes -> Bool in
            do {
                try JSONReader.validate(bytes, limits: limits)
                return true
            } catch {
                return false
            }
        }
        return valid ? try? JSONValue(parsing: body) : nil
    }
}

/// Whether a webhook's signature holds, and if not why: an expected failure, returned as a value.
public struct WebhookVerdict: Sendable, Equatable, CustomStringConvertible {
    /// Why a signature was refused (stable codes, `reason` in `applepay processor verify-webhook`).
    public enum Reason: String, Sendable, CaseIterable {
        /// The signature is the provider's over this payload.
        case signatureMatches
        /// No signature header (or field) at all.
        case missingSignature
        /// The header does not have the provider's shape (Stripe: no `t=` timestamp).
        case malformedHeader
        /// Stripe: no signature of scheme `v1` in the header.
        case noSignatureOfExpectedScheme
        /// No signature given matches the payload and the secret.
        case signatureMismatch
        /// Stripe: the signed timestamp is further from now than the tolerance (a replay, or a wrong clock).
        case timestampOutsideTolerance
        /// Adyen: the body is not a notification (JSON with notification items).
        case malformedPayload
    }

    public let reason: Reason
    public var isValid: Bool { reason == .signatureMatches }

    public static let valid = WebhookVerdict(.signatureMatches)

    public init(_ reason: Reason) { self.reason = reason }
    public var description: String { reason.rawValue }
}

/// Stripe's `Stripe-Signature` check, as Stripe's libraries do it: the header is `t=<unix seconds>` and one or more
/// `v1=<hex>` (other schemes ignored); the signed payload is `"<t>." + raw body`, HMAC-SHA256 under the endpoint's
/// secret in lowercase hex; any `v1` may match; then the timestamp must be within the tolerance of now (either
/// side, as stripe-dotnet checks it).
public enum StripeSignature {
    /// Stripe's default tolerance, five minutes.
    public static let defaultTolerance: TimeInterval = 300

    /// - Parameters:
    ///   - header: the `Stripe-Signature` value.
    ///   - tolerance: seconds; `nil` skips the timestamp check (as the libraries do with no tolerance).
    public static func verify(
        payload: some DataProtocol, header: String?, secret: WebhookSecret, now: Date,
        tolerance: TimeInterval? = defaultTolerance
    ) -> WebhookVerdict {
        guard let header, !header.isEmpty else { return WebhookVerdict(.missingSignature) }
        var timestamp: Int64?
        var signatures: [String] = []
        for item in header.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            let (key, value) = (parts[0].trimmingCharacters(in: .whitespaces), String(parts[1]))
            if key == "t", timestamp == nil {
                guard let seconds = Int64(value) else { return WebhookVerdict(.malformedHeader) }
                timestamp = seconds
            } else if key == "v1" {
                signatures.append(value)
            }
        }
        guard let timestamp else { return WebhookVerdict(.malformedHeader) }
        guard !signatures.isEmpty else { return WebhookVerdict(.noSignatureOfExpectedScheme) }
        guard let mac = secret.mac(Array("\(timestamp).".utf8) + Array(payload)) else {
            return WebhookVerdict(.signatureMismatch)
        }
        let expected = lowercaseHex(mac)
        // Every candidate is compared (no early exit), each in constant time.
        let matches = signatures.reduce(false) { found, given in constantTimeEqual(given, expected) || found }
        guard matches else { return WebhookVerdict(.signatureMismatch) }
        if let tolerance, tolerance > 0, abs(now.timeIntervalSince1970 - Double(timestamp)) > tolerance {
            return WebhookVerdict(.timestampOutsideTolerance)
        }
        return .valid
    }
}

/// Adyen's HMAC signatures, as Adyen's libraries check them.
///
/// A standard notification's items are signed one by one: HMAC-SHA256, under the key given as hex, of
/// `pspReference:originalReference:merchantAccountCode:merchantReference:amount.value:amount.currency:eventCode:success`
/// (a missing field is empty, nothing escaped), in base64 in the item's `additionalData.hmacSignature`. Balance
/// Platform and Management webhooks sign the raw body instead, in the `HmacSignature` header.
public enum AdyenSignature {
    /// The text an item's signature covers.
    public static func signedText(of item: JSONValue) -> String {
        func text(_ value: JSONValue?) -> String {
            switch value {
            case .string(let string): string
            case .number(let number): "\(number)"
            case .bool(let flag): flag ? "true" : "false"
            default: ""
            }
        }
        return [
            text(item["pspReference"]), text(item["originalReference"]), text(item["merchantAccountCode"]),
            text(item["merchantReference"]), text(item["amount"]?["value"]), text(item["amount"]?["currency"]),
            text(item["eventCode"]), text(item["success"]),
        ].joined(separator: ":")
    }

    /// One notification item against `signature`, or (`nil`) its own `additionalData.hmacSignature`.
    public static func verify(item: JSONValue, signature: String? = nil, key: WebhookSecret) -> WebhookVerdict {
        guard case .object = item else { return WebhookVerdict(.malformedPayload) }
        guard let given = signature ?? item["additionalData"]?["hmacSignature"]?.stringValue, !given.isEmpty else {
            return WebhookVerdict(.missingSignature)
        }
        return compare(given, key.mac(Data(signedText(of: item).utf8)))
    }

    /// The items of a notification body: `{"live": …, "notificationItems": [{"NotificationRequestItem": {…}}]}`,
    /// or one bare item. `nil` when the body is neither.
    public static func items(ofNotification body: Data) -> [JSONValue]? {
        guard let value = WebhookJSON.parse(body), case .object = value else { return nil }
        guard let list = value["notificationItems"] else { return [value] }
        guard let wrapped = list.arrayValue, !wrapped.isEmpty else { return nil }
        let items = wrapped.compactMap { $0["NotificationRequestItem"] }
        return items.count == wrapped.count ? items : nil
    }

    /// A whole notification body: valid only when it has items and every one is signed (the first failure is the
    /// verdict). `signature` overrides the items' own (for one bare item).
    public static func verify(notification body: Data, signature: String? = nil, key: WebhookSecret)
        -> WebhookVerdict
    {
        guard let items = items(ofNotification: body) else { return WebhookVerdict(.malformedPayload) }
        for item in items {
            let verdict = verify(item: item, signature: signature, key: key)
            guard verdict.isValid else { return verdict }
        }
        return .valid
    }

    /// A Balance Platform or Management webhook: base64 HMAC-SHA256 of the raw body in the `HmacSignature` header.
    public static func verify(rawBody: some DataProtocol, header: String?, key: WebhookSecret) -> WebhookVerdict {
        guard let header, !header.isEmpty else { return WebhookVerdict(.missingSignature) }
        return compare(header, key.mac(rawBody))
    }

    private static func compare(_ given: String, _ mac: Data?) -> WebhookVerdict {
        guard let mac, constantTimeEqual(given, mac.base64EncodedString()) else {
            return WebhookVerdict(.signatureMismatch)
        }
        return .valid
    }
}

/// Checkout.com's `Cko-Signature`: HMAC-SHA256 of the raw body under the webhook's secret key, lowercase hex.
public enum CheckoutSignature {
    /// - Parameter header: the `Cko-Signature` value.
    public static func verify(body: some DataProtocol, header: String?, secret: WebhookSecret) -> WebhookVerdict {
        guard let header, !header.isEmpty else { return WebhookVerdict(.missingSignature) }
        guard let mac = secret.mac(body), constantTimeEqual(header, lowercaseHex(mac)) else {
            return WebhookVerdict(.signatureMismatch)
        }
        return .valid
    }
}
