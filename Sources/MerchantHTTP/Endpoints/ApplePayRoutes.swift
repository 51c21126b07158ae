import Foundation
import HTTPCore
import MerchantIntegrations

/// Apple Pay on the web: `POST /v1/apple-pay/merchant-session` (a merchant session from Apple for the page) and
/// `GET /.well-known/apple-developer-merchantid-domain-association` (the file Apple checks the domain with).
struct ApplePayRoutes: RouteCollection {
    let validator: MerchantValidator
    /// The domain association file's text; `nil`: 404.
    let domainAssociation: String?

    func register(on group: inout RouterGroup) {
        group.add(.post, "/v1/apple-pay/merchant-session") { request, _ in try await merchantSession(request) }
        group.add(.get, "/.well-known/apple-developer-merchantid-domain-association") { _, _ in
            try domainAssociationFile()
        }
    }

    func merchantSession(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        struct Body: Decodable { var validationURL: String? }
        let body = request.body.isEmpty ? Body(validationURL: nil) : try JSONBody.decode(Body.self, from: request)
        let session = try await validator.session(
            validationURL: body.validationURL, requestHost: request.headers["Host"])
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: session)
    }

    func domainAssociationFile() throws(HTTPError) -> HTTPResponse {
        guard let domainAssociation else {
            throw .notFound("This server has no Apple Pay domain association file configured.")
        }
        return .text(domainAssociation)
    }
}
