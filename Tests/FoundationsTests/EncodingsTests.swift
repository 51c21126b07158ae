import Foundation
import Foundations
import Testing

@Suite("Foundations: hex, base64url, constant-time comparison, Unix milliseconds, coded errors")
struct EncodingsTests {
    @Test("hex is lowercase, two digits a byte")
    func hex() {
        #expect(lowercaseHex([0x00, 0x0f, 0xa0, 0xff]) == "000fa0ff")
        #expect(lowercaseHex([UInt8]()) == "")
        #expect(randomHex(bytes: 16).count == 32)
        #expect(randomHex(bytes: 16) != randomHex(bytes: 16))
    }

    @Test("time-ordered hex: 24 digits, the time first, so later identifiers sort after earlier ones")
    func timeOrdered() throws {
        let at = Date(timeIntervalSince1970: 1_796_083_200).unixMilliseconds  // 2026-12-01
        let id = timeOrderedHex(milliseconds: at)
        #expect(id.count == 24)
        #expect(id.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(UInt64(id.prefix(11), radix: 16) == UInt64(at))
        #expect(timeOrderedHex(milliseconds: at) != timeOrderedHex(milliseconds: at))
        // Each millisecond sorts after the one before, whatever the random part.
        let ids = (0..<500).map { timeOrderedHex(milliseconds: at + Int64($0)) }
        #expect(ids == ids.sorted())
        // The last millisecond its 11 digits hold (in the year 2527), and a time before 1970 taken as 1970.
        #expect(timeOrderedHex(milliseconds: 0xFFF_FFFF_FFFF).hasPrefix("fffffffffff"))
        #expect(timeOrderedHex(milliseconds: -5).hasPrefix("00000000000"))
    }

    @Test("base64url has no padding and the URL alphabet, and reads padded or unpadded text")
    func base64URL() {
        let bytes = Data([0xfb, 0xff, 0xfe, 0x01])
        #expect(Base64URL.encode(bytes) == "-__-AQ")
        #expect(Base64URL.decode("-__-AQ") == bytes)
        #expect(Base64URL.decode("-__-AQ==") == bytes)
        #expect(Base64URL.decode("not base64!") == nil)
    }

    @Test("constant-time comparison: equal strings only, never an empty expected value")
    func constantTime() {
        #expect(constantTimeEqual("secret-token", "secret-token"))
        #expect(!constantTimeEqual("secret-tokem", "secret-token"))
        #expect(!constantTimeEqual("secret", "secret-token"))
        #expect(!constantTimeEqual("", ""))
    }

    @Test("Unix milliseconds round to the nearest and come back")
    func milliseconds() {
        let date = Date(timeIntervalSince1970: 1_900_000_000.1234)
        #expect(date.unixMilliseconds == 1_900_000_000_123)
        #expect(Date(unixMilliseconds: 1_900_000_000_123).unixMilliseconds == 1_900_000_000_123)
        #expect(Date(unixMilliseconds: -1).unixMilliseconds == -1)
    }

    struct ExampleError: CodedError {
        let code: Code
        let message: String
    }

    @Test("coded errors: equal by code, described as code: message, caught by code")
    func codedError() {
        #expect(ExampleError(code: .first, message: "a") == ExampleError(code: .first, message: "b"))
        #expect(ExampleError(code: .first, message: "a") != ExampleError(code: .second, message: "a"))
        #expect("\(ExampleError(code: .second, message: "went wrong"))" == "second: went wrong")
        do {
            throw ExampleError(code: .second, message: "x")
        } catch ExampleError.Code.first {
            Issue.record("matched the wrong code")
        } catch ExampleError.Code.second {
            // expected
        } catch {
            Issue.record("no code matched")
        }
    }
}

extension ErrorCode<EncodingsTests.ExampleError> {
    static var first: Self { Self("first") }
    static var second: Self { Self("second") }
}
