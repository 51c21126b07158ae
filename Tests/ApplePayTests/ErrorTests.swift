import ApplePay
import Foundation
import Foundations
import Testing

@Suite("ApplePay errors")
struct ErrorTests {
    @Test("AmountError: lowerCamelCase codes that match in catch clauses; equality on the code")
    func amountError() throws {
        let usd = try #require(Currency(code: "USD"))
        var caught: [String] = []
        for text in ["abc", "1.999", String(repeating: "9", count: 30)] {
            do {
                _ = try usd.minorUnits(of: try usd.parseAmount(text))
            } catch AmountError.Code.notADecimal {
                caught.append("notADecimal")
            } catch AmountError.Code.tooManyDecimals {
                caught.append("tooManyDecimals")
            } catch AmountError.Code.overflow {
                caught.append("overflow")
            } catch {
                caught.append("unexpected \(error)")
            }
        }
        #expect(caught == ["notADecimal", "tooManyDecimals", "overflow"])
        #expect(
            [AmountError.Code.notADecimal, .tooManyDecimals, .overflow].map(\.rawValue)
                == ["notADecimal", "tooManyDecimals", "overflow"])
        #expect(AmountError(.overflow, "a") == AmountError(.overflow, "b"))
        #expect(AmountError(.overflow, "too large").description == "overflow: too large")
    }

    @Test("RequestDocumentError: notJSON matches in a catch clause")
    func requestDocumentError() {
        var matched = false
        do {
            _ = try PaymentRequest.problems(decodingJSON: Data("{".utf8))
        } catch RequestDocumentError.Code.notJSON {
            matched = true
        } catch {}
        #expect(matched)
        #expect(RequestDocumentError.Code.notJSON.rawValue == "notJSON")
    }
}
