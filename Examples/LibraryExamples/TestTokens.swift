// Example 4 of docs/LIBRARY.md: the sandbox in a merchant's own tests. It plays Apple's part: a root CA, Apple-shaped
// intermediate and signing certificates, the merchant's Payment Processing certificates, and real signed, encrypted
// tokens for any amount.
import ApplePay
import Foundation
import PaymentToken
import Sandbox

// [sandbox]
/// A sandbox for one test run, in a new temporary folder: keys and certificates as PEM files, laid out as the
/// merchant's server expects them (`payment-processing-ec.pem` and `payment-processing-ec.key.pem`, …).
func makeTestSandbox() throws -> Sandbox {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-\(UUID().uuidString)")
    return try Sandbox.create(at: folder, merchantIdentifier: "merchant.com.example.shop")
}

/// The server's start-up path, pointed at the sandbox: its Payment Processing files, and a verifier that trusts
/// the sandbox's root instead of Apple's.
func makeTestHandler(_ sandbox: Sandbox) throws -> PaymentHandler {
    func file(_ name: String) -> URL { sandbox.folder.appendingPathComponent(name) }
    return try PaymentHandler(
        certificateFiles: [
            (file(Sandbox.File.paymentProcessingEC), file(Sandbox.File.paymentProcessingECKey)),
            (file(Sandbox.File.paymentProcessingRSA), file(Sandbox.File.paymentProcessingRSAKey)),
        ],
        verifier: PaymentTokenVerifier(roots: [sandbox.rootCertificate]))
}

/// The body Apple Pay JS would post for `order`: an `ApplePayPayment` whose token the sandbox signed and encrypted
/// to the merchant's EC_v1 (or RSA_v1) certificate, with a Visa test card.
/// - Parameters:
///   - amount: what the token says was authorized; the order's total unless a test wants a mismatch.
///   - signingTime: when Apple signed it; a test for stale tokens goes back more than five minutes.
func paymentBody(
    for order: Order, sandbox: Sandbox, version: TokenVersion = .ecV1, amount: Money? = nil,
    signingTime: Date = Date()
) throws -> Data {
    guard let card = SandboxCard.testCard(network: .visa) else { throw CocoaError(.featureUnsupported) }
    let request = MintRequest(
        card: card, amount: (amount ?? order.total).decimal, currencyCode: order.total.currency.code,
        applicationData: .base64(order.applicationData), signingTime: signingTime)
    let token = try sandbox.mint(request, version: version)
    let payment = Payment(token: try JSONValue(parsing: try token.jsonData()))
    return try JSONEncoder().encode(payment)
}
// [/sandbox]
