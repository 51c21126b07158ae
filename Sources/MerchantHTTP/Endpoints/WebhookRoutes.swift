import Foundation
import HTTPCore
import MerchantCore
import ProviderWebhooks

/// The providers' webhooks: `POST /webhooks/stripe`, `/webhooks/adyen` and `/webhooks/checkout`, one per
/// configured provider. The raw body's signature is checked first (outside the JSON rule: the signature, not the
/// content type, says who sent it); an unsigned or mis-signed delivery changes nothing, is answered `400
/// invalidSignature` and counted in `/metrics`. A signed one is read into provider events and applied through
/// ``MerchantCore/ProviderEvents`` (once per event id); a store failure answers `503` so the provider retries.
/// Adyen is answered `[accepted]`, as it requires.
struct WebhookRoutes: RouteCollection {
    let endpoints: [WebhookEndpoint]
    let events: ProviderEvents
    let metrics: MerchantMetrics
    let clock: @Sendable () -> Date

    func register(on group: inout RouterGroup) {
        for endpoint in endpoints {
            group.add(.post, "/webhooks/\(endpoint.provider.rawValue)") { request, _ in
                try await receive(request, endpoint)
            }
        }
    }

    func receive(_ request: HTTPRequest, _ endpoint: WebhookEndpoint) async throws(HTTPError) -> HTTPResponse {
        let provider = endpoint.provider.rawValue
        let header = endpoint.signatureHeader.flatMap { request.headers[$0] }
        let verdict = endpoint.verify(body: request.body, signatureHeader: header, now: clock())
        guard verdict.isValid else {
            metrics.recordWebhookRejection(provider: provider, reason: verdict.reason.rawValue)
            var error = HTTPError(
                status: 400, code: "invalidSignature", message: "The webhook's signature does not verify.")
            error.field = verdict.reason.rawValue
            throw error
        }
        guard let parsed = ProviderEventReader.events(endpoint.provider, body: request.body) else {
            metrics.recordWebhook(provider: provider, outcome: "malformed")
            throw HTTPError.badRequest("The signed body is not a \(provider) event.", code: "malformedWebhook")
        }
        if parsed.isEmpty { metrics.recordWebhook(provider: provider, outcome: "notHandled") }
        var outcomes: [String] = []
        for event in parsed {
            do {
                let result = try await events.apply(event)
                metrics.recordWebhook(provider: provider, outcome: result.outcome.rawValue)
                outcomes.append(result.outcome.rawValue)
            } catch {
                metrics.recordWebhook(provider: provider, outcome: "storeError")
                throw HTTPError(
                    status: 503, code: "storeUnavailable", message: "The event could not be recorded; send it again.")
            }
        }
        var response =
            endpoint.provider == .adyen
            ? HTTPResponse.text("[accepted]") : HTTPResponse.encoding(["received": true])
        response.logFields["webhookOutcomes"] = outcomes.joined(separator: ",")
        return response
    }
}
