import ApplePay
import Foundation
import HTTPCore
import MerchantCore

/// Errors of the merchant API: each a status and a stable code, answered as `{"error": {"code", "message"}}`.
extension HTTPError {
    static func invalidJSON(_ message: String) -> HTTPError {
        HTTPError(status: 400, code: "invalidJSON", message: message)
    }
    package static func invalidRequest(_ message: String) -> HTTPError {
        HTTPError(status: 400, code: "invalidRequest", message: message)
    }
    package static func checkoutNotFound(_ id: String) -> HTTPError {
        HTTPError(status: 404, code: "checkoutNotFound", message: "There is no checkout with id \(id).")
    }
    static func orderNotFound(_ id: String) -> HTTPError {
        HTTPError(status: 404, code: "orderNotFound", message: "There is no order with id \(id).")
    }
    static func storeUnavailable() -> HTTPError {
        HTTPError(
            status: 503, code: "storeUnavailable", message: "The order store failed; nothing was changed. Try again.")
    }
}

package enum JSONBody {
    /// Decodes the request body as `T`: `invalidJSON` when it is not JSON, `invalidRequest` (naming the field)
    /// when it is JSON of another shape.
    package static func decode<T: Decodable>(_ type: T.Type, from request: HTTPRequest) throws(HTTPError) -> T {
        try decodeScanned(type, from: request).value
    }

    /// ``decode(_:from:)``, also giving where the body's top-level members lie (``JSONScanner/members``).
    /// With `reading`, a body it reads (once the scan has checked the grammar and the limits) is not decoded again:
    /// for a hot route's body of a known shape; `nil` from it leaves the body to `JSONDecoder` and its errors. It is
    /// given the members too, so that it may read only those it needs.
    package static func decodeScanned<T: Decodable>(
        _ type: T.Type, from request: HTTPRequest,
        reading: (_ body: Data, _ members: [String: Range<Int>]) -> T? = { _, _ in nil }
    ) throws(HTTPError) -> (value: T, members: [String: Range<Int>]) {
        guard !request.body.isEmpty else { throw .invalidJSON("The request body is empty: send a JSON object.") }
        let scanner = try JSONScanner.scan(request.body)
        if let value = reading(request.body, scanner.members) { return (value, scanner.members) }
        do {
            return (try JSONDecoder().decode(T.self, from: request.body), scanner.members)
        } catch let DecodingError.keyNotFound(key, context) {
            throw .invalidRequest("Missing field \(path(context.codingPath + [key])).")
        } catch let DecodingError.typeMismatch(expected, context) {
            throw .invalidRequest("Field \(path(context.codingPath)) should be \(describe(expected)).")
        } catch let DecodingError.valueNotFound(expected, context) {
            throw .invalidRequest("Field \(path(context.codingPath)) should be \(describe(expected)), not null.")
        } catch let DecodingError.dataCorrupted(context) {
            throw .invalidRequest("Field \(path(context.codingPath)) has an invalid value.")
        } catch {
            throw .invalidRequest("The request body does not have the expected shape.")
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.isEmpty ? "(the body)" : FieldPath.text(keys)
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Int.Type, is Int64.Type, is Double.Type: return "a number"
        case is Bool.Type: return "a boolean"
        default:
            let name = String(describing: type)
            if name.hasPrefix("Array") { return "an array" }
            if name.hasPrefix("Dictionary") { return "an object" }
            return "an object"
        }
    }
}

extension HTTPResponse {
    /// JSON with sorted keys; a value that cannot be encoded becomes a 500 error.
    package static func encoding<T: Encodable>(_ value: T, status: Int = 200) -> HTTPResponse {
        (try? HTTPResponse.json(value, status: status)) ?? HTTPError.internalError().response
    }
}

/// The length limits of what clients send (docs/LIMITS.md), checked on every JSON body before it is decoded (by
/// ``JSONScanner``, in the same pass that checks the body is JSON): a
/// string longer than its limit in UTF-8 bytes, or an array with more entries, is `400 fieldTooLong` naming the
/// field (`error.field`, e.g. `shippingContact.locality`). Limits go by the field's name wherever it appears;
/// the token's `paymentData` is left to the token parser (the body limit bounds it).
enum FieldLimits {
    /// Any string not named below.
    static let defaultString = 256
    /// Any array not named below.
    static let defaultArray = 100
    /// Strings by field name, in bytes of UTF-8.
    static let strings: [String: Int] = [
        "sku": 64, "identifier": 128, "type": 64, "network": 64, "couponCode": 64, "validationURL": 2048,
        "locality": 128, "subLocality": 128, "subAdministrativeArea": 128, "administrativeArea": 128,
        "postalCode": 32, "country": 128, "countryCode": 8, "givenName": 128, "familyName": 128,
        "phoneticGivenName": 128, "phoneticFamilyName": 128, "emailAddress": 320, "phoneNumber": 64,
        "addressLines": 256, "displayName": 128, "transactionIdentifier": 128,
    ]
    /// Arrays by field name.
    static let arrays: [String: Int] = ["items": 100, "addressLines": 8]
    /// Subtrees not checked here, as `member.member` from the top of the body.
    static let exempt: Set<String> = ["token.paymentData"]

    static func tooLong(_ path: String, _ message: String) -> HTTPError {
        var error = HTTPError(status: 400, code: "fieldTooLong", message: message)
        error.field = path.isEmpty ? nil : path
        return error
    }
}
