import Foundation
import Foundations
import HTTPCore
import Logging
import MerchantCore
import MerchantWallet
import WalletOrders

/// The orders web service under `webServiceURL` (the group at `/wallet/v1`), as Wallet calls it:
/// - `GET v1/devices/{deviceIdentifier}/registrations/{orderTypeIdentifier}?ordersModifiedSince=`: the device's
///   orders changed since then, `{orderIdentifiers, lastModified}` (204 when none);
/// - `POST`/`DELETE v1/devices/{deviceIdentifier}/registrations/{orderTypeIdentifier}/{orderIdentifier}` with
///   `{pushToken}`: 201 new, 200 existing; `DELETE` 200 (also when there was nothing to remove);
/// - `GET v1/orders/{orderTypeIdentifier}/{orderIdentifier}`: the signed package as
///   `application/vnd.apple.finance.order`, with `Last-Modified` and `ETag`; 304 only when nothing changed: for an
///   `If-None-Match` naming the current tag, else for an `If-Modified-Since` at or after the order's version's second
///   (each version of an order has a second of its own, see the store's `nextOrderVersion`);
/// - `POST v1/log`: `{logs: [...]}` written to the server's log.
/// Per-order calls are in a group behind ``AppleOrderAuthentication``. The device listing carries no token in
/// Apple's protocol; it shows only order identifiers the device registered itself.
struct WalletRoutes: RouteCollection {
    let service: WalletOrdersService
    let store: any OrderStore
    let configuration: StoreConfiguration
    let logger: Logger
    let clock: @Sendable () -> Date

    func register(on group: inout RouterGroup) {
        group.add(.get, "/devices/{device}/registrations/{type}") { try await listRegistrations($0, $1) }
        group.group("", middleware: [AppleOrderAuthentication(service: service, store: store)]) { orders in
            let registration = "/devices/{device}/registrations/{type}/{order}"
            orders.add(.post, registration) { try await register($0, $1) }
            orders.add(.delete, registration) { try await unregister($0, $1) }
            orders.add(.get, "/orders/{type}/{order}") { try await latestOrder($0, $1) }
        }
        group.add(.post, "/log") { request, _ in try await log(request) }
    }

    func listRegistrations(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        struct Answer: Encodable {
            var orderIdentifiers: [String]
            var lastModified: String
        }
        let device = try context.parameter("device")
        let type = try context.parameter("type")
        // Apple's URL template names the query `ordersModifiedSince`, its parameter table `lastModified`: either.
        let since = (request.query["ordersModifiedSince"] ?? request.query["lastModified"]).flatMap { Int64($0) }
        var identifiers: [String] = []
        var latest: Int64 = since ?? 0
        do {
            for registration in try await store.registrations(
                deviceIdentifier: device, orderTypeIdentifier: type, orderID: nil)
            {
                guard let order = try await store.order(id: registration.orderID) else { continue }
                let modified = Int64((order.updatedAt.timeIntervalSince1970 * 1000).rounded())
                if since.map({ modified > $0 }) ?? true {
                    identifiers.append(order.id)
                    latest = max(latest, modified)
                }
            }
        } catch {
            throw .storeUnavailable()
        }
        if identifiers.isEmpty { return HTTPResponse(status: 204) }
        return .encoding(Answer(orderIdentifiers: identifiers, lastModified: String(latest)))
    }

    func register(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable { var pushToken: String }
        let order = try context.identity(as: Order.self)
        let body = try JSONBody.decode(Body.self, from: request)
        let device = try context.parameter("device")
        guard !device.isEmpty, device.count <= 128, !body.pushToken.isEmpty, body.pushToken.count <= 256 else {
            throw .invalidRequest("deviceIdentifier and pushToken must be 1 to 128 and 1 to 256 characters.")
        }
        let isNew: Bool
        do {
            isNew = try await store.registerDevice(
                DeviceRegistration(
                    deviceIdentifier: device, pushToken: body.pushToken,
                    orderTypeIdentifier: service.orderTypeIdentifier, orderID: order.id))
        } catch {
            throw .storeUnavailable()
        }
        var response = HTTPResponse(status: isNew ? 201 : 200)
        response.logFields["orderId"] = order.id
        return response
    }

    func unregister(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        let order = try context.identity(as: Order.self)
        let device = try context.parameter("device")
        // Apple lists 200 (unregistered) and 401 only: a device that was not registered is unregistered too.
        do {
            _ = try await store.unregisterDevice(
                deviceIdentifier: device, orderTypeIdentifier: service.orderTypeIdentifier, orderID: order.id)
        } catch {
            throw .storeUnavailable()
        }
        return HTTPResponse(status: 200)
    }

    func latestOrder(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> HTTPResponse {
        let order = try context.identity(as: Order.self)
        let version = Self.version(of: order)
        var response: HTTPResponse
        if Self.isNotModified(request, version: version) {
            response = HTTPResponse(status: 304)
        } else {
            let steps: [FulfillmentStep]
            do {
                steps = try await store.fulfillments(orderID: order.id)
            } catch {
                throw .storeUnavailable()
            }
            let package: Data
            do {
                package = try service.package(
                    for: order, fulfillments: steps, configuration: configuration, host: request.headers["Host"],
                    now: clock())
            } catch {
                logger.error("could not sign an order package", metadata: ["orderId": "\(order.id)"])
                throw HTTPError(status: 500, code: "signingFailed", message: "The order package could not be signed.")
            }
            response = HTTPResponse(status: 200, headers: ["Content-Type": OrderPackage.mediaType], body: package)
        }
        response.headers["Last-Modified"] = HTTPDate.format(Date(unixMilliseconds: version / 1000 * 1000))
        response.headers["ETag"] = Self.entityTag(version)
        response.logFields["orderId"] = order.id
        return response
    }

    /// An order's version: its `updatedAt` in Unix milliseconds (the store gives each version its own second).
    static func version(of order: Order) -> Int64 { order.updatedAt.unixMilliseconds }

    /// The strong entity tag of a version: `"<milliseconds>"`.
    static func entityTag(_ version: Int64) -> String { "\"\(version)\"" }

    /// Whether the device's copy is this version (RFC 9110 §13.2.2: `If-None-Match`, when sent, decides alone).
    static func isNotModified(_ request: HTTPRequest, version: Int64) -> Bool {
        if let tags = request.headers["If-None-Match"] {
            let current = entityTag(version)
            return tags.split(separator: ",").contains {
                let tag = $0.trimmingCharacters(in: .whitespaces)
                return tag == "*" || tag == current || tag == "W/" + current
            }
        }
        guard let since = request.headers["If-Modified-Since"].flatMap(HTTPDate.parse) else { return false }
        return version / 1000 <= since.unixMilliseconds / 1000
    }

    func log(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable { var logs: [String] }
        let body = try JSONBody.decode(Body.self, from: request)
        for line in body.logs.prefix(100) {
            logger.info("wallet device log", metadata: ["message": "\(line.prefix(1000))"])
        }
        return HTTPResponse(status: 200)
    }
}

/// Middleware of the Wallet group's per-order calls: the path's `{type}` and `{order}` name an order of this
/// server's order type, and the request carries `Authorization: AppleOrder <authenticationToken>` of that order
/// (compared in constant time): `401 unauthorized` when it is missing or wrong, and also for an unknown order or
/// another order type (Apple lists 200 and 401 only; no answer tells which orders exist). The order becomes the context's ``RequestContext/identity`` for the handler.
struct AppleOrderAuthentication: Middleware {
    let service: WalletOrdersService
    let store: any OrderStore

    func handle(_ request: HTTPRequest, context: RequestContext, next: Next) async throws -> HTTPResponse {
        var context = context
        context.identity = try await authorizedOrder(request, context)
        return try await next(request, context)
    }

    /// The order named by the path, once the request's `AppleOrder` token matches it.
    private func authorizedOrder(_ request: HTTPRequest, _ context: RequestContext) async throws(HTTPError) -> Order {
        let header = request.headers["Authorization"] ?? ""
        let prefix = "AppleOrder "
        guard header.hasPrefix(prefix) else { throw Self.unauthorized() }
        let presented = String(header.dropFirst(prefix.count))
        let id = try context.parameter("order")
        guard try context.parameter("type") == service.orderTypeIdentifier else { throw Self.unauthorized() }
        let order: Order?
        do {
            order = try await store.order(id: id)
        } catch {
            throw .storeUnavailable()
        }
        guard let order else { throw Self.unauthorized() }
        guard constantTimeEqual(presented, service.authenticationToken(for: order)) else { throw Self.unauthorized() }
        return order
    }

    static func unauthorized() -> HTTPError {
        var error = HTTPError(
            status: 401, code: "unauthorized",
            message: "This call needs Authorization: AppleOrder <authenticationToken>.")
        error.headers["WWW-Authenticate"] = "AppleOrder"
        return error
    }
}

/// HTTP dates (RFC 9110 IMF-fixdate), as `Last-Modified` and `If-Modified-Since` carry them.
public enum HTTPDate {
    private static func formatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }

    public static func format(_ date: Date) -> String { formatter().string(from: date) }
    public static func parse(_ text: String) -> Date? { formatter().date(from: text) }
}
