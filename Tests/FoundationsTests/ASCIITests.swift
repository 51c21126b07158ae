import Foundations
import Testing

@Suite("ASCII")
struct ASCIITests {
    @Test("hex digits of either case, nothing else")
    func hexDigits() {
        let values = (0...255).map { ASCII.hexDigitValue(UInt8($0)) }
        #expect(values.compactMap { $0 }.count == 22)
        #expect(Array("09afAF".utf8).map(ASCII.hexDigitValue) == [0, 9, 10, 15, 10, 15])
        #expect(Array("gG/:@`".utf8).map(ASCII.hexDigitValue) == [nil, nil, nil, nil, nil, nil])
    }

    @Test("texts equal but for ASCII case; other bytes and lengths differ")
    func caseInsensitiveEquality() {
        #expect(ASCII.equalIgnoringCase("Content-Type".utf8, "content-TYPE".utf8))
        #expect(ASCII.equalIgnoringCase("".utf8, "".utf8))
        #expect(!ASCII.equalIgnoringCase("Host".utf8, "Hos".utf8))
        #expect(!ASCII.equalIgnoringCase("[".utf8, "{".utf8))  // 0x5B and 0x7B differ only in the case bit
        #expect(!ASCII.equalIgnoringCase("é".utf8, "É".utf8))
    }
}
