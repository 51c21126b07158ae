import Foundation
import HTTPCore
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import Testing

@Suite("The checkout page's resources and the sandbox gateway allow-list")
struct WebCheckoutTests {
    let page = WebCheckout(
        settings: .init(), configuration: .demo, sandboxMode: true)

    @Test("serves /, the style sheet and the script with their content types, a strict CSP and ETags")
    func resources() throws {
        let byPath = Dictionary(uniqueKeysWithValues: page.resources.map { ($0.path, $0) })
        let expected = ["/": "text/html", "/checkout.css": "text/css", "/checkout.js": "text/javascript"]
        for (path, type) in expected {
            let resource = try #require(byPath[path])
            let response = resource.response(to: HTTPRequest(method: .get, path: path))
            #expect(response.status == 200)
            #expect(response.headers["Content-Type"]?.hasPrefix(type) == true)
            let csp = try #require(response.headers["Content-Security-Policy"])
            #expect(csp.contains("default-src 'none'") && csp.contains("script-src 'self';"))
            #expect(!csp.contains("unsafe-inline") && !csp.contains("https:"))
            let etag = try #require(response.headers["ETag"])
            var again = HTTPRequest(method: .get, path: path)
            again.headers["If-None-Match"] = etag
            #expect(resource.response(to: again).status == 304)
        }
        let html = String(decoding: try #require(byPath["/"]).body, as: UTF8.self)
        #expect(!html.contains("<script>") && !html.contains("style=") && !html.contains("http"))
        #expect(html.contains("role=\"dialog\"") && html.contains("Apple Pay (Sandbox)"))
    }

    @Test("with Apple's SDK on, the CSP allows that one host and the page loads it")
    func sdk() throws {
        let withSDK = WebCheckout(
            settings: .init(loadsApplePayJSSDK: true), configuration: .demo, sandboxMode: false)
        #expect(withSDK.contentSecurityPolicy.contains("script-src 'self' https://applepay.cdn-apple.com;"))
        let html = String(decoding: try #require(withSDK.resources.first { $0.path == "/" }).body, as: UTF8.self)
        #expect(html.contains(WebCheckout.sdkURL))
    }

    @Test("the sandbox gateway is allowed only when configured, and only at its own origin")
    func allowList() {
        func validator(_ gateway: String?) -> MerchantValidator {
            MerchantValidator(
                merchantIdentifier: "merchant.com.example", displayName: "Shop", domain: nil,
                gatewayBaseURL: "https://apple-pay-gateway.apple.com", identity: nil, sandboxGatewayURL: gateway)
        }
        let url = "https://localhost:8443/paymentservices/paymentSession"
        #expect(!validator(nil).allows(url))
        #expect(validator("https://localhost:8443").allows(url))
        #expect(!validator("https://localhost:8443").allows("https://localhost:9443/paymentservices/paymentSession"))
        #expect(!validator("https://localhost:8443").allows("http://localhost:8443/paymentservices/paymentSession"))
        #expect(validator(nil).allows("https://apple-pay-gateway.apple.com/paymentservices/paymentSession"))
    }
}
