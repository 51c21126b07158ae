import ApplePay
import Foundation
import JSONCoding
import Testing

@testable import MerchantHTTP

@Suite("The payment answer written without Codable")
struct PaymentAnswerJSONTests {
    typealias Answer = PaymentRoutes.PaymentAnswer

    static let answers: [Answer] = [
        Answer(status: "success"),
        Answer(status: "success", orderId: "ord_0193a1b2c3d4e5f60718293a", orderSecret: "00ff"),
        Answer(
            status: "success", orderId: "ord_1", orderSecret: "s",
            orderDetails: PaymentOrderDetails(
                orderTypeIdentifier: "order.com.example", orderIdentifier: "ord_1",
                webServiceURL: "https://shop.example/wallet/", authenticationToken: "5d0c\u{1}\"/\\")),
        Answer(
            status: "failure", orderId: nil,
            errors: [
                PaymentError(code: .unknown, message: "Nothing was charged — «é» 👕\n"),
                PaymentError(code: .shippingContactInvalid, contactField: .postalCode),
                PaymentError(code: "madeUp"),
            ],
            error: .init(code: "paymentDeclined", message: "The card was declined (\"x\"); nothing was charged.")),
        Answer(
            status: "success", orderId: "ord_2", orderSecret: "t", subscriptionId: "sub_1", subscriptionSecret: "u",
            managementURL: "https://shop.example/v1/subscriptions/sub_1/manage?secret=u", merchantToken: true),
        Answer(status: "success", merchantToken: false),
        Answer(status: "failure", errors: []),
    ]

    @Test("byte for byte what SortedJSONEncoder writes, and Foundation's JSONEncoder")
    func sameBytes() throws {
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for answer in Self.answers {
            #expect(answer.json == (try SortedJSONEncoder().encode(answer)))
            #expect(answer.json == (try foundation.encode(answer)))
        }
    }
}
