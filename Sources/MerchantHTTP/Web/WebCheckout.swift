import Foundation
import HTTPCore
import MerchantCore

/// The checkout page at `/`: plain HTML, CSS and JavaScript files in `Web/Assets/`, compiled into the binary (so it
/// carries them wherever it is copied; see `WebAssets`), served with a strict Content-Security-Policy that allows only
/// this server (and, when a merchant turns it on, Apple's Apple Pay JS SDK host).
///
/// The page runs Apple Pay JS where `window.ApplePaySession` exists; in sandbox mode it draws a sandbox sheet
/// otherwise, which calls the same endpoints in the same order. `GET /v1/web/config` tells the page which.
public struct WebCheckout: Sendable {
    /// What the page does beyond the catalog and the cart.
    public struct Settings: Sendable, Equatable {
        /// Sandbox mode with a sandbox gateway: the validation URL the sandbox sheet sends to the merchant-session
        /// endpoint (`nil`: the server uses its configured gateway).
        public var sandboxValidationURL: String?
        /// Load Apple's Apple Pay JS SDK, for browsers without `ApplePaySession`.
        public var loadsApplePayJSSDK: Bool

        public init(sandboxValidationURL: String? = nil, loadsApplePayJSSDK: Bool = false) {
            self.sandboxValidationURL = sandboxValidationURL
            self.loadsApplePayJSSDK = loadsApplePayJSSDK
        }
    }

    /// Where Apple serves the Apple Pay JS SDK.
    public static let sdkOrigin = "https://applepay.cdn-apple.com"
    public static let sdkURL = sdkOrigin + "/jsapi/1.latest/apple-pay-sdk.js"

    public let settings: Settings
    public let storeName: String
    public let currencyCode: String
    public let sandboxMode: Bool

    /// The page of `configuration`'s store (its name and currency go to `GET /v1/web/config`).
    public init(settings: Settings, configuration: StoreConfiguration, sandboxMode: Bool) {
        self.settings = settings
        storeName = configuration.storeName
        currencyCode = configuration.currencyCode
        self.sandboxMode = sandboxMode
    }

    /// The page's Content-Security-Policy: nothing from another host, no inline script or style, no framing.
    public var contentSecurityPolicy: String {
        let sdk = settings.loadsApplePayJSSDK ? " " + Self.sdkOrigin : ""
        return [
            "default-src 'none'", "script-src 'self'\(sdk)", "style-src 'self'", "img-src 'self' data:",
            "connect-src 'self'\(sdk)", "frame-src\(sdk.isEmpty ? " 'none'" : sdk)", "font-src 'self'",
            "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
        ].joined(separator: "; ")
    }

    /// The page, its style sheet and its script: built once, when the router is set up (the server's only
    /// substitution: Apple's SDK tag for `<!--SDK-->`; everything else the page reads from `GET /v1/web/config`).
    public var resources: [StaticResource] {
        var headers = HTTPHeaders()
        headers["Content-Security-Policy"] = contentSecurityPolicy
        headers["Referrer-Policy"] = "same-origin"
        headers["X-Frame-Options"] = "DENY"
        let sdkTag =
            settings.loadsApplePayJSSDK
            ? "<script src=\"\(PageTemplate.escape(Self.sdkURL))\" crossorigin=\"anonymous\" defer></script>" : ""
        let html = WebAssets.checkoutHTML.replacingOccurrences(of: "<!--SDK-->", with: sdkTag)
        return [
            StaticResource(
                path: "/", contentType: "text/html; charset=utf-8", body: Data(html.utf8), headers: headers),
            StaticResource(
                path: "/checkout.css", contentType: "text/css; charset=utf-8", body: WebAssets.checkoutCSS,
                cacheControl: "public, max-age=300", headers: headers),
            StaticResource(
                path: "/checkout.js", contentType: "text/javascript; charset=utf-8", body: WebAssets.checkoutJS,
                cacheControl: "public, max-age=300", headers: headers),
        ]
    }

    /// `GET /v1/web/config`: what the page needs to know about this server.
    func configResponse() -> HTTPResponse {
        struct Answer: Encodable {
            var storeName: String
            var currencyCode: String
            var sandbox: Bool
            var sandboxValidationURL: String?
            var applePayJSSDK: Bool
        }
        var response = HTTPResponse.encoding(
            Answer(
                storeName: storeName, currencyCode: currencyCode, sandbox: sandboxMode,
                sandboxValidationURL: sandboxMode ? settings.sandboxValidationURL : nil,
                applePayJSSDK: settings.loadsApplePayJSSDK))
        response.headers["Cache-Control"] = "no-store"
        return response
    }
}
