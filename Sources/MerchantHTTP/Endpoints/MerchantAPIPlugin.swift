import Foundation
import HTTPCore
import Logging
import MerchantCore

/// Routes that something outside the merchant API adds to it, with the services they may use. Sandbox mode's
/// test wallet and token minting (`MerchantSandbox`) is one; a production server installs none.
public protocol MerchantAPIPlugin: Sendable {
    /// Whether the plug-in plays Apple: the checkout page then draws the sandbox sheet, and the subscription
    /// scheduler's clock may be moved from the admin API.
    var standsInForApple: Bool { get }
    /// Adds the plug-in's routes to `group`: the JSON API's root group (a `POST` must carry
    /// `Content-Type: application/json`), inside the API's security headers and request logging.
    func register(on group: inout RouterGroup, services: MerchantServices)
}
