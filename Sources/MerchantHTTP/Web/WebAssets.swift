import Foundation

/// The web pages' files, kept in `Web/Assets/` (plain HTML, CSS and JavaScript that any tool can read) and compiled
/// into the binary by Package.swift's `.embedInCode` resources: nothing is read from disk at run time, so the binary
/// serves them wherever it is copied.
enum WebAssets {
    /// `checkout.html`: the checkout page at `/`; `<!--SDK-->` marks where Apple's SDK tag goes when it is turned on.
    static let checkoutHTML = String(decoding: PackageResources.checkout_html, as: UTF8.self)
    /// `checkout.css`, served at `/checkout.css`.
    static let checkoutCSS = Data(PackageResources.checkout_css)
    /// `checkout.js`, served at `/checkout.js`.
    static let checkoutJS = Data(PackageResources.checkout_js)
    /// `page.html`: the layout of the customer's pages (``CustomerPage``), around `subscription.html` or `order.html`.
    static let pageHTML = String(decoding: PackageResources.page_html, as: UTF8.self)
    /// `subscription.html`: the subscription management page, a `PageTemplate`.
    static let subscriptionHTML = String(decoding: PackageResources.subscription_html, as: UTF8.self)
    /// `order.html`: the customer's order page (a Wallet order's `orderManagementURL`), a `PageTemplate`.
    static let orderHTML = String(decoding: PackageResources.order_html, as: UTF8.self)
}
