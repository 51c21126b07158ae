import Foundation
import Testing

@testable import PaymentToken

/// The payload read straight from its bytes gives what the tree reader gives, or leaves the payload to it.
@Suite("The payload reader reads what the tree reader reads, or nothing")
struct PayloadReaderTests {
    static func tree(_ bytes: [UInt8]) -> PaymentTokenPayload? {
        guard let json = try? TokenJSON.parse(bytes) else { return nil }
        return try? PaymentTokenPayload(json: json)
    }

    static func direct(_ bytes: [UInt8]) -> PaymentTokenPayload? {
        bytes.withUnsafeBytes(PaymentTokenPayload.reading)
    }

    static let threeDSecure = #"""
        {"applicationPrimaryAccountNumber":"4761120010000492","applicationExpirationDate":"291231",
         "currencyCode":"840","transactionAmount":1099,"cardholderName":"Zoë \"Q\" Public",
         "deviceManufacturerIdentifier":"040010030273","paymentDataType":"3DSecure",
         "paymentData":{"onlinePaymentCryptogram":"AQIDBAUGBwgJCgsMDQ4PEBESExQ=","eciIndicator":"7"},
         "futureField":{"a":[1,2,{"b":null}]}}
        """#
    static let emv = #"""
        {"applicationPrimaryAccountNumber":"5204245250001488","applicationExpirationDate":"300131","currencyCode":36,
         "transactionAmount":"0","paymentDataType":"EMV","paymentData":{"emvData":"n0ABAQ==","encryptedPINData":"0a"},
         "merchantTokenIdentifier":"DNITHE302308980427388297","merchantTokenMetadata":null}
        """#

    @Test("Apple's two kinds are read directly, as the tree reads them")
    func readsBothKinds() throws {
        for text in [Self.threeDSecure, Self.emv] {
            let bytes = Array(text.utf8)
            let direct = try #require(Self.direct(bytes))
            #expect(direct == Self.tree(bytes))
        }
        #expect(Self.direct(Array(Self.emv.utf8))?.currencyCode == "036")
        // An ECI that is neither a string nor a number is no ECI, for both readers.
        let boolean = Array(
            Self.threeDSecure.replacingOccurrences(of: #""eciIndicator":"7""#, with: #""eciIndicator":true"#).utf8)
        #expect(Self.direct(boolean) != nil)
        #expect(Self.direct(boolean) == Self.tree(boolean))
    }

    @Test("merchant token metadata, authentication responses and odd shapes are left to the tree")
    func leavesTheRest() {
        for text in [
            Self.emv.replacingOccurrences(of: #""merchantTokenMetadata":null"#, with: #""merchantTokenMetadata":{}"#),
            Self.threeDSecure.replacingOccurrences(of: #""futureField""#, with: #""authenticationResponses""#),
            Self.threeDSecure.replacingOccurrences(of: #""3DSecure""#, with: #""EMV""#),
            Self.threeDSecure.replacingOccurrences(of: #""futureField""#, with: #""cardholderName""#),
        ] {
            #expect(Self.direct(Array(text.utf8)) == nil)
        }
    }

    @Test("one byte changed at every position: the direct reader never accepts what the tree refuses, nor differs")
    func everyByteEdit() {
        for text in [Self.threeDSecure, Self.emv] {
            let original = Array(text.utf8)
            for position in original.indices {
                for replacement: UInt8 in [0x22, 0x5c, 0x30, 0x7b, 0x7d, 0x2c, 0x20, 0xff, 0x61] {
                    var edited = original
                    edited[position] = replacement
                    let direct = Self.direct(edited)
                    if let direct { #expect(direct == Self.tree(edited), "edit at \(position)") }
                }
                var truncated = original
                truncated.removeSubrange(position...)
                #expect(Self.direct(truncated) == nil || Self.direct(truncated) == Self.tree(truncated))
            }
        }
    }
}
