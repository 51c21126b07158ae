import Foundation
import HTTPCore
import Logging
import MerchantCore

/// Middleware that writes one log line and records metrics for every request the router sees (404, 405 and 413
/// included): method, route pattern, status, duration, request id, the checkout and order ids and the error
/// code. Fields come from the context, the thrown error and the response's `logFields`: never card data. The line
/// goes through swift-log (`info`, `warning` for a 4xx, `error` for a 5xx), the counts through ``MerchantMetrics``.
public struct RequestLogging: Middleware {
    public let logger: Logger
    public let metrics: MerchantMetrics

    public func handle(_ request: HTTPRequest, context: RequestContext, next: Next) async throws -> HTTPResponse {
        let clock = ContinuousClock()
        let start = clock.now
        var code: String?
        let response: HTTPResponse
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            code = error.code
            response = error.response
        } catch {
            code = HTTPError.internalError().code
            response = HTTPError.internalError().response
        }
        let elapsed = clock.now - start
        // Labels from a fixed set: the router's patterns, the methods HTTP defines; anything else is `other`.
        let route = context.route ?? "other"
        let method = MerchantMetrics.methodLabel(request.method.rawValue)
        metrics.recordRequest(route: route, method: method, status: response.status, duration: elapsed)
        let level: Logger.Level = response.status >= 500 ? .error : response.status >= 400 ? .warning : .info
        guard logger.logLevel <= level else { return response }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        var line: Logger.Metadata = [
            "method": .string(method), "route": .string(route), "status": .stringConvertible(response.status),
            "durationMs": .stringConvertible((seconds * 1_000_000).rounded() / 1000),
            "requestId": .string(context.requestID),
        ]
        if let id = context.parameters["id"], id.hasPrefix("chk_") { line["checkoutId"] = .string(id) }
        if let code { line["code"] = .string(code) }
        for (key, value) in response.logFields { line[key] = .string(value) }
        logger.log(level: level, "request", metadata: line)
        return response
    }
}
