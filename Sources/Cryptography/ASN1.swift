import Foundation
import Foundations

/// A minimal BER/DER reader for the few structures this module reads itself (CMS SignedData, the outer layers of
/// a certificate, an EC SubjectPublicKeyInfo). Reading never traps: every length is checked against the buffer,
/// nesting is bounded, and anything unexpected is a `malformedInput` error.
struct ASN1Node {
    /// The identifier octet (single-byte tags only: class, constructed bit, tag number < 31).
    let tag: UInt8
    /// Index of the identifier octet.
    let start: Int
    /// Index of the first content byte.
    let contentStart: Int
    /// Index just after the last content byte (before the end-of-contents octets for indefinite lengths).
    let contentEnd: Int
    /// Index just after the whole element.
    let end: Int

    var isConstructed: Bool { tag & 0x20 != 0 }
    var isIndefinite: Bool { end != contentEnd }
}

/// The children of an element: the first eight kept inline (no allocation, which is what most elements read here
/// need), the rest in an array.
struct ASN1Nodes: RandomAccessCollection {
    private typealias Eight = (ASN1Node, ASN1Node, ASN1Node, ASN1Node, ASN1Node, ASN1Node, ASN1Node, ASN1Node)
    private static let empty = ASN1Node(tag: 0, start: 0, contentStart: 0, contentEnd: 0, end: 0)
    private var inline: Eight = (empty, empty, empty, empty, empty, empty, empty, empty)
    private var overflow: [ASN1Node] = []
    private(set) var count = 0

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    subscript(index: Int) -> ASN1Node {
        precondition(index >= 0 && index < count, "ASN1Nodes index out of range")
        switch index {
        case 0: return inline.0
        case 1: return inline.1
        case 2: return inline.2
        case 3: return inline.3
        case 4: return inline.4
        case 5: return inline.5
        case 6: return inline.6
        case 7: return inline.7
        default: return overflow[index - 8]
        }
    }

    mutating func append(_ node: ASN1Node) {
        switch count {
        case 0: inline.0 = node
        case 1: inline.1 = node
        case 2: inline.2 = node
        case 3: inline.3 = node
        case 4: inline.4 = node
        case 5: inline.5 = node
        case 6: inline.6 = node
        case 7: inline.7 = node
        default: overflow.append(node)
        }
        count += 1
    }
}

struct ASN1Reader {
    static let maximumDepth = 24

    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    static func malformed(_ what: String) -> CryptographyError { CryptographyError(.malformedInput, what) }

    /// The element starting at `offset`, which must end at or before `limit`.
    func node(at offset: Int, limit: Int, depth: Int = 0) throws(CryptographyError) -> ASN1Node {
        guard depth < ASN1Reader.maximumDepth else { throw ASN1Reader.malformed("ASN.1 nested too deeply") }
        guard offset >= 0, limit <= bytes.count, offset + 2 <= limit else {
            throw ASN1Reader.malformed("ASN.1 element truncated")
        }
        let tag = bytes[offset]
        guard tag & 0x1f != 0x1f else { throw ASN1Reader.malformed("multi-byte ASN.1 tags are not supported") }
        let first = bytes[offset + 1]
        var cursor = offset + 2
        if first == 0x80 {
            // Indefinite length (BER): constructed only; children until the end-of-contents octets 00 00.
            guard tag & 0x20 != 0 else { throw ASN1Reader.malformed("indefinite length on a primitive ASN.1 element") }
            let contentStart = cursor
            while true {
                guard cursor + 2 <= limit else { throw ASN1Reader.malformed("ASN.1 end-of-contents missing") }
                if bytes[cursor] == 0 && bytes[cursor + 1] == 0 {
                    return ASN1Node(
                        tag: tag, start: offset, contentStart: contentStart, contentEnd: cursor, end: cursor + 2)
                }
                cursor = try node(at: cursor, limit: limit, depth: depth + 1).end
            }
        }
        var length = 0
        if first & 0x80 == 0 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7f)
            guard count >= 1, count <= 4, cursor + count <= limit else {
                throw ASN1Reader.malformed("bad ASN.1 length")
            }
            for _ in 0..<count {
                length = (length << 8) | Int(bytes[cursor])
                cursor += 1
            }
        }
        guard length <= limit - cursor else { throw ASN1Reader.malformed("ASN.1 length runs past the end of the data") }
        return ASN1Node(
            tag: tag, start: offset, contentStart: cursor, contentEnd: cursor + length, end: cursor + length)
    }

    /// The single top-level element, which must span all the bytes.
    func root() throws(CryptographyError) -> ASN1Node {
        let node = try node(at: 0, limit: bytes.count)
        guard node.end == bytes.count else { throw ASN1Reader.malformed("trailing bytes after the ASN.1 element") }
        return node
    }

    /// The children of a constructed element.
    func children(of parent: ASN1Node, depth: Int = 1) throws(CryptographyError) -> ASN1Nodes {
        guard parent.isConstructed else { throw ASN1Reader.malformed("expected a constructed ASN.1 element") }
        var result = ASN1Nodes()
        var cursor = parent.contentStart
        while cursor < parent.contentEnd {
            let child = try node(at: cursor, limit: parent.contentEnd, depth: depth)
            result.append(child)
            cursor = child.end
        }
        return result
    }

    /// The children, checking the parent's tag first.
    func children(of parent: ASN1Node, expecting tag: UInt8, _ what: String) throws(CryptographyError) -> ASN1Nodes {
        guard parent.tag == tag else { throw ASN1Reader.malformed("\(what): unexpected ASN.1 tag") }
        return try children(of: parent)
    }

    func content(_ node: ASN1Node) -> ArraySlice<UInt8> { bytes[node.contentStart..<node.contentEnd] }
    func whole(_ node: ASN1Node) -> ArraySlice<UInt8> { bytes[node.start..<node.end] }

    /// Whether the node is an OBJECT IDENTIFIER with exactly this encoding.
    func isOID(_ node: ASN1Node, _ oid: [UInt8]) -> Bool { node.tag == 0x06 && contentEquals(node, oid) }

    /// Whether the node's content is exactly `expected` (compared with `memcmp`).
    func contentEquals(_ node: ASN1Node, _ expected: [UInt8]) -> Bool {
        guard node.contentEnd - node.contentStart == expected.count else { return false }
        return bytes.withUnsafeBytes { all in
            expected.withUnsafeBytes { wanted in
                guard let base = all.baseAddress, let target = wanted.baseAddress else { return true }
                return memcmp(base + node.contentStart, target, wanted.count) == 0
            }
        }
    }
}

/// Object identifiers as DER content bytes.
package enum OID {
    /// Encodes a dotted-decimal OID as DER content bytes; nil when malformed.
    package static func encode(_ dotted: String) -> [UInt8]? {
        let parts = dotted.split(separator: ".").map { UInt64($0) }
        guard parts.count >= 2, parts.allSatisfy({ $0 != nil }) else { return nil }
        let arcs = parts.map { $0! }
        guard arcs[0] <= 2, arcs[0] == 2 || arcs[1] < 40 else { return nil }
        var out: [UInt8] = []
        func base128(_ value: UInt64) {
            var stack: [UInt8] = [UInt8(value & 0x7f)]
            var rest = value >> 7
            while rest > 0 {
                stack.append(UInt8(rest & 0x7f) | 0x80)
                rest >>= 7
            }
            out.append(contentsOf: stack.reversed())
        }
        let (first, overflow) = arcs[0].multipliedReportingOverflow(by: 40)
        guard !overflow else { return nil }
        base128(first + arcs[1])
        for arc in arcs.dropFirst(2) { base128(arc) }
        return out
    }

    static let signedData: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02]
    static let data: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x01]
    static let contentType: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x03]
    static let messageDigest: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x04]
    static let signingTime: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x05]
    static let sha256: [UInt8] = [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01]
    static let ecdsaWithSHA256: [UInt8] = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02]
    static let ecPublicKey: [UInt8] = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01]
    static let prime256v1: [UInt8] = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]
    static let rsaEncryption: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01]
    static let sha256WithRSAEncryption: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b]
}

/// ASN.1 UTCTime / GeneralizedTime in the "Z" forms DER requires.
enum ASN1Time {
    static func parse(tag: UInt8, _ text: ArraySlice<UInt8>) -> Date? {
        guard text.last == UInt8(ascii: "Z") else { return nil }
        let body = text.dropLast()
        guard body.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        let values = body
        let base = body.startIndex
        func number(_ from: Int, _ count: Int) -> Int {
            values[(base + from)..<(base + from + count)].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        }
        var year: Int
        var index: Int
        switch (tag, values.count) {
        case (0x17, 12):
            year = number(0, 2)
            year += year >= 50 ? 1900 : 2000
            index = 2
        case (0x18, 14):
            year = number(0, 4)
            index = 4
        default:
            return nil
        }
        let month = number(index, 2)
        let day = number(index + 2, 2)
        let hour = number(index + 4, 2)
        let minute = number(index + 6, 2)
        let second = number(index + 8, 2)
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        let days = CivilDay(year: year, month: month, day: day).daysSinceEpoch
        let seconds = days * 86400 + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}
