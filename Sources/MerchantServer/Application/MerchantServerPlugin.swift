import Foundation
import MerchantCore
import MerchantHTTP

/// Something installed into the server at start-up from outside its production modules. Sandbox mode
/// (`MerchantSandbox.SandboxMode`, installed by `applepay serve --sandbox`, `applepay demo` and the tests) is one:
/// the sandbox processor in process, the sandbox's test wallet and token routes, and its gateway trusted. A
/// production server installs none.
public protocol MerchantServerPlugin: Sendable {
    /// Called once, after the keys are loaded and before the store opens.
    /// - Parameters:
    ///   - configuration: the server's configuration.
    ///   - needsProcessor: whether neither the caller nor the configuration names a payment processor.
    /// - Throws: `ServerStartError` naming what to fix.
    func install(_ configuration: MerchantServerConfiguration, needsProcessor: Bool) async throws(ServerStartError)
        -> PluginInstallation
}

/// What a ``MerchantServerPlugin`` adds to the server.
public struct PluginInstallation: Sendable {
    /// The payment processor, when the configuration names none.
    public var processor: (any PaymentProcessor)?
    /// A gateway standing in for Apple's (merchant validation and the merchant-token API), as an `https://` base URL.
    public var gatewayBaseURL: String?
    /// PEM certificates trusted for that gateway besides the configured roots.
    public var gatewayTrustedRootsPEM: Data?
    /// Routes added to the merchant API.
    public var routes: [any MerchantAPIPlugin]
    /// Called when the server stops, after the HTTP server has finished.
    public var stop: @Sendable () async -> Void

    public init(
        processor: (any PaymentProcessor)? = nil, gatewayBaseURL: String? = nil, gatewayTrustedRootsPEM: Data? = nil,
        routes: [any MerchantAPIPlugin] = [], stop: @escaping @Sendable () async -> Void = {}
    ) {
        self.processor = processor
        self.gatewayBaseURL = gatewayBaseURL
        self.gatewayTrustedRootsPEM = gatewayTrustedRootsPEM
        self.routes = routes
        self.stop = stop
    }
}
