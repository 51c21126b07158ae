import Foundation
import HTTPCore
import HTTPServer
import TestSupport
import Testing

/// Addresses, networks, and the client's address behind trusted proxies: `X-Forwarded-For` and RFC 7239
/// `Forwarded` read only from a trusted peer, walked from the right, and anything odd leaving the peer as the client.
@Suite("Trusted proxies and forwarding headers")
struct TrustedProxiesTests {
    static func network(_ text: String) throws -> IPNetwork { try #require(IPNetwork(text), "\(text)") }

    static func proxies(_ networks: [String], header: ForwardingHeader = .xForwardedFor) throws -> TrustedProxies {
        TrustedProxies(try networks.map(network), header: header)
    }

    /// The client `proxies` find for a request from `peer` with one or more lines of `name`.
    static func client(
        _ proxies: TrustedProxies, peer: String = "10.0.0.1", _ name: String, _ values: String...
    ) -> String? {
        var headers = HTTPHeaders()
        for value in values { headers.add(name: name, value: value) }
        return proxies.client(peer: peer, headers: headers)
    }

    @Test("addresses parse in their text forms; IPv4-mapped IPv6 is the IPv4 address; canonical text out")
    func addresses() {
        #expect(IPAddress("192.0.2.1")?.description == "192.0.2.1")
        #expect(IPAddress("192.0.2.1")?.isIPv4 == true)
        #expect(IPAddress("2001:DB8:0:0::1")?.description == "2001:db8::1")
        #expect(IPAddress("::1")?.isIPv4 == false)
        #expect(IPAddress("::ffff:192.0.2.1") == IPAddress("192.0.2.1"))
        #expect(IPAddress("::ffff:c000:201")?.description == "192.0.2.1")
        for bad in [
            "", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1.2.3.4 ", " 1.2.3.4", "[::1]", "::1%eth0",
            "fe80::1::2",
            "1.2.3.4:80", "localhost", "12345::", String(repeating: "1", count: 10_000), "1.2.3.4\u{0}",
            "١.٢.٣.٤",
        ] {
            #expect(IPAddress(bad) == nil, "\(bad.prefix(40))")
        }
    }

    @Test("networks: prefixes, a host alone, host bits refused, contains never across families")
    func networks() throws {
        let ten = try Self.network("10.0.0.0/8")
        #expect(ten.contains(try #require(IPAddress("10.255.1.2"))))
        #expect(!ten.contains(try #require(IPAddress("11.0.0.1"))))
        #expect(ten.contains(try #require(IPAddress("::ffff:10.1.2.3"))))
        #expect(!ten.contains(try #require(IPAddress("::a00:1"))))
        let host = try Self.network("::1")
        #expect(host.prefixLength == 128)
        #expect(host.contains(try #require(IPAddress("0::1"))))
        #expect(!host.contains(try #require(IPAddress("::2"))))
        let six = try Self.network("2001:db8::/32")
        #expect(six.contains(try #require(IPAddress("2001:db8:ffff::1"))))
        #expect(!six.contains(try #require(IPAddress("2001:db9::1"))))
        #expect(try Self.network("0.0.0.0/0").contains(try #require(IPAddress("203.0.113.9"))))
        #expect(!(try Self.network("0.0.0.0/0").contains(try #require(IPAddress("2001:db8::1")))))
        #expect(try Self.network("::/0").contains(try #require(IPAddress("2001:db8::1"))))
        #expect(try Self.network("::ffff:10.0.0.0/104") == ten)
        #expect(try Self.network("192.0.2.7").description == "192.0.2.7/32")
        for bad in [
            "10.0.0.1/8", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/08x", "/8",
            "2001:db8::1/32",
            "::/129", "::ffff:10.0.0.0/80", "10.0.0.0/8/8", "garbage", "",
        ] {
            #expect(IPNetwork(bad) == nil, "\(bad)")
        }
        let group = IPNetwork(containing: try #require(IPAddress("2001:db8:1:2:aaaa:bbbb:cccc:dddd")), prefixLength: 64)
        #expect(group.description == "2001:db8:1:2::/64")
        #expect(group == IPNetwork(containing: try #require(IPAddress("2001:db8:1:2::9")), prefixLength: 64))
        #expect(group != IPNetwork(containing: try #require(IPAddress("2001:db8:1:3::9")), prefixLength: 64))
    }

    @Test("X-Forwarded-For from a trusted peer: walked from the right, trusted hops skipped, ports and brackets read")
    func xForwardedFor() throws {
        let proxies = try Self.proxies(["10.0.0.0/8", "2001:db8:ffff::/48"])
        let xff = "X-Forwarded-For"
        #expect(Self.client(proxies, xff, "203.0.113.7") == "203.0.113.7")
        #expect(Self.client(proxies, xff, "198.51.100.1, 203.0.113.7, 10.1.1.1") == "203.0.113.7")
        #expect(Self.client(proxies, xff, "203.0.113.7:5123") == "203.0.113.7")
        #expect(Self.client(proxies, xff, "[2001:db8::1]:443, 10.2.2.2") == "2001:db8::1")
        #expect(Self.client(proxies, xff, "2001:DB8::1") == "2001:db8::1")
        #expect(Self.client(proxies, xff, "::ffff:203.0.113.7") == "203.0.113.7")
        // Several lines are one list, in order.
        #expect(Self.client(proxies, xff, "198.51.100.1", "203.0.113.7") == "203.0.113.7")
        // Garbage a client put on the left is never reached.
        #expect(Self.client(proxies, xff, "garbage, \"oops, 203.0.113.7") == "203.0.113.7")
        // Every hop trusted: the leftmost is the client.
        #expect(Self.client(proxies, xff, "10.9.9.9, 10.1.1.1") == "10.9.9.9")
        // `unknown`: the proxy that said so.
        #expect(Self.client(proxies, xff, "unknown, 10.1.1.1") == "10.1.1.1")
        // Unreadable where it matters, or absent: the peer.
        #expect(Self.client(proxies, xff, "203.0.113.7, garbage") == "10.0.0.1")
        #expect(Self.client(proxies, xff, "_hidden") == "10.0.0.1")
        #expect(Self.client(proxies, xff, "") == "10.0.0.1")
        #expect(Self.client(proxies, xff, ", ,") == "10.0.0.1")
        #expect(Self.client(proxies, "X-Real-IP", "203.0.113.7") == "10.0.0.1")
        // The Forwarded header is not read when the proxies write X-Forwarded-For (a client could have sent it).
        #expect(Self.client(proxies, "Forwarded", "for=203.0.113.7") == "10.0.0.1")
    }

    @Test("the headers of an untrusted peer are never used")
    func untrustedPeer() throws {
        let proxies = try Self.proxies(["10.0.0.0/8"])
        #expect(Self.client(proxies, peer: "192.0.2.50", "X-Forwarded-For", "203.0.113.7") == "192.0.2.50")
        #expect(Self.client(TrustedProxies(), peer: "10.0.0.1", "X-Forwarded-For", "203.0.113.7") == "10.0.0.1")
        let forwarded = try Self.proxies(["10.0.0.0/8"], header: .forwarded)
        #expect(Self.client(forwarded, peer: "192.0.2.50", "Forwarded", "for=203.0.113.7") == "192.0.2.50")
        // A peer the server could not name stays unnamed.
        #expect(proxies.client(peer: nil, headers: ["X-Forwarded-For": "203.0.113.7"]) == nil)
        #expect(proxies.client(peer: "not an address", headers: ["X-Forwarded-For": "203.0.113.7"]) == "not an address")
    }

    @Test("RFC 7239 Forwarded: for= with quoted IPv6 and ports, obfuscated identifiers, other parameters")
    func forwarded() throws {
        let proxies = try Self.proxies(["10.0.0.0/8", "::1"], header: .forwarded)
        let name = "Forwarded"
        #expect(Self.client(proxies, name, "for=192.0.2.60;proto=http;by=203.0.113.43") == "192.0.2.60")
        #expect(Self.client(proxies, name, "For=\"[2001:db8:cafe::17]:4711\"") == "2001:db8:cafe::17")
        #expect(Self.client(proxies, name, "for=\"[2001:db8::1]\"") == "2001:db8::1")
        #expect(Self.client(proxies, name, "for=\"192.0.2.43:47011\"") == "192.0.2.43")
        #expect(Self.client(proxies, name, "for=192.0.2.43, for=198.51.100.17") == "198.51.100.17")
        #expect(Self.client(proxies, name, "for=192.0.2.43, for=10.3.3.3;by=10.0.0.1") == "192.0.2.43")
        #expect(Self.client(proxies, name, "for=192.0.2.43", "for=\"[::1]:80\"") == "192.0.2.43")
        #expect(Self.client(proxies, name, "for=_hidden, for=10.3.3.3") == "_hidden")
        #expect(Self.client(proxies, name, "for=\"_SEVKISEK:_port\"") == "_SEVKISEK")
        #expect(Self.client(proxies, name, "for=unknown, for=10.3.3.3") == "10.3.3.3")
        #expect(Self.client(proxies, name, "for=\"\\1\\9\\2.0.2.9\"") == "192.0.2.9")  // quoted-pairs
        #expect(Self.client(proxies, name, " for=192.0.2.60 ; proto=https , ") == "192.0.2.60")
        // A broken element on the left is skipped over; the walk never reaches it.
        #expect(Self.client(proxies, name, "for=\"nonsense, for=;;=, for=192.0.2.60") == "10.0.0.1")
        #expect(Self.client(proxies, name, "for=nonsense;x, for=192.0.2.60") == "192.0.2.60")
        #expect(Self.client(proxies, name, "garbage, for=192.0.2.60") == "192.0.2.60")
        // Unreadable where it matters: the peer.
        for bad in [
            "for=2001:db8::1", "for=[2001:db8::1]", "for=\"[2001:db8::1\"", "for=\"[192.0.2.1]\"", "for=192.0.2.1:80",
            "for=\"192.0.2.1:99999x\"", "for=", "for=\"\"", "for=a;for=192.0.2.1", "for=192.0.2.1;for=192.0.2.2",
            "proto=https", "for=192.0.2.1 junk", "for=\"192.0.2.1", "for=\"192.0.2.1\\", "for=_", "for=_a/b",
            "for=\"" + String(repeating: "1", count: 300) + "\"", "=192.0.2.1",
            "for=\"_" + String(repeating: "a", count: 70) + "\"",
        ] {
            #expect(Self.client(proxies, name, bad) == "10.0.0.1", "\(bad.prefix(60))")
        }
        // X-Forwarded-For is not read when the proxies write Forwarded.
        #expect(Self.client(proxies, "X-Forwarded-For", "203.0.113.7") == "10.0.0.1")
    }

    @Test("hostile headers: huge, thousands of hops, control bytes, invalid UTF-8; each answered quickly")
    func hostile() throws {
        let xff = try Self.proxies(["10.0.0.0/8"])
        let forwarded = try Self.proxies(["10.0.0.0/8"], header: .forwarded)
        // Thousands of hops a client made up on the left, then the proxies' own: only the right end is walked.
        let made = Array(repeating: "198.51.100.1", count: 1_000).joined(separator: ", ")
        #expect(Self.client(xff, "X-Forwarded-For", made + ", 203.0.113.7, 10.1.1.1") == "203.0.113.7")
        let madeForwarded = Array(repeating: "for=198.51.100.1", count: 900).joined(separator: ", ")
        #expect(Self.client(forwarded, "Forwarded", madeForwarded + ", for=203.0.113.7") == "203.0.113.7")
        // More trusted hops than are walked: the peer.
        let trusted = Array(repeating: "10.1.1.1", count: TrustedProxies.maximumHops + 1).joined(separator: ",")
        #expect(Self.client(xff, "X-Forwarded-For", "203.0.113.7," + trusted) == "10.0.0.1")
        let fewer = Array(repeating: "10.1.1.1", count: TrustedProxies.maximumHops - 1).joined(separator: ",")
        #expect(Self.client(xff, "X-Forwarded-For", "203.0.113.7," + fewer) == "203.0.113.7")
        // Longer than the limit: not used at all.
        let huge = String(repeating: "1", count: ForwardingHeader.maximumLength) + ", 203.0.113.7"
        #expect(Self.client(xff, "X-Forwarded-For", huge) == "10.0.0.1")
        #expect(Self.client(forwarded, "Forwarded", String(repeating: "for=\"", count: 3_000)) == "10.0.0.1")
        #expect(Self.client(forwarded, "Forwarded", String(repeating: ";", count: 15_000)) == "10.0.0.1")
        #expect(Self.client(forwarded, "Forwarded", String(repeating: ",", count: 15_000)) == "10.0.0.1")
        #expect(Self.client(forwarded, "Forwarded", String(repeating: "\\", count: 15_000)) == "10.0.0.1")
        for garbage in [
            "\u{0}\u{1}\r\n", "for=\u{0}", "203.0.113.7\u{7f}", "ü, 203.0.113.7\u{301}", "\u{FEFF}203.0.113.7",
        ] {
            #expect(Self.client(xff, "X-Forwarded-For", garbage) == "10.0.0.1", "\(garbage.debugDescription)")
            #expect(Self.client(forwarded, "Forwarded", garbage) == "10.0.0.1", "\(garbage.debugDescription)")
        }
        // Random bytes never crash and give either the peer or an address that was in the header.
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("for=\"[]:;,_ 0123456789.abcdef\\unknown".utf8)
        for _ in 0..<2_000 {
            let bytes = (0..<Int.random(in: 0..<60, using: &generator)).map { _ in alphabet.randomElement()! }
            let text = String(decoding: bytes, as: UTF8.self)
            for proxies in [xff, forwarded] {
                let client = try #require(Self.client(proxies, proxies.header.rawValue, text))
                #expect(client == "10.0.0.1" || IPAddress(client) != nil || client.hasPrefix("_"), "\(text)")
            }
        }
    }

    /// Answers with the request's client and peer addresses.
    struct Echo: Responder {
        func respond(to request: HTTPRequest) async -> HTTPResponse {
            .text("\(request.clientAddress ?? "-") \(request.peerAddress ?? "-")")
        }
    }

    @Test("over loopback: a trusted peer's X-Forwarded-For names the client; an untrusted peer's is ignored")
    func overLoopback() async throws {
        let proxies = try Self.proxies(["127.0.0.1"])
        try await HTTPServer.withServer(configuration: .init(port: 0, trustedProxies: proxies), responder: Echo()) {
            server in
            let port = server.port
            let answers = try await offPool { () throws -> [String] in
                var answers: [String] = []
                for source in ["127.0.0.1", "127.0.0.2"] {
                    let connection = try RawConnection(port: port, from: source)
                    try connection.send(
                        "GET / HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 198.51.100.1, 203.0.113.7\r\n\r\n")
                    answers.append(try connection.readResponse().map { String(decoding: $0.body, as: UTF8.self) } ?? "")
                }
                return answers
            }
            #expect(answers == ["203.0.113.7 127.0.0.1", "127.0.0.2 127.0.0.2"])
        }
    }

    @Test("the per-client connection limit spares trusted proxies and still holds for every other peer")
    func connectionLimit() async throws {
        let configuration = HTTPServer.Configuration(
            port: 0, perClientConnectionLimit: 2, trustedProxies: try Self.proxies(["127.0.0.1"]))
        try await HTTPServer.withServer(configuration: configuration, responder: Echo()) { server in
            let port = server.port
            let (proxyAnswers, thirdClosed, fourthAnswer) = try await offPool {
                () throws -> ([String], Bool, String?) in
                let request = "GET / HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 203.0.113.7\r\n\r\n"
                // The proxy: more connections than the limit, all answered.
                let proxy = try (0..<5).map { _ in try RawConnection(port: port) }
                for connection in proxy { try connection.send(request) }
                let proxyAnswers = try proxy.map {
                    try $0.readResponse().map { String(decoding: $0.body, as: UTF8.self) } ?? "closed"
                }
                // Another peer: two, then the third is closed on accept.
                let first = try RawConnection(port: port, from: "127.0.0.2")
                let second = try RawConnection(port: port, from: "127.0.0.2")
                try first.send(request)
                try second.send(request)
                _ = try first.readResponse()
                _ = try second.readResponse()
                let third = try RawConnection(port: port, from: "127.0.0.2")
                let thirdClosed = try third.isClosedByPeer()
                // Once one closes, it may connect again.
                first.shutdownWrite()
                _ = try first.isClosedByPeer()
                var fourthAnswer: String?
                for _ in 0..<50 where fourthAnswer == nil {
                    let fourth = try RawConnection(port: port, from: "127.0.0.2")
                    try? fourth.send(request)
                    fourthAnswer = try? fourth.readResponse().map { String(decoding: $0.body, as: UTF8.self) }
                    if fourthAnswer == nil { usleep(20_000) }
                }
                return (proxyAnswers, thirdClosed, fourthAnswer)
            }
            #expect(proxyAnswers == Array(repeating: "203.0.113.7 127.0.0.1", count: 5))
            #expect(thirdClosed)
            #expect(fourthAnswer == "127.0.0.2 127.0.0.2")
        }
    }
}
