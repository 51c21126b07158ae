import Foundation
import HTTPCore

/// What the customer's pages (the order page, the subscription pages) share: one layout, `Web/Assets/page.html`
/// (the head with the checkout page's style sheet, the store's name as the header), around each page's template,
/// and the headers they are served with. The layout's values are `title`, `storeName` and `referrer`.
enum CustomerPage {
    /// The layout with `body` (a page's template text) in its `<main>`, parsed.
    static func template(_ body: String) -> PageTemplate {
        // The templates are compiled into the binary and checked by the tests: they cannot fail to parse at run time.
        try! PageTemplate(WebAssets.pageHTML.replacingOccurrences(of: "<!--CONTENT-->", with: body))
    }

    /// Nothing from another host, no script at all, no framing; `images` and `forms` say where the page's images
    /// may come from and its forms may post to.
    static func contentSecurityPolicy(images: String, forms: String) -> String {
        [
            "default-src 'none'", "style-src 'self'", "img-src \(images)", "form-action \(forms)", "base-uri 'none'",
            "frame-ancestors 'none'",
        ].joined(separator: "; ")
    }

    /// An HTML answer that is not cached (the address holds a secret) nor framed.
    static func response(
        _ html: String, status: Int = 200, contentSecurityPolicy: String, referrerPolicy: String
    ) -> HTTPResponse {
        var response = HTTPResponse.text(html, status: status, contentType: "text/html; charset=utf-8")
        response.headers["Content-Security-Policy"] = contentSecurityPolicy
        response.headers["Cache-Control"] = "no-store"
        response.headers["Referrer-Policy"] = referrerPolicy
        response.headers["X-Frame-Options"] = "DENY"
        return response
    }
}
