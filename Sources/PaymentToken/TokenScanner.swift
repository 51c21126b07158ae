/// Reads a token's JSON in one pass over the bytes without building a tree: it checks the whole document with the
/// same grammar and limits as `TokenJSON` (depth, members per object, duplicate names, escapes, number length,
/// nothing after the value) and keeps only the members `PaymentToken` reads, as ranges of the document (or, for a
/// string with escapes, its unescaped bytes).
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

    typealias ParseError = TokenJSON.ParseError

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    /// The kept members: for each scope, one slot per field it keeps (`slotBase` says where each scope's slots start).
    private var found: [Value]
    /// Whether the document is an object.
    private(set) var rootIsObject = false
    /// Member names of the objects being read, innermost last, for the duplicate check.
    private var names: [(fingerprint: UInt64, text: Text)] = []

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        found = Array(repeating: .absent, count: TokenScanner.slotCount)
        names.reserveCapacity(32)
    }

    /// Checks a whole document and keeps the members the token reader needs.
    static func scan(_ bytes: UnsafeBufferPointer<UInt8>) throws(ParseError) -> TokenScanner {
        var scanner = TokenScanner(bytes)
        scanner.skipSpace()
        scanner.rootIsObject = scanner.index < bytes.count && bytes[scanner.index] == UInt8(ascii: "{")
        try scanner.value(depth: 0, scope: .top)
        scanner.skipSpace()
        guard scanner.index == bytes.count else {
            throw ParseError(message: "trailing characters after the JSON value")
        }
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
    private func match(_ key: UnsafeBufferPointer<UInt8>, in scope: Scope) -> (slot: Int, opens: Scope)? {
        for (position, candidate) in TokenScanner.scopeFields[scope.rawValue].enumerated() {
            let matches = candidate.0.name.withUTF8Buffer { name in
                name.count == key.count && name.elementsEqual(key)
            }
            if matches { return (TokenScanner.slotBase[scope.rawValue] + position, candidate.1) }
        }
        return nil
    }

    private mutating func skipSpace() {
        while index < bytes.count,
            bytes[index] == 0x20 || bytes[index] == 0x0a || bytes[index] == 0x0d || bytes[index] == 0x09
        {
            index += 1
        }
    }

    /// Reads one value; an object is read in `scope`. Returns what a kept member would record.
    @discardableResult
    private mutating func value(depth: Int, scope: Scope) throws(ParseError) -> Value {
        guard depth < TokenJSON.maximumDepth else { throw ParseError(message: "JSON nested too deeply") }
        guard index < bytes.count else { throw ParseError(message: "unexpected end of JSON") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            try object(depth: depth, scope: scope)
            return .object
        case UInt8(ascii: "["):
            index += 1
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .other
            }
            while true {
                skipSpace()
                try value(depth: depth + 1, scope: .none)
                skipSpace()
                guard index < bytes.count else { throw ParseError(message: "unexpected end of JSON") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "]") else { throw ParseError(message: "expected ',' or ']'") }
                index += 1
                return .other
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .other
        case UInt8(ascii: "f"):
            try literal("false")
            return .other
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        default:
            try number()
            return .other
        }
    }

    private mutating func object(depth: Int, scope: Scope) throws(ParseError) {
        index += 1
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return
        }
        let first = names.count
        defer { names.removeLast(names.count - first) }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw ParseError(message: "expected a member name")
            }
            let key = try string()
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw ParseError(message: "expected ':'")
            }
            index += 1
            skipSpace()
            let kept = withBytes(key) { match($0, in: scope) }
            let member = try value(depth: depth + 1, scope: kept?.opens ?? .none)
            guard names.count - first < TokenJSON.maximumMembers else {
                throw ParseError(message: "a JSON object has too many members")
            }
            let fingerprint = withBytes(key) { TokenJSON.JSONObject.fingerprint($0) }
            var index = first
            while index < names.count {
                if names[index].fingerprint == fingerprint,
                    withBytes(names[index].text, { seen in withBytes(key) { seen.elementsEqual($0) } })
                {
                    throw ParseError(
                        message:
                            "member \"\(withBytes(key) { String(decoding: $0.prefix(40), as: UTF8.self) })\" appears twice"
                    )
                }
                index += 1
            }
            names.append((fingerprint, key))
            if let kept { found[kept.slot] = member }
            skipSpace()
            guard self.index < bytes.count else { throw ParseError(message: "unexpected end of JSON") }
            if bytes[self.index] == UInt8(ascii: ",") {
                self.index += 1
                continue
            }
            guard bytes[self.index] == UInt8(ascii: "}") else { throw ParseError(message: "expected ',' or '}'") }
            self.index += 1
            return
        }
    }

    private mutating func literal(_ word: StaticString) throws(ParseError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw ParseError(message: "unexpected end of JSON") }
        let matches = word.withUTF8Buffer { expected in bytes[index..<(index + count)].elementsEqual(expected) }
        guard matches else { throw ParseError(message: "invalid JSON literal") }
        index += count
    }

    private mutating func number() throws(ParseError) {
        try TokenJSON.scanNumber(bytes, &index)
    }

    private mutating func string() throws(ParseError) -> Text {
        index += 1  // opening quote
        let start = index
        index = TokenJSON.scanPlainString(bytes, from: start)
        if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
            index += 1
            return .range(start..<(index - 1))
        }
        return .owned(try TokenJSON.unescapedString(bytes, from: start, &index))
    }
}
