// Examples/HummingbirdShop (docs/LIBRARY.md, "Mounting the merchant API"): a Hummingbird 2 app that was a shop
// before Apple Pay (its own routes and middleware) adds the merchant API with ApplePayHummingbird, on SQLite.
import ApplePayHummingbird
import HTTPTypes
import Hummingbird
import Logging
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantStore
import NIOCore

// [context]
/// The shop's request context: Hummingbird's basic one, plus the peer's address, which the merchant API uses for
/// its per-client rate limits and log lines.
public struct ShopRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
// [/context]

/// The shop's own middleware: every answer names the shop (the merchant API's answers too, since its routes are
/// the router's like any other).
public struct ShopHeader<Context: RequestContext>: RouterMiddleware {
    public init() {}

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var response = try await next(request, context)
        response.headers[HTTPField.Name("X-Shop")!] = "HummingbirdShop"
        return response
    }
}

/// The shop as it was: its own routes and middleware.
public func shopRouter() -> Router<ShopRequestContext> {
    let router = Router(context: ShopRequestContext.self)
    router.add(middleware: ShopHeader())
    router.get("/hello") { _, _ in "Hello from the shop." }
    return router
}

// [mount]
/// The shop with Apple Pay: the merchant's services over an SQLite file, and the merchant API's checkout and
/// payment routes, its web pages, the providers' webhooks and Apple's notifications beside the shop's own routes.
/// - Parameters:
///   - storePath: the SQLite file of checkouts and orders (created when missing).
///   - processor: where payments are charged (`Processors`' Stripe, Adyen or Checkout.com connector in production).
///   - tokenOpener: decrypts tokens with the merchant's Payment Processing keys.
///   - validator: obtains merchant sessions from Apple with the Merchant Identity certificate.
public func buildApplication(
    configuration: StoreConfiguration, storePath: String, processor: any PaymentProcessor,
    tokenOpener: any PaymentTokenOpening, validator: MerchantValidator,
    logger: Logger = Logger(label: "shop.applepay"), port: Int = 8080
) throws -> (application: Application<RouterResponder<ShopRequestContext>>, services: MerchantServices) {
    let services = MerchantServices(
        configuration: configuration, store: try SQLiteOrderStore(path: storePath), processor: processor,
        tokenOpener: tokenOpener, validator: validator, logger: logger)
    let api = MerchantAPI(
        services: services, rateLimits: RateLimits(), parts: [.checkout, .pages, .webhooks, .appleNotifications])
    let router = shopRouter()
    router.addRoutes(MerchantRoutes(api, context: ShopRequestContext.self).collection)
    let application = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
    return (application, services)
}
// [/mount]
