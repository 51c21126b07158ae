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
        let node = try JSONTreeEncoder.node(for: value, codingPath: [])
        var output: [UInt8] = []
        output.reserveCapacity(1024)
        node.write(to: &output)
        return Data(output)
    }
}

/// A value on its way to text: scalars are already text; objects and arrays are filled in by their containers.
private enum JSONNode {
    case text([UInt8])
    case object(JSONObject)
    case array(JSONArray)

    func write(to output: inout [UInt8]) {
        switch self {
        case .text(let bytes): output.append(contentsOf: bytes)
        case .object(let object):
            output.append(UInt8(ascii: "{"))
            let sorted = object.entries.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for (index, entry) in sorted.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                appendJSONString(entry.key, to: &output)
                output.append(UInt8(ascii: ":"))
                entry.value.write(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        case .array(let array):
            output.append(UInt8(ascii: "["))
            for (index, element) in array.elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                element.write(to: &output)
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

/// A JSON string literal: quotes, backslashes and control characters escaped as `JSONEncoder` escapes them.
private func appendJSONString(_ text: String, to output: inout [UInt8]) {
    output.append(UInt8(ascii: "\""))
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case 0x08: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
        case 0x0C: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
        case UInt8(ascii: "\n"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case UInt8(ascii: "\r"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case UInt8(ascii: "\t"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        case 0..<0x20:
            let digits: [UInt8] = Array("0123456789abcdef".utf8)
            output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0xF)])
        default: output.append(byte)
        }
    }
    output.append(UInt8(ascii: "\""))
}

/// The `Encoder` a value encodes itself into; its result is one node.
private final class JSONTreeEncoder: Encoder {
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var node: JSONNode?

    init(codingPath: [any CodingKey]) { self.codingPath = codingPath }

    /// The node for `value`, with Foundation's special cases for the types it treats specially.
    static func node<T: Encodable>(for value: T, codingPath: [any CodingKey]) throws -> JSONNode {
        switch value {
        case let string as String: return string.jsonNode
        case let number as Int: return .text(Array(String(number).utf8))
        case let flag as Bool: return .text(Array((flag ? "true" : "false").utf8))
        case let number as Double: return try number.jsonNode(codingPath)
        case let number as Decimal: return .text(Array(number.description.utf8))
        case let data as Data: return data.base64EncodedString().jsonNode
        case let url as URL: return url.absoluteString.jsonNode
        default:
            let encoder = JSONTreeEncoder(codingPath: codingPath)
            try value.encode(to: encoder)
            // A value that encoded nothing is an empty object, as with JSONEncoder.
            return encoder.node ?? .object(JSONObject())
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object: JSONObject
        if case .object(let existing) = node {
            object = existing
        } else {
            object = JSONObject()
            node = .object(object)
        }
        return KeyedEncodingContainer(JSONKeyedContainer<Key>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: JSONArray
        if case .array(let existing) = node {
            array = existing
        } else {
            array = JSONArray()
            node = .array(array)
        }
        return JSONUnkeyedContainer(array: array, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { JSONSingleValueContainer(encoder: self) }
}

extension String {
    fileprivate var jsonNode: JSONNode {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count + 2)
        appendJSONString(self, to: &bytes)
        return .text(bytes)
    }
}

extension BinaryFloatingPoint where Self: LosslessStringConvertible {
    /// The shortest text that reads back as the same number, without a trailing `.0` (as `JSONEncoder` writes it).
    fileprivate func jsonNode(_ codingPath: [any CodingKey]) throws -> JSONNode {
        guard isFinite else {
            throw EncodingError.invalidValue(
                self, EncodingError.Context(codingPath: codingPath, debugDescription: "\(self) is not valid JSON."))
        }
        var text = description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return .text(Array(text.utf8))
    }
}

private struct JSONKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let object: JSONObject
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws { object.set(key.stringValue, .text(Array("null".utf8))) }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        object.set(key.stringValue, .text(Array((value ? "true" : "false").utf8)))
    }
    mutating func encode(_ value: String, forKey key: Key) throws { object.set(key.stringValue, value.jsonNode) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        object.set(key.stringValue, try value.jsonNode(codingPath + [key]))
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        object.set(key.stringValue, try value.jsonNode(codingPath + [key]))
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { object.set(key.stringValue, integer(value)) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { object.set(key.stringValue, integer(value)) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { object.set(key.stringValue, integer(value)) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { object.set(key.stringValue, integer(value)) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { object.set(key.stringValue, integer(value)) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { object.set(key.stringValue, integer(value)) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { object.set(key.stringValue, integer(value)) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { object.set(key.stringValue, integer(value)) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { object.set(key.stringValue, integer(value)) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { object.set(key.stringValue, integer(value)) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        object.set(key.stringValue, try JSONTreeEncoder.node(for: value, codingPath: codingPath + [key]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = JSONObject()
        object.set(key.stringValue, .object(nested))
        return KeyedEncodingContainer(JSONKeyedContainer<NestedKey>(object: nested, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = JSONArray()
        object.set(key.stringValue, .array(nested))
        return JSONUnkeyedContainer(array: nested, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { ReferencingEncoder(object: object, key: "super", codingPath) }
    mutating func superEncoder(forKey key: Key) -> any Encoder {
        ReferencingEncoder(object: object, key: key.stringValue, codingPath + [key])
    }
}

private func integer(_ value: some BinaryInteger) -> JSONNode { .text(Array(String(value).utf8)) }

private struct JSONUnkeyedContainer: UnkeyedEncodingContainer {
    let array: JSONArray
    let codingPath: [any CodingKey]
    var count: Int { array.elements.count }

    private var indexKey: any CodingKey { IndexKey(intValue: count) }

    mutating func encodeNil() throws { array.elements.append(.text(Array("null".utf8))) }
    mutating func encode(_ value: Bool) throws { array.elements.append(.text(Array((value ? "true" : "false").utf8))) }
    mutating func encode(_ value: String) throws { array.elements.append(value.jsonNode) }
    mutating func encode(_ value: Double) throws { array.elements.append(try value.jsonNode(codingPath + [indexKey])) }
    mutating func encode(_ value: Float) throws { array.elements.append(try value.jsonNode(codingPath + [indexKey])) }
    mutating func encode(_ value: Int) throws { array.elements.append(integer(value)) }
    mutating func encode(_ value: Int8) throws { array.elements.append(integer(value)) }
    mutating func encode(_ value: Int16) throws { array.elements.append(integer(value)) }
    mutating func encode(_ value: Int32) throws { array.elements.append(integer(value)) }
    mutating func encode(_ value: Int64) throws { array.elements.append(integer(value)) }
    mutating func encode(_ value: UInt) throws { array.elements.append(integer(value)) }
    mutating func encode(_ value: UInt8) throws { array.elements.append(integer(value)) }
    mutating func encode(_ value: UInt16) throws { array.elements.append(integer(value)) }
    mutating func encode(_ value: UInt32) throws { array.elements.append(integer(value)) }
    mutating func encode(_ value: UInt64) throws { array.elements.append(integer(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        array.elements.append(try JSONTreeEncoder.node(for: value, codingPath: codingPath + [indexKey]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = JSONObject()
        let path = codingPath + [indexKey]
        array.elements.append(.object(nested))
        return KeyedEncodingContainer(JSONKeyedContainer<NestedKey>(object: nested, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = JSONArray()
        let path = codingPath + [indexKey]
        array.elements.append(.array(nested))
        return JSONUnkeyedContainer(array: nested, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let index = array.elements.count
        array.elements.append(.object(JSONObject()))
        return ReferencingEncoder(array: array, index: index, codingPath + [IndexKey(intValue: index)])
    }
}

private struct JSONSingleValueContainer: SingleValueEncodingContainer {
    let encoder: JSONTreeEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    func encodeNil() throws { encoder.node = .text(Array("null".utf8)) }
    func encode(_ value: Bool) throws { encoder.node = .text(Array((value ? "true" : "false").utf8)) }
    func encode(_ value: String) throws { encoder.node = value.jsonNode }
    func encode(_ value: Double) throws { encoder.node = try value.jsonNode(codingPath) }
    func encode(_ value: Float) throws { encoder.node = try value.jsonNode(codingPath) }
    func encode(_ value: Int) throws { encoder.node = integer(value) }
    func encode(_ value: Int8) throws { encoder.node = integer(value) }
    func encode(_ value: Int16) throws { encoder.node = integer(value) }
    func encode(_ value: Int32) throws { encoder.node = integer(value) }
    func encode(_ value: Int64) throws { encoder.node = integer(value) }
    func encode(_ value: UInt) throws { encoder.node = integer(value) }
    func encode(_ value: UInt8) throws { encoder.node = integer(value) }
    func encode(_ value: UInt16) throws { encoder.node = integer(value) }
    func encode(_ value: UInt32) throws { encoder.node = integer(value) }
    func encode(_ value: UInt64) throws { encoder.node = integer(value) }
    func encode<T: Encodable>(_ value: T) throws {
        encoder.node = try JSONTreeEncoder.node(for: value, codingPath: codingPath)
    }
}

/// The encoder of a `superEncoder()`: what is encoded into it lands in its parent's slot when it is released.
private final class ReferencingEncoder: Encoder {
    private enum Slot {
        case member(JSONObject, String)
        case element(JSONArray, Int)
    }

    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    private let inner: JSONTreeEncoder
    private let slot: Slot

    init(object: JSONObject, key: String, _ codingPath: [any CodingKey]) {
        self.codingPath = codingPath
        inner = JSONTreeEncoder(codingPath: codingPath)
        slot = .member(object, key)
    }

    init(array: JSONArray, index: Int, _ codingPath: [any CodingKey]) {
        self.codingPath = codingPath
        inner = JSONTreeEncoder(codingPath: codingPath)
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
