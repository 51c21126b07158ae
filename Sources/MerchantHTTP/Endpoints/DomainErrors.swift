import Foundations
import HTTPCore
import Logging
import MerchantCore

/// The one table from domain errors to HTTP errors: every route collection answers a store, checkout or subscription
/// error the same way.
extension HTTPError {
    /// A checkout error: 400 for what the client sent, 422 for what the catalog cannot price.
    package init(_ error: CheckoutError) {
        switch error.code {
        case .unknownProduct, .invalidQuantity, .emptyCheckout, .unknownShippingMethod, .planNotAlone:
            self.init(status: 400, code: error.code.rawValue, message: error.message)
        default:
            self.init(status: 422, code: error.code.rawValue, message: error.message)
        }
    }

    /// A subscription service's refusal: `404` for an unknown one, `409` for the rest.
    init(_ refusal: SubscriptionService.Refusal) {
        switch refusal {
        case .notFound: self = .notFound("No such subscription.")
        case .notLive(let status):
            self.init(status: 409, code: "subscriptionNotLive", message: "The subscription is \(status.rawValue).")
        case .notAutomaticReload:
            self.init(status: 409, code: "notAutomaticReload", message: "Not an automatic-reload subscription.")
        case .conflict:
            self.init(status: 409, code: "conflict", message: "The subscription changed meanwhile; try again.")
        case .noMerchantToken:
            self.init(
                status: 409, code: "noMerchantToken",
                message: "The subscription has no merchant token at Apple (a device token, or no gateway configured).")
        case .gatewayFailed:
            self.init(
                status: 502, code: "merchantTokenGatewayFailed",
                message: "Apple's merchant-token gateway refused or failed.")
        }
    }

    /// A store error: 404 `notFound`, 409 `conflict`, anything else 503 `storeUnavailable` (logged by its code,
    /// never its message, which may name the database).
    package static func store(_ error: OrderStoreError, logger: Logger) -> HTTPError {
        switch error.code {
        case .notFound: return .notFound(error.message)
        case .conflict: return HTTPError(status: 409, code: "conflict", message: error.message)
        default:
            logger.error("store failure", metadata: ["code": "\(error.code.rawValue)"])
            return .storeUnavailable()
        }
    }
}

/// Runs a store call, its error answered by ``HTTPError/store(_:logger:)``.
package func storing<T>(logger: Logger, _ body: () async throws(OrderStoreError) -> T) async throws(HTTPError)
    -> T
{
    do {
        return try await body()
    } catch {
        throw .store(error, logger: logger)
    }
}
