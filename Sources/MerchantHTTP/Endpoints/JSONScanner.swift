import Foundation
import HTTPCore
import JSONCoding
import MerchantCore

/// One pass over a request body's bytes that checks it is JSON (JSONCoding's `JSONReader`: RFC 8259, any value at
/// the top, UTF-8) and applies ``FieldLimits`` to every string, array and field name as it goes, without building any
/// object: what `JSONSerialization` followed by a walk of its objects did, at a fraction of the cost. It also notes
/// where the top-level object's members begin and end, so that a caller can hand one on as bytes (the payment token).
struct JSONScanner {
    /// Where each top-level member's value lies in the body (the last one for a name given twice).
    private(set) var members: [String: Range<Int>] = [:]

    /// Deeper nesting than this is refused as `invalidJSON` (the decoders' own limit is 512).
    static let maximumDepth = 512

    private var reader: JSONReader
    /// The path of the value being read, for limits and messages: member names and array indexes.
    private var path: [PathComponent] = []

    private enum PathComponent {
        case member(String)
        case index(Int)
    }

    /// Checks `body`; returns the scanner with ``members`` filled in.
    /// - Throws: `400 invalidJSON` when it is not JSON, `400 fieldTooLong` (naming the field) past a limit.
    static func scan(_ body: Data) throws(HTTPError) -> JSONScanner {
        let result: Result<JSONScanner, HTTPError> = body.withUnsafeBytes { buffer in
            do {
                var scanner = JSONScanner(
                    reader: try JSONReader(buffer, limits: JSONLimits(maximumDepth: maximumDepth)))
                try scanner.value(name: "")
                try scanner.reader.finish()
                return .success(scanner)
            } catch let error as HTTPError {
                return .failure(error)
            } catch {
                return .failure(Self.httpError(error as? JSONGrammarError))
            }
        }
        return try result.get()
    }

    private init(reader: JSONReader) { self.reader = reader }

    /// The grammar's error as the API answers it: one message, but for nesting.
    private static func httpError(_ error: JSONGrammarError?) -> HTTPError {
        guard error?.code == .tooDeep else { return invalid }
        return .invalidJSON("The request body is nested more than \(maximumDepth) deep.")
    }

    private static let invalid = HTTPError.invalidJSON("The request body is not valid JSON.")

    // MARK: Values

    /// Reads one value; `name` is the member it belongs to (an array's elements share their array's name).
    /// Returns where the value begins. Throws `HTTPError` past a limit, `JSONGrammarError` when the body is not JSON.
    @discardableResult
    private mutating func value(name: String) throws -> Int {
        let token = try reader.readValue()
        let start = reader.valueOffset
        switch token {
        case .object(var object):
            while let key = try reader.nextMember(&object) {
                let text = reader.text(key)
                if key.unescapedCount > FieldLimits.defaultString, !isExempt {
                    throw FieldLimits.tooLong(
                        pathText, "A field name in \(path.isEmpty ? "the body" : pathText) is too long.")
                }
                path.append(.member(text))
                let valueStart = try value(name: text)
                if path.count == 1 { members[text] = valueStart..<reader.offset }
                path.removeLast()
            }
        case .array(var array):
            let limit = FieldLimits.arrays[name] ?? FieldLimits.defaultArray
            while try reader.nextElement(&array) {
                if array.count > limit, !isExempt {
                    throw FieldLimits.tooLong(pathText, "Field \(pathOrBody) has more than \(limit) entries.")
                }
                path.append(.index(array.count - 1))
                try value(name: name)
                path.removeLast()
            }
        case .string(let string):
            let limit = FieldLimits.strings[name] ?? FieldLimits.defaultString
            if string.unescapedCount > limit, !isExempt {
                throw FieldLimits.tooLong(pathText, "Field \(pathOrBody) is longer than \(limit) bytes.")
            }
        case .number, .bool, .null:
            break
        }
        return start
    }

    // MARK: Helpers

    /// Whether the current value is inside a subtree ``FieldLimits`` leaves alone (the token's `paymentData`).
    private var isExempt: Bool {
        guard path.count >= 2, case .member(let first) = path[0], case .member(let second) = path[1] else {
            return false
        }
        return FieldLimits.exempt.contains("\(first).\(second)")
    }

    private var pathText: String {
        var text = ""
        for component in path {
            switch component {
            case .member(let name): text += text.isEmpty ? name : ".\(name)"
            case .index(let index): text += "[\(index)]"
            }
        }
        return text
    }

    private var pathOrBody: String { path.isEmpty ? "(the body)" : pathText }
}
