import Foundation
import HTTPCore
import HTTPTypes
import Hummingbird
import MerchantHTTP
import NIOCore

/// The merchant API in a Hummingbird 2 application: a `RouteCollection` of every route the ``MerchantAPI`` was built
/// with (all of them, or the parts it was given: checkout and payments, webhooks, Apple's notifications, Wallet's web
/// service, admin), added at the root of the app's router beside the app's own routes, inside the app's middleware.
///
/// ```swift
/// router.addRoutes(MerchantRoutes(api, context: ShopRequestContext.self).collection)
/// ```
///
/// Each request is turned into the API's `HTTPRequest` (method, percent-decoded path, query, header fields, `Host`
/// from the request's authority, the body collected up to ``maximumBodySize``: past it the API answers
/// `413 payloadTooLarge` itself), answered by the API (its own security headers, logging and metrics, content-type
/// rule, authentication), and its `HTTPResponse` turned back (status, header fields, body).
///
/// What it needs from the app's `RequestContext`: nothing beyond Hummingbird's protocol. When the context also
/// conforms to `RemoteAddressRequestContext` (set `remoteAddress` from `source.channel.remoteAddress`), its address
/// is the request's peer, and the client address of rate limits and log lines is read from it through
/// ``trustedProxies``; without it the API sees no client address and limits no client.
public struct MerchantRoutes<Context: Hummingbird.RequestContext>: Sendable {
    /// What answers the requests: the merchant API.
    public let responder: any Responder
    /// The routes sent to ``responder``: its methods and full patterns.
    public let endpoints: [HTTPCore.Router.Endpoint]
    /// The largest request body read (the libmicrohttpd server's default).
    public var maximumBodySize: Int
    /// The proxies whose forwarding header names the client; none by default: the peer is the client.
    public var trustedProxies: TrustedProxies

    /// Routes answered by `api`, for an app whose requests have a `Context`.
    public init(
        _ api: MerchantAPI, context: Context.Type = Context.self, maximumBodySize: Int = 64 * 1024,
        trustedProxies: TrustedProxies = TrustedProxies()
    ) {
        self.init(
            responder: api, endpoints: api.endpoints, maximumBodySize: maximumBodySize, trustedProxies: trustedProxies)
    }

    /// Routes answered by any `HTTPCore` responder (a `Router`, with its ``HTTPCore/Router/endpoints``).
    public init(
        responder: any Responder, endpoints: [HTTPCore.Router.Endpoint], context: Context.Type = Context.self,
        maximumBodySize: Int = 64 * 1024, trustedProxies: TrustedProxies = TrustedProxies()
    ) {
        self.responder = responder
        self.endpoints = endpoints
        self.maximumBodySize = maximumBodySize
        self.trustedProxies = trustedProxies
    }

    /// The API's routes (its path patterns, `{name}` parameters and all), for `router.addRoutes(_:)` at the root.
    public var collection: Hummingbird.RouteCollection<Context> {
        let collection = Hummingbird.RouteCollection(context: Context.self)
        for endpoint in endpoints {
            guard let method = HTTPTypes.HTTPRequest.Method(endpoint.method.rawValue) else { continue }
            collection.on(RouterPath(endpoint.pattern), method: method) { request, context in
                try await respond(to: request, context: context)
            }
        }
        return collection
    }

    /// The API's answer to one of the app's requests.
    public func respond(to request: Request, context: Context) async throws -> Response {
        let ours = try await ourRequest(from: request, context: context)
        if let limit = ours.bodyLimitExceeded, !responder.answersOversizedRequests {
            return Self.response(HTTPError.payloadTooLarge(limit: limit).response)
        }
        return Self.response(await responder.respond(to: ours))
    }

    /// Our response as Hummingbird's.
    static func response(_ answer: HTTPCore.HTTPResponse) -> Response {
        var fields = HTTPFields()
        for (name, value) in answer.headers {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        return Response(
            status: .init(code: answer.status), headers: fields,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    /// Hummingbird's request as the API's: the body read within ``maximumBodySize``.
    func ourRequest(from request: Request, context: Context) async throws -> HTTPCore.HTTPRequest {
        var headers = HTTPHeaders()
        for field in request.headers { headers.add(name: field.name.canonicalName, value: field.value) }
        if headers["Host"] == nil, let authority = request.head.authority { headers["Host"] = authority }
        var ours = HTTPCore.HTTPRequest(
            method: HTTPMethod(rawValue: request.method.rawValue),
            path: request.uri.path.removingPercentEncoding ?? request.uri.path,
            query: Self.arguments(of: request.uri.query), headers: headers)
        do {
            ours.body = Data(try await request.body.collect(upTo: maximumBodySize).readableBytesView)
        } catch is NIOTooManyBytesError {
            ours.bodyLimitExceeded = maximumBodySize
        }
        let peer = (context as? any RemoteAddressRequestContext)?.remoteAddress?.ipAddress
        ours.peerAddress = peer
        ours.clientAddress = trustedProxies.client(peer: peer, headers: headers)
        return ours
    }

    /// A query's arguments decoded (`+` is a space), a name given twice keeping its last value: as the
    /// libmicrohttpd server reads them.
    static func arguments(of query: String?) -> [String: String] {
        var arguments: [String: String] = [:]
        for pair in (query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ text: Substring) -> String {
                let spaced = text.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            arguments[decoded(parts[0])] = parts.count > 1 ? decoded(parts[1]) : ""
        }
        return arguments
    }
}
