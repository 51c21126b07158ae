import ApplePay
import Foundation
import PaymentSheet
import Testing

/// The merchant's order id travels from its answer to `paymentauthorized` into the transcript and the outcome.
@Suite("PaymentSession: order reference")
struct OrderReferenceTests {
    /// A merchant that makes an order for each payment and answers with its id, like the merchant server.
    struct OrderingMerchant: PaymentSheetDelegate {
        var status: PaymentAuthorizationStatus = .success
        var errors: [PaymentError]? = nil

        func didAuthorizePayment(_ payment: Payment) async throws -> PaymentAuthorizationResult {
            try await authorizePayment(payment).result
        }

        func authorizePayment(_ payment: Payment) async throws -> PaymentAuthorizationAnswer {
            PaymentAuthorizationAnswer(
                result: PaymentAuthorizationResult(status: status, errors: errors), orderID: "ord_0123456789abcdef")
        }
    }

    /// A merchant that implements only Apple Pay JS's `onpaymentauthorized`.
    struct PlainMerchant: PaymentSheetDelegate {
        func didAuthorizePayment(_ payment: Payment) async throws -> PaymentAuthorizationResult {
            PaymentAuthorizationResult(status: .success)
        }
    }

    static func session(_ merchant: some PaymentSheetDelegate) async throws -> PaymentSession {
        try PaymentSession(
            request: Fixture.request(), wallet: Fixture.wallet(), delegate: merchant,
            tokenIssuer: SandboxTokenIssuer(sandbox: try await SharedSandbox.get()), clock: VirtualClock(),
            configuration: PaymentSession.Configuration(initiative: .inApp))
    }

    @Test("a success's order id is on the paymentauthorized answer, the finished line and the outcome")
    func success() async throws {
        let session = try await Self.session(OrderingMerchant())
        let outcome = await session.run([.authorize])
        #expect(outcome.kind == .success)
        #expect(outcome.orderID == "ord_0123456789abcdef")
        let transcript = await session.transcript
        let authorized = try #require(transcript.first { $0.event == "paymentauthorized" })
        #expect(authorized.fields["answer"]?["orderId"]?.stringValue == "ord_0123456789abcdef")
        #expect(authorized.fields["answer"]?["status"]?.stringValue == "success")
        #expect(transcript.last?.event == "finished")
        #expect(transcript.last?.fields["orderId"]?.stringValue == "ord_0123456789abcdef")
        #expect(transcript.last?.jsonLine.contains(#""orderId":"ord_0123456789abcdef""#) == true)
        for line in transcript.map(\.jsonLine) {
            #expect(!line.contains("4761120010000492") && !line.contains("paymentData"))
        }
    }

    @Test("a refused payment's order id stays on the finished line after the user closes the sheet")
    func refused() async throws {
        let merchant = OrderingMerchant(
            status: .failure, errors: [PaymentError(code: .unknown, message: "Declined: insufficient funds.")])
        let session = try await Self.session(merchant)
        let outcome = await session.run([.authorize])
        #expect(outcome.kind == .failure)
        #expect(outcome.reason == "authorizationFailed")
        #expect(outcome.orderID == "ord_0123456789abcdef")
        #expect(await session.transcript.last?.fields["orderId"]?.stringValue == "ord_0123456789abcdef")
    }

    @Test("a merchant that names no order adds no orderId")
    func noOrder() async throws {
        let session = try await Self.session(PlainMerchant())
        let outcome = await session.run([.authorize])
        #expect(outcome.kind == .success)
        #expect(outcome.orderID == nil)
        let transcript = await session.transcript
        #expect(transcript.allSatisfy { !$0.jsonLine.contains("orderId") })
    }
}
