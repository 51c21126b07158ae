// Example 2 of docs/LIBRARY.md: verify and decrypt the token Apple Pay JS posts, with keys loaded once at start-up
// and one decryptor shared by every request.
import ApplePay
import Foundation
import Foundations
import PaymentToken

// [startup]
/// What the server keeps from start-up: one decryptor, shared by every request (it is `Sendable` and caches the
/// verified Apple certificate chain).
final class PaymentHandler: Sendable {
    let decryptor: PaymentTokenDecryptor

    /// Loads the Payment Processing certificate (PEM; convert Apple's `.cer` with
    /// `openssl x509 -inform DER -in apple_pay.cer -out payment-processing.pem`) and its private key, once.
    /// - Parameters:
    ///   - certificateFiles: one `(certificate, key)` pair of PEM files per active Payment Processing certificate
    ///     (two while rotating: each token names the one it was made for).
    ///   - verifier: nil in production (Apple Root CA - G3, bundled; a 5-minute window); tests pass one that
    ///     trusts a sandbox root.
    /// - Throws: the file's error when one cannot be read; `PaymentTokenError.merchantKeyMismatch` when a file is
    ///   not a certificate or key, or a key is not its certificate's. A server should refuse to start.
    init(certificateFiles: [(certificate: URL, key: URL)], verifier: PaymentTokenVerifier? = nil) throws {
        var merchants: [MerchantIdentity] = []
        for files in certificateFiles {
            let certificatePEM = try String(contentsOf: files.certificate, encoding: .utf8)
            let keyPEM = try String(contentsOf: files.key, encoding: .utf8)
            merchants.append(try MerchantIdentity(certificatePEM: certificatePEM, privateKeyPEM: keyPEM))
        }
        decryptor = try PaymentTokenDecryptor(merchants: merchants, verifier: verifier ?? PaymentTokenVerifier())
    }
}
// [/startup]

// [handler]
/// What the server tells the page (and its logs) after a successful payment: nothing secret.
struct Receipt: Sendable, Codable, Hashable {
    var orderId: String
    /// `"35.69 USD"`.
    var amount: String
    /// `header.transactionId` (hex): the key to refuse a second charge with the same token.
    var transactionId: String
    /// `"Visa"`, from the token's `paymentMethod`: Apple does not sign it, so it is for display only.
    var network: String?
    var lastFour: String
    /// `3DSecure` or `EMV`.
    var paymentDataType: String
}

extension PaymentHandler {
    /// `POST /orders/{id}/payment` with the `ApplePayPayment` Apple Pay JS gave `onpaymentauthorized`
    /// (`{"token": {"paymentData": …, "paymentMethod": …, "transactionIdentifier": …}, "shippingContact": …}`).
    ///
    /// The token must be Apple's (signature, chain, marker extensions), recent (5 minutes), for one of our keys,
    /// made for this order (its `applicationData`) and for exactly the order's amount and currency.
    /// - Throws: `PaymentTokenError`; its `code` says which check failed (see `refusal(for:)`).
    func handlePayment(body: Data, order: Order) throws(PaymentTokenError) -> Receipt {
        let payment: Payment
        let tokenJSON: Data
        do {
            payment = try JSONDecoder().decode(Payment.self, from: body)
            tokenJSON = try JSONEncoder().encode(payment.token)
        } catch {
            throw PaymentTokenError(.malformedToken, "the body is not an ApplePayPayment with a token object")
        }
        let expectations = PaymentTokenExpectations(
            applicationData: .bytes(Data(order.id.utf8)),  // the bytes whose base64 the request carried
            amount: order.total.minorUnits,
            currencyCode: order.total.currency.code)
        let opened = try decryptor.decrypt(jsonData: tokenJSON, expecting: expectations)

        // Here `opened.payload` (device PAN, cryptogram, ECI) goes to the payment processor, once per
        // `opened.verification.transactionId`. Never log it: its `description` masks the PAN, its JSON does not.
        return Receipt(
            orderId: order.id, amount: order.total.description, transactionId: opened.verification.transactionId,
            network: payment.token["paymentMethod"]?["network"]?.stringValue, lastFour: opened.payload.lastFour,
            paymentDataType: opened.payload.paymentDataType)
    }
}

/// The answer to a refused token: 400 and `{"error": {"code": "amountMismatch"}}`. Every code is about what the
/// page sent (malformed, not Apple's, tampered with, too old, not for us, not for this order or amount), so the
/// page shows Apple Pay's generic failure; the `message` says which check failed and belongs in the server's log
/// (it never holds key bytes, the PAN or the cryptogram). A run of `merchantKeyMismatch` means the page used a
/// Payment Processing certificate this server did not load.
func refusal(for error: PaymentTokenError) -> (status: Int, body: Data) {
    let body = #"{"error":{"code":"\#(error.code.rawValue)"}}"#
    return (400, Data(body.utf8))
}
// [/handler]
