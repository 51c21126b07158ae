import Foundation
import JSONCoding

/// Reads a token's JSON in one pass over the bytes without building a tree: JSONCoding's `JSONReader` checks the
/// whole document with `TokenJSON`'s limits (depth, members per object, duplicate names, number length; string
/// bytes passed through as the tree reader does), and this keeps only the members `PaymentToken` reads, as ranges of
/// the document (or, for a string with escapes, its unescaped bytes).
///
/// `PaymentToken(jsonData:)` uses it because a token is parsed once per payment and almost all of its bytes are two
/// base64 strings: it decodes them straight from the caller's buffer. The payload keeps `TokenJSON`.
struct TokenScanner {
    /// A string's bytes: a range of the document when it had no escapes, otherwise unescaped.
    enum Text {
        case range(Range<Int>)
        case owned([UInt8])
    }

    /// What a member the reader needs held.
    enum Value {
        case absent
        case object
        case string(Text)
        case null
        case other

        var isAbsent: Bool {
            if case .absent = self { return true }
            return false
        }
    }

    /// The objects whose members the reader needs (a PKPaymentToken, or a bare paymentData at the top).
    enum Scope: Int, CaseIterable {
        case none, top, paymentData, topHeader, paymentDataHeader, paymentMethod
    }

    /// The member names the reader needs, in any scope.
    enum Field: Int, CaseIterable {
        case version, data, signature, header, paymentData, paymentMethod, transactionIdentifier
        case ephemeralPublicKey, wrappedKey, publicKeyHash, transactionId, applicationData
        case displayName, network, type

        var name: StaticString {
            switch self {
            case .version: "version"
            case .data: "data"
            case .signature: "signature"
            case .header: "header"
            case .paymentData: "paymentData"
            case .paymentMethod: "paymentMethod"
            case .transactionIdentifier: "transactionIdentifier"
            case .ephemeralPublicKey: "ephemeralPublicKey"
            case .wrappedKey: "wrappedKey"
            case .publicKeyHash: "publicKeyHash"
            case .transactionId: "transactionId"
            case .applicationData: "applicationData"
            case .displayName: "displayName"
            case .network: "network"
            case .type: "type"
            }
        }
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var reader: JSONReader
    /// The kept members: for each scope, one slot per field it keeps (`slotBase` says where each scope's slots start).
    private var found: [Value]
    /// Whether the document is an object.
    private(set) var rootIsObject = false

    private init(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONGrammarError) {
        self.bytes = bytes
        reader = try JSONReader(UnsafeRawBufferPointer(bytes), limits: TokenJSON.limits)
        found = Array(repeating: .absent, count: TokenScanner.slotCount)
    }

    /// Checks a whole document and keeps the members the token reader needs.
    static func scan(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONGrammarError) -> TokenScanner {
        var scanner = try TokenScanner(bytes)
        try scanner.value(scope: .top)
        try scanner.reader.finish()
        return scanner
    }

    /// The member `field` of the object `scope`, if the document has it.
    subscript(scope: Scope, field: Field) -> Value {
        guard let position = TokenScanner.scopeFields[scope.rawValue].firstIndex(where: { $0.0 == field }) else {
            return .absent
        }
        return found[TokenScanner.slotBase[scope.rawValue] + position]
    }

    /// Calls `body` with the text's bytes.
    func withBytes<R>(_ text: Text, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        switch text {
        case .range(let range): try body(UnsafeBufferPointer(rebasing: bytes[range]))
        case .owned(let owned): try owned.withUnsafeBufferPointer(body)
        }
    }

    /// The fields kept in a scope, and the scope an object value of that field opens.
    private static func fields(in scope: Scope) -> [(Field, Scope)] {
        switch scope {
        case .none: []
        case .top:
            [
                (.version, .none), (.data, .none), (.signature, .none), (.header, .topHeader),
                (.paymentData, .paymentData), (.paymentMethod, .paymentMethod), (.transactionIdentifier, .none),
            ]
        case .paymentData: [(.version, .none), (.data, .none), (.signature, .none), (.header, .paymentDataHeader)]
        case .topHeader, .paymentDataHeader:
            [
                (.ephemeralPublicKey, .none), (.wrappedKey, .none), (.publicKeyHash, .none), (.transactionId, .none),
                (.applicationData, .none),
            ]
        case .paymentMethod: [(.displayName, .none), (.network, .none), (.type, .none)]
        }
    }

    private static let scopeFields: [[(Field, Scope)]] = Scope.allCases.map { fields(in: $0) }
    /// Where each scope's slots start in `found`.
    private static let slotBase: [Int] = scopeFields.indices.map { scope in
        scopeFields[..<scope].reduce(0) { $0 + $1.count }
    }
    private static let slotCount = scopeFields.reduce(0) { $0 + $1.count }

    /// The kept field a member name is in this scope: its slot in `found` and the scope an object value opens.
    private static func match(_ key: UnsafeBufferPointer<UInt8>, in scope: Scope) -> (slot: Int, opens: Scope)? {
        guard let keyBase = key.baseAddress else { return nil }
        for (position, candidate) in TokenScanner.scopeFields[scope.rawValue].enumerated() {
            // The length first, then one `memcmp`: most names differ in length from most fields.
            let name = candidate.0.name
            if name.utf8CodeUnitCount == key.count, memcmp(name.utf8Start, keyBase, key.count) == 0 {
                return (TokenScanner.slotBase[scope.rawValue] + position, candidate.1)
            }
        }
        return nil
    }

    /// Reads one value; an object is read in `scope`. Returns what a kept member would record.
    @discardableResult
    private mutating func value(scope: Scope) throws(JSONGrammarError) -> Value {
        switch try reader.readValue() {
        case .object(var object):
            if scope == .top { rootIsObject = true }
            while let name = try reader.nextMember(&object) {
                // A static match over the name's bytes: a closure over `self` would copy the scanner.
                let kept: (slot: Int, opens: Scope)?
                if name.hasEscapes {
                    kept = reader.unescaped(name).withUnsafeBufferPointer { TokenScanner.match($0, in: scope) }
                } else {
                    kept = TokenScanner.match(UnsafeBufferPointer(rebasing: bytes[name.range]), in: scope)
                }
                let member = try value(scope: kept?.opens ?? .none)
                if let kept { found[kept.slot] = member }
            }
            return .object
        case .array(var array):
            while try reader.nextElement(&array) { try value(scope: .none) }
            return .other
        case .string(let string): return .string(text(string))
        case .null: return .null
        case .bool, .number: return .other
        }
    }

    /// A string's bytes: its range when it has no escapes.
    private func text(_ string: JSONString) -> Text {
        string.hasEscapes ? .owned(reader.unescaped(string)) : .range(string.range)
    }
}
