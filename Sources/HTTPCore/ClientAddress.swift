import Foundation

/// An IPv4 or IPv6 address, parsed from its text form. An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, how a
/// dual-stack socket reports an IPv4 peer) is read as the IPv4 address, so both forms compare and match alike.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// Whether it is an IPv4 address (else IPv6).
    public let isIPv4: Bool
    /// The first 64 bits of an IPv6 address; 0 for IPv4.
    let high: UInt64
    /// The last 64 bits of an IPv6 address; an IPv4 address in the low 32 bits.
    let low: UInt64

    init(isIPv4: Bool, high: UInt64, low: UInt64) {
        self.isIPv4 = isIPv4
        self.high = isIPv4 ? 0 : high
        self.low = isIPv4 ? low & 0xFFFF_FFFF : low
    }

    /// Parses dotted-decimal IPv4 (`192.0.2.1`, no leading zeros) or IPv6 text (`2001:db8::1`, no brackets, no zone).
    /// - Returns: `nil` for anything else.
    public init?(_ text: some StringProtocol) {
        // INET6_ADDRSTRLEN is 46 with its terminating zero: nothing longer is an address.
        guard !text.isEmpty, text.utf8.count <= 45, text.utf8.allSatisfy(Self.isAddressCharacter) else { return nil }
        let string = String(text)
        if string.utf8.contains(UInt8(ascii: ":")) {
            var raw = in6_addr()
            guard inet_pton(AF_INET6, string, &raw) == 1 else { return nil }
            self.init(ipv6: raw)
        } else {
            var raw = in_addr()
            guard inet_pton(AF_INET, string, &raw) == 1 else { return nil }
            self.init(ipv4: raw)
        }
    }

    /// The address of a socket (`sockaddr_in` or `sockaddr_in6` of `length` bytes); `nil` for another family.
    package init?(socketAddress address: UnsafePointer<sockaddr>, length: Int) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
            let raw = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self).sin_addr
            self.init(ipv4: raw)
        case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
            let raw = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self).sin6_addr
            self.init(ipv6: raw)
        default:
            return nil
        }
    }

    private init(ipv4 raw: in_addr) {
        var raw = raw
        let value = withUnsafeBytes(of: &raw) { $0.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        self.init(isIPv4: true, high: 0, low: value)
    }

    private init(ipv6 raw: in6_addr) {
        var raw = raw
        let bytes = withUnsafeBytes(of: &raw) { Array($0) }
        let high = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let low = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        if high == 0, low >> 32 == 0xFFFF {
            self.init(isIPv4: true, high: 0, low: low)
        } else {
            self.init(isIPv4: false, high: high, low: low)
        }
    }

    /// Hex digits, `.` and `:`: checked before the C parser sees the text (a NUL would end it early).
    private static func isAddressCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"), UInt8(ascii: "."), UInt8(ascii: ":"):
            return true
        default:
            return false
        }
    }

    /// The canonical text: `192.0.2.1`, `2001:db8::1` (RFC 5952).
    public var description: String {
        if isIPv4 {
            return [24, 16, 8, 0].map { String((low >> UInt64($0)) & 0xFF) }.joined(separator: ".")
        }
        var raw = in6_addr()
        withUnsafeMutableBytes(of: &raw) { bytes in
            for index in 0..<8 {
                bytes[index] = UInt8(truncatingIfNeeded: high >> UInt64(56 - 8 * index))
                bytes[index + 8] = UInt8(truncatingIfNeeded: low >> UInt64(56 - 8 * index))
            }
        }
        var buffer = [CChar](repeating: 0, count: 64)
        guard inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count)) != nil else { return "::" }
        return String(cString: buffer)
    }
}

/// A network of addresses: an address and a prefix length, `10.0.0.0/8`, `2001:db8::/32`; an address alone is a
/// network of one (`/32`, `/128`).
public struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    /// The first address of the network (no bit set past the prefix).
    public let address: IPAddress
    /// How many leading bits the network's addresses share: 0–32 for IPv4, 0–128 for IPv6.
    public let prefixLength: Int

    /// The network of `prefixLength` bits that holds `address` (the bits past the prefix cleared).
    public init(containing address: IPAddress, prefixLength: Int) {
        let length = min(max(0, prefixLength), address.isIPv4 ? 32 : 128)
        let (high, low) = Self.masks(isIPv4: address.isIPv4, prefixLength: length)
        self.address = IPAddress(isIPv4: address.isIPv4, high: address.high & high, low: address.low & low)
        self.prefixLength = length
    }

    /// Parses `ADDRESS` or `ADDRESS/LENGTH`. Strict: the address has no bit set past the prefix (`10.0.0.1/8` is
    /// refused: `10.0.0.0/8` or `10.0.0.1` was meant). An IPv4-mapped IPv6 network (`::ffff:10.0.0.0/104`) is read
    /// as the IPv4 network.
    /// - Returns: `nil` for anything else.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let addressText = parts[0]
        guard let address = IPAddress(addressText) else { return nil }
        let mapped = address.isIPv4 && addressText.contains(":")
        var length = address.isIPv4 ? 32 : 128
        if parts.count == 2 {
            let digits = parts[1]
            guard (1...3).contains(digits.count), digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
                let value = Int(digits), value <= (address.isIPv4 && !mapped ? 32 : 128)
            else { return nil }
            if mapped {
                // Written as IPv6: the prefix counts the 96 bits of ::ffff: too.
                guard value >= 96 else { return nil }
                length = value - 96
            } else {
                length = value
            }
        }
        let network = IPNetwork(containing: address, prefixLength: length)
        guard network.address == address else { return nil }
        self = network
    }

    /// Whether `address` is in this network (never across IPv4 and IPv6).
    public func contains(_ address: IPAddress) -> Bool {
        guard address.isIPv4 == self.address.isIPv4 else { return false }
        let (high, low) = Self.masks(isIPv4: address.isIPv4, prefixLength: prefixLength)
        return address.high & high == self.address.high && address.low & low == self.address.low
    }

    /// `10.0.0.0/8`, `2001:db8::/32`.
    public var description: String { "\(address)/\(prefixLength)" }

    private static func masks(isIPv4: Bool, prefixLength: Int) -> (high: UInt64, low: UInt64) {
        func leading(_ bits: Int) -> UInt64 { bits <= 0 ? 0 : bits >= 64 ? ~0 : ~0 << UInt64(64 - bits) }
        if isIPv4 { return (0, leading(prefixLength) >> 32) }
        return (leading(prefixLength), leading(prefixLength - 64))
    }
}

/// One hop of a forwarding header: whom a proxy says it received the request from.
public enum ForwardedNode: Hashable, Sendable {
    case address(IPAddress)
    /// An obfuscated identifier (RFC 7239 `_hidden`): a proxy's stand-in for an address it does not reveal.
    case obfuscated(String)
    /// `unknown`: the proxy does not know whom it received the request from.
    case unknown
}

/// Which header the trusted proxies write the client's address into.
public enum ForwardingHeader: String, Sendable, CaseIterable {
    /// `X-Forwarded-For: client, proxy1, proxy2` (most load balancers).
    case xForwardedFor = "X-Forwarded-For"
    /// RFC 7239 `Forwarded: for=client, for="[2001:db8::1]:443"`.
    case forwarded = "Forwarded"

    /// The header's hops, left (the client, as far as the proxies know) to right (the hop nearest the server):
    /// every line of the header in order, as one list. Only the last `limit` elements are kept; an element that
    /// cannot be read is `nil`.
    /// - Returns: the hops kept, and whether earlier ones were dropped; `nil` when the header is absent or longer
    ///   than ``maximumLength``.
    func hops(in headers: HTTPHeaders, keepingLast limit: Int) -> (hops: [ForwardedNode?], dropped: Bool)? {
        var bytes: [UInt8] = []
        for (name, value) in headers where HTTPHeaders.sameName(name, rawValue) {
            if !bytes.isEmpty { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: value.utf8)
            guard bytes.count <= Self.maximumLength else { return nil }
        }
        guard !bytes.isEmpty else { return nil }
        var hops = ForwardedHops(limit: limit)
        switch self {
        case .xForwardedFor:
            for element in bytes.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                let text = ForwardedSyntax.trimmed(element)
                if text.isEmpty { continue }
                // A bare address, or one with brackets or a port; obfuscated identifiers are the Forwarded header's.
                let node =
                    IPAddress(String(decoding: text, as: UTF8.self)).map(ForwardedNode.address)
                    ?? ForwardedSyntax.node(text)
                if case .obfuscated = node { hops.append(nil) } else { hops.append(node) }
            }
        case .forwarded:
            ForwardedSyntax.forwardedElements(bytes) { hops.append($0) }
        }
        return (hops.kept, hops.dropped)
    }

    /// The most bytes of a forwarding header read (all its lines together); a longer one is not used.
    public static let maximumLength = 16 * 1024
}

/// The last few hops of a header, in order.
private struct ForwardedHops {
    let limit: Int
    var kept: [ForwardedNode?] = []
    var dropped = false

    init(limit: Int) { self.limit = max(1, limit) }

    mutating func append(_ hop: ForwardedNode?) {
        if kept.count == limit {
            kept.removeFirst()
            dropped = true
        }
        kept.append(hop)
    }
}

/// RFC 7239's grammar, on bytes.
private enum ForwardedSyntax {
    static let space = UInt8(ascii: " ")
    static let tab = UInt8(ascii: "\t")
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let comma = UInt8(ascii: ",")
    static let semicolon = UInt8(ascii: ";")
    static let equals = UInt8(ascii: "=")
    /// The longest value of one parameter read.
    static let maximumValueLength = 256

    static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let first = slice.first, first == space || first == tab { slice.removeFirst() }
        while let last = slice.last, last == space || last == tab { slice.removeLast() }
        return slice
    }

    /// RFC 7230 `tchar`.
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// RFC 7239 `obfnode`/`obfport` characters after the `_`.
    static func isObfuscatedCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// A `node`: `192.0.2.1`, `192.0.2.1:443`, `[2001:db8::1]`, `[2001:db8::1]:443`, `unknown`, `_hidden`, each with
    /// an optional port (digits or `_obfuscated`).
    static func node(_ bytes: ArraySlice<UInt8>) -> ForwardedNode? {
        var name = bytes
        var port: ArraySlice<UInt8>?
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            name = bytes[(bytes.startIndex + 1)..<close]
            let rest = bytes[(close + 1)...]
            if !rest.isEmpty {
                guard rest.first == UInt8(ascii: ":") else { return nil }
                port = rest.dropFirst()
            }
            // Brackets hold IPv6 text only.
            guard name.contains(UInt8(ascii: ":")), let address = IPAddress(String(decoding: name, as: UTF8.self))
            else { return nil }
            return isPort(port) ? .address(address) : nil
        }
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            name = bytes[..<colon]
            port = bytes[(colon + 1)...]
        }
        guard isPort(port), !name.isEmpty else { return nil }
        let text = String(decoding: name, as: UTF8.self)
        if text.lowercased() == "unknown" { return .unknown }
        if name.first == UInt8(ascii: "_") {
            guard name.count >= 2, name.count <= 64, name.dropFirst().allSatisfy(isObfuscatedCharacter) else {
                return nil
            }
            return .obfuscated(text)
        }
        guard let address = IPAddress(text), address.isIPv4, !text.contains(":") else { return nil }
        return .address(address)
    }

    /// No port, 1–5 digits, or an obfuscated port.
    static func isPort(_ port: ArraySlice<UInt8>?) -> Bool {
        guard let port else { return true }
        if port.first == UInt8(ascii: "_") {
            return port.count >= 2 && port.count <= 64 && port.dropFirst().allSatisfy(isObfuscatedCharacter)
        }
        return (1...5).contains(port.count) && port.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// Reads `Forwarded` elements (`for=…;proto=…;by=…, for=…`) and calls `each` with every element's `for` node:
    /// `nil` for an element without one, with it twice, or that breaks the grammar. After a broken element the
    /// reading resumes at the next comma outside a quoted string.
    static func forwardedElements(_ bytes: [UInt8], _ each: (ForwardedNode?) -> Void) {
        var index = 0
        let end = bytes.count
        func skipSpace() { while index < end, bytes[index] == space || bytes[index] == tab { index += 1 } }
        func skipToNextElement() {
            var quoted = false
            while index < end {
                let byte = bytes[index]
                if quoted, byte == backslash {
                    index += 2
                    continue
                }
                if byte == quote { quoted.toggle() }
                if !quoted, byte == comma { return }
                index += 1
            }
        }
        while index < end {
            skipSpace()
            if index < end, bytes[index] == comma {
                index += 1  // An empty element.
                continue
            }
            if index >= end { break }
            var node: ForwardedNode?
            var seenFor = false
            var broken = false
            pairs: while index < end {
                skipSpace()
                if index >= end || bytes[index] == comma { break }
                if bytes[index] == semicolon {
                    index += 1
                    continue
                }
                let nameStart = index
                while index < end, isTokenCharacter(bytes[index]) { index += 1 }
                let name = bytes[nameStart..<index]
                guard !name.isEmpty, index < end, bytes[index] == equals else {
                    broken = true
                    break
                }
                index += 1
                var value: [UInt8] = []
                if index < end, bytes[index] == quote {
                    index += 1
                    var closed = false
                    while index < end, value.count <= maximumValueLength {
                        let byte = bytes[index]
                        if byte == quote {
                            closed = true
                            index += 1
                            break
                        }
                        if byte == backslash {
                            index += 1
                            guard index < end else { break }
                        }
                        value.append(bytes[index])
                        index += 1
                    }
                    guard closed else {
                        broken = true
                        break
                    }
                } else {
                    let valueStart = index
                    while index < end, isTokenCharacter(bytes[index]) { index += 1 }
                    value = Array(bytes[valueStart..<index])
                    guard !value.isEmpty else {
                        broken = true
                        break
                    }
                }
                guard value.count <= maximumValueLength else {
                    broken = true
                    break
                }
                if String(decoding: name, as: UTF8.self).lowercased() == "for" {
                    guard !seenFor else {
                        broken = true
                        break
                    }
                    seenFor = true
                    node = Self.node(value[...])
                    if node == nil {
                        broken = true
                        break
                    }
                }
                skipSpace()
                guard index >= end || bytes[index] == semicolon || bytes[index] == comma else {
                    broken = true
                    break pairs
                }
            }
            if broken {
                skipToNextElement()
                each(nil)
            } else {
                each(node)
            }
            if index < end, bytes[index] == comma { index += 1 }
        }
    }
}

/// The proxies (load balancers) whose word on the client's address is taken, and the header they write it into.
/// A request from any other peer is that peer's, whatever its headers say.
public struct TrustedProxies: Sendable, Equatable {
    /// The proxies' addresses and networks.
    public var networks: [IPNetwork]
    /// The header the proxies write; the other one is ignored (a proxy passes on what a client sent in it).
    public var header: ForwardingHeader

    /// The most trusted hops walked from the right; a header with more is not used (the peer is the client).
    public static let maximumHops = 32

    /// - Parameters:
    ///   - networks: the proxies' addresses and networks; none: every request is its peer's.
    ///   - header: where they write the client's address.
    public init(_ networks: [IPNetwork] = [], header: ForwardingHeader = .xForwardedFor) {
        self.networks = networks
        self.header = header
    }

    /// Whether `address` is one of the trusted proxies.
    public func trusts(_ address: IPAddress) -> Bool { networks.contains { $0.contains(address) } }

    /// The client of a request that came from `peer` (the TCP peer's address text) with `headers`: when the peer
    /// is a trusted proxy, the header's hops are walked from the right, skipping trusted proxies, and the first
    /// other hop is the client (an address in canonical text, or an obfuscated identifier; for `unknown`, the
    /// proxy that said so). Otherwise, and when the hops cannot be read, the peer.
    public func client(peer: String?, headers: HTTPHeaders) -> String? {
        guard !networks.isEmpty, let peer, let peerAddress = IPAddress(peer), trusts(peerAddress),
            let (hops, dropped) = header.hops(in: headers, keepingLast: Self.maximumHops + 1)
        else { return peer }
        var nearest = peerAddress
        for hop in hops.reversed() {
            switch hop {
            case .address(let address):
                if trusts(address) {
                    nearest = address
                    continue
                }
                return address.description
            case .obfuscated(let identifier):
                return identifier
            case .unknown:
                return nearest.description
            case nil:
                return peer
            }
        }
        // Every hop is a trusted proxy: the leftmost is the client (a health check from inside, say), unless the
        // header had more hops than are walked.
        return dropped ? peer : nearest.description
    }
}
