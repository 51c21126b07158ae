import Foundation
import HTTPServer

/// Errors of the merchant API: each a status and a stable code, answered as `{"error": {"code", "message"}}`.
extension HTTPError {
    static func invalidJSON(_ message: String) -> HTTPError {
        HTTPError(status: 400, code: "invalidJSON", message: message)
    }
    static func invalidRequest(_ message: String) -> HTTPError {
        HTTPError(status: 400, code: "invalidRequest", message: message)
    }
    static func checkoutNotFound(_ id: String) -> HTTPError {
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

enum JSONBody {
    /// Decodes the request body as `T`: `invalidJSON` when it is not JSON, `invalidRequest` (naming the field)
    /// when it is JSON of another shape.
    static func decode<T: Decodable>(_ type: T.Type, from request: HTTPRequest) throws(HTTPError) -> T {
        guard !request.body.isEmpty else { throw .invalidJSON("The request body is empty: send a JSON object.") }
        guard (try? JSONSerialization.jsonObject(with: request.body, options: [.fragmentsAllowed])) != nil else {
            throw .invalidJSON("The request body is not valid JSON.")
        }
        do {
            return try JSONDecoder().decode(T.self, from: request.body)
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
        guard !keys.isEmpty else { return "(the body)" }
        var text = ""
        for key in keys {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text
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
    static func encoding<T: Encodable>(_ value: T, status: Int = 200) -> HTTPResponse {
        (try? HTTPResponse.json(value, status: status)) ?? HTTPError.internalError().response
    }
}
