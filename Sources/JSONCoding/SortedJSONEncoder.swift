import Foundation

/// Encodes `Encodable` values to JSON with sorted keys and unescaped slashes, byte for byte what Foundation's
/// `JSONEncoder` writes with `[.sortedKeys, .withoutEscapingSlashes]` and its default strategies (dates as seconds
/// since 2001, data as Base64, URLs as their absolute string, decimals as numbers, non-finite numbers refused), at
/// a fraction of its cost: containers are plain arrays of entries, keys are sorted as bytes once, and the text is
/// written straight into one byte buffer. Answers are encoded with it (``HTTPResponse/json(_:status:)``).
public struct SortedJSONEncoder: Sendable {
    public init() {}

    /// The JSON text of `value`.
    /// - Throws: `EncodingError.invalidValue` for a non-finite number, as `JSONEncoder` does.
    public func encode<T: Encodable>(_ value: T) throws -> Data {
        let arena = JSONArena()
        let node = try JSONTreeEncoder.node(for: value, path: .root, arena: arena)
        var output: [UInt8] = []
        output.reserveCapacity(arena.bytes.count + 64)
        node.write(to: &output, arena: arena)
        return Data(output)
    }
}

/// The text of every scalar of one encoding, in one buffer: a scalar node is a range of it (no array per scalar).
private final class JSONArena {
    var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(1024) }

    func append(_ text: StaticString) -> JSONNode {
        let start = bytes.count
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        return .text(start..<bytes.count)
    }

    func append(string: String) -> JSONNode {
        let start = bytes.count
        appendJSONString(string, to: &bytes)
        return .text(start..<bytes.count)
    }

    func append(number text: String) -> JSONNode {
        let start = bytes.count
        bytes.append(contentsOf: text.utf8)
        return .text(start..<bytes.count)
    }

    func append(integer value: some BinaryInteger) -> JSONNode { append(number: String(value)) }

    func append(bool value: Bool) -> JSONNode { value ? append("true") : append("false") }

    /// The shortest text that reads back as the same number, without a trailing `.0` (as `JSONEncoder` writes it).
    func append<F: BinaryFloatingPoint & LosslessStringConvertible>(float value: F, path: CodingPathNode) throws
        -> JSONNode
    {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value, EncodingError.Context(codingPath: path.path, debugDescription: "\(value) is not valid JSON."))
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return append(number: text)
    }
}

/// Where a value is, as a linked list from the root: the array `codingPath` wants is built only when asked for.
private indirect enum CodingPathNode {
    case root
    case key(any CodingKey, CodingPathNode)
    case index(Int, CodingPathNode)

    var path: [any CodingKey] {
        var keys: [any CodingKey] = []
        var node = self
        while true {
            switch node {
            case .root: return keys.reversed()
            case .key(let key, let parent):
                keys.append(key)
                node = parent
            case .index(let index, let parent):
                keys.append(IndexKey(intValue: index))
                node = parent
            }
        }
    }
}

/// A value on its way to text: scalars are already text; objects and arrays are filled in by their containers.
private enum JSONNode {
    case text(Range<Int>)
    case object(JSONObject)
    case array(JSONArray)

    func write(to output: inout [UInt8], arena: JSONArena) {
        switch self {
        case .text(let range): output.append(contentsOf: arena.bytes[range])
        case .object(let object):
            output.append(UInt8(ascii: "{"))
            let sorted = object.entries.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for (index, entry) in sorted.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                appendJSONString(entry.key, to: &output)
                output.append(UInt8(ascii: ":"))
                entry.value.write(to: &output, arena: arena)
            }
            output.append(UInt8(ascii: "}"))
        case .array(let array):
            output.append(UInt8(ascii: "["))
            for (index, element) in array.elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                element.write(to: &output, arena: arena)
            }
            output.append(UInt8(ascii: "]"))
        }
    }
}

/// An object's members in the order encoded; a key encoded again replaces its value (as in a dictionary).
private final class JSONObject {
    var entries: [(key: String, value: JSONNode)] = []

    func set(_ key: String, _ value: JSONNode) {
        if let index = entries.firstIndex(where: { $0.key == key }) {
            entries[index].value = value
        } else {
            entries.append((key, value))
        }
    }
}

private final class JSONArray {
    var elements: [JSONNode] = []
}

extension SortedJSONEncoder {
    /// Appends `text` as a JSON string literal (quotes, backslashes and control characters escaped as `JSONEncoder`
    /// escapes them; everything else as its UTF-8), for writers of JSON text such as log lines.
    public static func appendString(_ text: String, to output: inout [UInt8]) { appendJSONString(text, to: &output) }
}

/// A JSON string literal: quotes, backslashes and control characters escaped as `JSONEncoder` escapes them.
private func appendJSONString(_ text: String, to output: inout [UInt8]) {
    var text = text
    output.append(UInt8(ascii: "\""))
    text.withUTF8 { bytes in
        // The runs between escapes go in whole: most strings have no escape at all.
        var start = 0
        for index in bytes.indices {
            let byte = bytes[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
            appendEscape(of: byte, to: &output)
            start = index + 1
        }
        output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
    }
    output.append(UInt8(ascii: "\""))
}

/// The escape of a quote, a backslash or a control character.
private func appendEscape(of byte: UInt8, to output: inout [UInt8]) {
    output.append(UInt8(ascii: "\\"))
    switch byte {
    case UInt8(ascii: "\""), UInt8(ascii: "\\"): output.append(byte)
    case 0x08: output.append(UInt8(ascii: "b"))
    case 0x0C: output.append(UInt8(ascii: "f"))
    case UInt8(ascii: "\n"): output.append(UInt8(ascii: "n"))
    case UInt8(ascii: "\r"): output.append(UInt8(ascii: "r"))
    case UInt8(ascii: "\t"): output.append(UInt8(ascii: "t"))
    default:
        let digits = Array("0123456789abcdef".utf8)
        output.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
        output.append(digits[Int(byte >> 4)])
        output.append(digits[Int(byte & 0xF)])
    }
}

/// The `Encoder` a value encodes itself into; its result is one node.
private final class JSONTreeEncoder: Encoder {
    let path: CodingPathNode
    let arena: JSONArena
    var node: JSONNode?
    var codingPath: [any CodingKey] { path.path }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(path: CodingPathNode, arena: JSONArena) {
        self.path = path
        self.arena = arena
    }

    /// The node for `value`, with Foundation's special cases for the types it treats specially (checked by type,
    /// not by casting every value).
    static func node<T: Encodable>(for value: T, path: CodingPathNode, arena: JSONArena) throws -> JSONNode {
        if T.self == String.self { return arena.append(string: unsafeBitCast(value, to: String.self)) }
        if T.self == Int.self { return arena.append(integer: unsafeBitCast(value, to: Int.self)) }
        if T.self == Bool.self { return arena.append(bool: unsafeBitCast(value, to: Bool.self)) }
        if T.self == Double.self { return try arena.append(float: unsafeBitCast(value, to: Double.self), path: path) }
        if T.self == Decimal.self, let number = value as? Decimal { return arena.append(number: number.description) }
        if T.self == Data.self, let data = value as? Data { return arena.append(string: data.base64EncodedString()) }
        if T.self == URL.self, let url = value as? URL { return arena.append(string: url.absoluteString) }
        let encoder = JSONTreeEncoder(path: path, arena: arena)
        try value.encode(to: encoder)
        // A value that encoded nothing is an empty object, as with JSONEncoder.
        return encoder.node ?? .object(JSONObject())
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object: JSONObject
        if case .object(let existing) = node {
            object = existing
        } else {
            object = JSONObject()
            node = .object(object)
        }
        return KeyedEncodingContainer(JSONKeyedContainer<Key>(object: object, path: path, arena: arena))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: JSONArray
        if case .array(let existing) = node {
            array = existing
        } else {
            array = JSONArray()
            node = .array(array)
        }
        return JSONUnkeyedContainer(array: array, path: path, arena: arena)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { JSONSingleValueContainer(encoder: self) }
}

private struct JSONKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let object: JSONObject
    let path: CodingPathNode
    let arena: JSONArena
    var codingPath: [any CodingKey] { path.path }

    private func set(_ key: Key, _ node: JSONNode) { object.set(key.stringValue, node) }

    mutating func encodeNil(forKey key: Key) throws { set(key, arena.append("null")) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(key, arena.append(bool: value)) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(key, arena.append(string: value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        set(key, try arena.append(float: value, path: .key(key, path)))
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        set(key, try arena.append(float: value, path: .key(key, path)))
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(key, arena.append(integer: value)) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(key, arena.append(integer: value)) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(key, arena.append(integer: value)) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(key, arena.append(integer: value)) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(key, arena.append(integer: value)) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(key, arena.append(integer: value)) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(key, arena.append(integer: value)) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(key, arena.append(integer: value)) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(key, arena.append(integer: value)) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(key, arena.append(integer: value)) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        set(key, try JSONTreeEncoder.node(for: value, path: .key(key, path), arena: arena))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = JSONObject()
        set(key, .object(nested))
        return KeyedEncodingContainer(
            JSONKeyedContainer<NestedKey>(object: nested, path: .key(key, path), arena: arena))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = JSONArray()
        set(key, .array(nested))
        return JSONUnkeyedContainer(array: nested, path: .key(key, path), arena: arena)
    }

    mutating func superEncoder() -> any Encoder {
        ReferencingEncoder(object: object, key: "super", path: .key(SuperKey(), path), arena: arena)
    }
    mutating func superEncoder(forKey key: Key) -> any Encoder {
        ReferencingEncoder(object: object, key: key.stringValue, path: .key(key, path), arena: arena)
    }
}

private struct JSONUnkeyedContainer: UnkeyedEncodingContainer {
    let array: JSONArray
    let path: CodingPathNode
    let arena: JSONArena
    var codingPath: [any CodingKey] { path.path }
    var count: Int { array.elements.count }

    private var elementPath: CodingPathNode { .index(count, path) }
    private func append(_ node: JSONNode) { array.elements.append(node) }

    mutating func encodeNil() throws { append(arena.append("null")) }
    mutating func encode(_ value: Bool) throws { append(arena.append(bool: value)) }
    mutating func encode(_ value: String) throws { append(arena.append(string: value)) }
    mutating func encode(_ value: Double) throws { append(try arena.append(float: value, path: elementPath)) }
    mutating func encode(_ value: Float) throws { append(try arena.append(float: value, path: elementPath)) }
    mutating func encode(_ value: Int) throws { append(arena.append(integer: value)) }
    mutating func encode(_ value: Int8) throws { append(arena.append(integer: value)) }
    mutating func encode(_ value: Int16) throws { append(arena.append(integer: value)) }
    mutating func encode(_ value: Int32) throws { append(arena.append(integer: value)) }
    mutating func encode(_ value: Int64) throws { append(arena.append(integer: value)) }
    mutating func encode(_ value: UInt) throws { append(arena.append(integer: value)) }
    mutating func encode(_ value: UInt8) throws { append(arena.append(integer: value)) }
    mutating func encode(_ value: UInt16) throws { append(arena.append(integer: value)) }
    mutating func encode(_ value: UInt32) throws { append(arena.append(integer: value)) }
    mutating func encode(_ value: UInt64) throws { append(arena.append(integer: value)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        append(try JSONTreeEncoder.node(for: value, path: elementPath, arena: arena))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = JSONObject()
        let path = elementPath
        append(.object(nested))
        return KeyedEncodingContainer(JSONKeyedContainer<NestedKey>(object: nested, path: path, arena: arena))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = JSONArray()
        let path = elementPath
        append(.array(nested))
        return JSONUnkeyedContainer(array: nested, path: path, arena: arena)
    }

    mutating func superEncoder() -> any Encoder {
        let index = array.elements.count
        let path = elementPath
        append(.object(JSONObject()))
        return ReferencingEncoder(array: array, index: index, path: path, arena: arena)
    }
}

private struct JSONSingleValueContainer: SingleValueEncodingContainer {
    let encoder: JSONTreeEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }
    private var arena: JSONArena { encoder.arena }

    func encodeNil() throws { encoder.node = arena.append("null") }
    func encode(_ value: Bool) throws { encoder.node = arena.append(bool: value) }
    func encode(_ value: String) throws { encoder.node = arena.append(string: value) }
    func encode(_ value: Double) throws { encoder.node = try arena.append(float: value, path: encoder.path) }
    func encode(_ value: Float) throws { encoder.node = try arena.append(float: value, path: encoder.path) }
    func encode(_ value: Int) throws { encoder.node = arena.append(integer: value) }
    func encode(_ value: Int8) throws { encoder.node = arena.append(integer: value) }
    func encode(_ value: Int16) throws { encoder.node = arena.append(integer: value) }
    func encode(_ value: Int32) throws { encoder.node = arena.append(integer: value) }
    func encode(_ value: Int64) throws { encoder.node = arena.append(integer: value) }
    func encode(_ value: UInt) throws { encoder.node = arena.append(integer: value) }
    func encode(_ value: UInt8) throws { encoder.node = arena.append(integer: value) }
    func encode(_ value: UInt16) throws { encoder.node = arena.append(integer: value) }
    func encode(_ value: UInt32) throws { encoder.node = arena.append(integer: value) }
    func encode(_ value: UInt64) throws { encoder.node = arena.append(integer: value) }
    func encode<T: Encodable>(_ value: T) throws {
        encoder.node = try JSONTreeEncoder.node(for: value, path: encoder.path, arena: arena)
    }
}

/// The encoder of a `superEncoder()`: what is encoded into it lands in its parent's slot when it is released.
private final class ReferencingEncoder: Encoder {
    private enum Slot {
        case member(JSONObject, String)
        case element(JSONArray, Int)
    }

    var codingPath: [any CodingKey] { inner.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    private let inner: JSONTreeEncoder
    private let slot: Slot

    init(object: JSONObject, key: String, path: CodingPathNode, arena: JSONArena) {
        inner = JSONTreeEncoder(path: path, arena: arena)
        slot = .member(object, key)
    }

    init(array: JSONArray, index: Int, path: CodingPathNode, arena: JSONArena) {
        inner = JSONTreeEncoder(path: path, arena: arena)
        slot = .element(array, index)
    }

    deinit {
        let node = inner.node ?? .object(JSONObject())
        switch slot {
        case .member(let object, let key): object.set(key, node)
        case .element(let array, let index): array.elements[index] = node
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        inner.container(keyedBy: type)
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { inner.unkeyedContainer() }
    func singleValueContainer() -> any SingleValueEncodingContainer { inner.singleValueContainer() }
}

private struct IndexKey: CodingKey {
    var stringValue: String { "Index \(intValue ?? 0)" }
    var intValue: Int?
    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

private struct SuperKey: CodingKey {
    var stringValue: String { "super" }
    var intValue: Int? { nil }
    init() {}
    init?(intValue: Int) { nil }
    init?(stringValue: String) { nil }
}
