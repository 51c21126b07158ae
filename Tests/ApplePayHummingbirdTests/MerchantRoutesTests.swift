import Foundation
import Foundations
import HTTPCore
import Hummingbird
import HummingbirdTesting
import Logging
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantSandbox
import MerchantStore
import MerchantTestSupport
import NIOCore
import PaymentToken
import Testing

@testable import ApplePayHummingbird

/// A request context that knows its peer, as an app's would to give the API client addresses.
struct PeerContext: Hummingbird.RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// Answers with what it was given, as JSON: what the adapter made of Hummingbird's request.
struct Echo: Responder {
    struct Seen: Codable {
        var method: String
        var path: String
        var query: [String: String]
        var host: String?
        var custom: [String]
        var body: String
        var bodyLimitExceeded: Int?
        var clientAddress: String?
        var peerAddress: String?
    }

    var answersOversized = true
    var answersOversizedRequests: Bool { answersOversized }

    func respond(to request: HTTPCore.HTTPRequest) async -> HTTPCore.HTTPResponse {
        let seen = Seen(
            method: request.method.rawValue, path: request.path, query: request.query, host: request.headers["Host"],
            custom: request.headers.filter { HTTPHeaders.sameName($0.name, "X-Custom") }.map(\.value),
            body: String(decoding: request.body, as: UTF8.self), bodyLimitExceeded: request.bodyLimitExceeded,
            clientAddress: request.clientAddress, peerAddress: request.peerAddress)
        var response = HTTPCore.HTTPResponse(
            status: 207, headers: ["Content-Type": "application/json", "X-Answer": "one"],
            body: (try? JSONEncoder().encode(seen)) ?? Data())
        response.headers.add(name: "X-Answer", value: "two")
        return response
    }

    static let endpoints = [
        HTTPCore.Router.Endpoint(method: .get, pattern: "/echo/{id}"),
        HTTPCore.Router.Endpoint(method: .post, pattern: "/echo"),
    ]
}

@Suite("ApplePayHummingbird: the merchant API's routes in a Hummingbird app")
struct MerchantRoutesTests {
    static func echoApp<Context: Hummingbird.RequestContext>(
        _ context: Context.Type, maximumBodySize: Int = 64, trustedProxies: TrustedProxies = TrustedProxies(),
        answersOversized: Bool = true
    ) -> some ApplicationProtocol where Context.Source == ApplicationRequestContextSource {
        let router = Hummingbird.Router(context: Context.self)
        router.get("/hello") { _, _ in "hello" }
        router.addRoutes(
            MerchantRoutes(
                responder: Echo(answersOversized: answersOversized), endpoints: Echo.endpoints, context: Context.self,
                maximumBodySize: maximumBodySize, trustedProxies: trustedProxies
            ).collection)
        return Application(router: router)
    }

    static func seen(_ response: TestResponse) throws -> Echo.Seen {
        try JSONDecoder().decode(Echo.Seen.self, from: Data(response.body.readableBytesView))
    }

    @Test("method, percent-decoded path, decoded query, header fields, Host and body reach the responder")
    func requestConverted() async throws {
        try await Self.echoApp(BasicRequestContext.self).test(.router) { client in
            try await client.execute(
                uri: "/echo/chk%5Fabc?secret=a%2Bb&note=two+words&secret=last&flag", method: .get,
                headers: [.init("X-Custom")!: "first"]
            ) { response in
                #expect(response.status.code == 207)
                let seen = try Self.seen(response)
                #expect(seen.method == "GET")
                #expect(seen.path == "/echo/chk_abc")
                #expect(seen.query == ["secret": "last", "note": "two words", "flag": ""])
                // Hummingbird keeps HTTP/1's Host as the request's authority; the API reads it as Host.
                #expect(seen.host == "localhost")
                #expect(seen.custom == ["first"])
                #expect(seen.body.isEmpty && seen.bodyLimitExceeded == nil)
                // BasicRequestContext knows no peer: no client address.
                #expect(seen.clientAddress == nil && seen.peerAddress == nil)
            }
            try await client.execute(uri: "/echo", method: .post, body: ByteBuffer(string: "{\"a\":1}")) { response in
                let seen = try Self.seen(response)
                #expect(seen.body == "{\"a\":1}")
            }
        }
    }

    @Test("status, every header field (a name given twice included) and body come back as the responder gave them")
    func responseConverted() async throws {
        try await Self.echoApp(BasicRequestContext.self).test(.router) { client in
            try await client.execute(uri: "/echo/x", method: .get) { response in
                #expect(response.status.code == 207)
                #expect(response.headers[.contentType] == "application/json")
                #expect(response.headers[values: .init("X-Answer")!] == ["one", "two"])
                let seen = try Self.seen(response)
                #expect(seen.path == "/echo/x")
            }
        }
    }

    @Test("a body over the limit reaches the responder empty, flagged; a responder that does not want it gets none")
    func bodyLimit() async throws {
        let big = ByteBuffer(string: String(repeating: "x", count: 65))
        try await Self.echoApp(BasicRequestContext.self).test(.router) { client in
            try await client.execute(
                uri: "/echo", method: .post, body: ByteBuffer(string: String(repeating: "x", count: 64))
            ) { response in
                let seen = try Self.seen(response)
                #expect(seen.body.count == 64)
            }
            try await client.execute(uri: "/echo", method: .post, body: big) { response in
                let seen = try Self.seen(response)
                #expect(seen.body.isEmpty && seen.bodyLimitExceeded == 64)
            }
        }
        try await Self.echoApp(BasicRequestContext.self, answersOversized: false).test(.router) { client in
            try await client.execute(uri: "/echo", method: .post, body: big) { response in
                #expect(response.status.code == 413)
                #expect(String(buffer: response.body).contains("\"payloadTooLarge\""))
            }
        }
    }

    @Test("the app's own routes still answer, and paths the API does not have are the app's 404")
    func appRoutesStay() async throws {
        try await Self.echoApp(BasicRequestContext.self).test(.router) { client in
            try await client.execute(uri: "/hello", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == "hello")
            }
            try await client.execute(uri: "/nowhere", method: .get) { #expect($0.status == .notFound) }
        }
    }

    @Test("over loopback, a RemoteAddressRequestContext's peer is the client, or the one a trusted proxy names")
    func clientAddress() async throws {
        let forwarded: HTTPFields = [.init("X-Forwarded-For")!: "203.0.113.7"]
        let loopback = ["127.0.0.1", "::1"]
        try await Self.echoApp(PeerContext.self).test(.live) { client in
            try await client.execute(uri: "/echo/1", method: .get, headers: forwarded) { response in
                let seen = try Self.seen(response)
                #expect(loopback.contains(seen.peerAddress ?? ""))
                #expect(seen.clientAddress == seen.peerAddress, "no trusted proxy: the forwarding header is ignored")
            }
        }
        let proxies = TrustedProxies([IPNetwork("127.0.0.0/8")!, IPNetwork("::1/128")!])
        try await Self.echoApp(PeerContext.self, trustedProxies: proxies).test(.live) { client in
            try await client.execute(uri: "/echo/1", method: .get, headers: forwarded) { response in
                let seen = try Self.seen(response)
                #expect(loopback.contains(seen.peerAddress ?? ""))
                #expect(seen.clientAddress == "203.0.113.7")
            }
        }
    }

    @Test("the merchant API itself: its routes, security headers, JSON rule and 413 through its own middleware")
    func merchantAPI() async throws {
        let services = MerchantServices(
            configuration: .demo, store: try SQLiteOrderStore(path: ":memory:"), processor: SandboxProcessor(),
            tokenOpener: RefusingOpener(),
            validator: MerchantValidator(
                merchantIdentifier: "merchant.test", displayName: "Test", domain: nil,
                gatewayBaseURL: "https://apple-pay-gateway.apple.com", identity: nil),
            logger: .silent)
        let router = Hummingbird.Router()
        router.addRoutes(
            MerchantRoutes(MerchantAPI(services: services, parts: .checkout), maximumBodySize: 1024).collection)
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/v1/products", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.cacheControl] == "no-store")
                #expect(String(buffer: response.body).contains("MUG-01"))
            }
            let order = ByteBuffer(string: #"{"items": [{"sku": "MUG-01", "quantity": 1}]}"#)
            try await client.execute(uri: "/v1/checkouts", method: .post, body: order) { response in
                #expect(response.status.code == 415)
            }
            try await client.execute(
                uri: "/v1/checkouts", method: .post, headers: [.contentType: "application/json"], body: order
            ) { response in
                #expect(response.status == .created)
                #expect(String(buffer: response.body).contains("\"clientSecret\""))
            }
            try await client.execute(
                uri: "/v1/checkouts", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: String(repeating: " ", count: 2048))
            ) { response in
                #expect(response.status.code == 413)
                #expect(String(buffer: response.body).contains("\"payloadTooLarge\""))
            }
            // A part not mounted is not there: the app's router answers.
            try await client.execute(uri: "/healthz", method: .get) { #expect($0.status == .notFound) }
        }
    }

    @Test("query arguments are read as the libmicrohttpd server reads them")
    func queryArguments() {
        #expect(MerchantRoutes<BasicRequestContext>.arguments(of: nil) == [:])
        #expect(
            MerchantRoutes<BasicRequestContext>.arguments(of: "a=1&b=x%20y&c=p+q&a=2&d&=e&f=%ZZ")
                == ["a": "2", "b": "x y", "c": "p q", "d": "", "": "e", "f": "%ZZ"])
    }
}

/// Opens no token (these tests never pay).
struct RefusingOpener: PaymentTokenOpening {
    func open(_ token: Data, expecting expectations: PaymentTokenExpectations) throws(PaymentTokenError)
        -> OpenedPaymentToken
    { throw PaymentTokenError(.signatureInvalid, "no tokens here") }
}
