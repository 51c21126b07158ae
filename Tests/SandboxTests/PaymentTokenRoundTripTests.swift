import Cryptography
import Foundation
import Foundations
import PaymentToken
import Sandbox
import TestSupport
import Testing

/// Tokens minted here open in this project's decryptor configured with the sandbox root, and tokens minted by
/// the independent Python code open there too.
@Suite("Sandbox tokens in the PaymentToken decryptor")
struct PaymentTokenRoundTripTests {
    static func decryptor(_ sandbox: Sandbox, now: Date = Date()) throws -> PaymentTokenDecryptor {
        try PaymentTokenDecryptor(
            merchants: [
                try MerchantIdentity(
                    certificate: sandbox.paymentProcessingEC.certificate,
                    privateKey: sandbox.paymentProcessingEC.privateKey),
                try MerchantIdentity(
                    certificate: sandbox.paymentProcessingRSA.certificate,
                    privateKey: sandbox.paymentProcessingRSA.privateKey),
            ],
            roots: [sandbox.rootCertificate], now: { now })
    }

    @Test(
        "Swift-minted EC_v1 and RSA_v1 tokens verify and decrypt with the expected amount, currency and data",
        arguments: TokenVersion.allCases)
    func swiftMinted(version: TokenVersion) async throws {
        let sandbox = try await SharedSandbox.get()
        let applicationData = Data("order 1001".utf8)
        let token = try sandbox.mint(
            MintRequest(
                card: TokenMinterTests.visa, amount: Decimal(string: "10.75") ?? 0, currencyCode: "USD",
                applicationData: .base64(applicationData.base64EncodedString())),
            version: version)
        let opened = try Self.decryptor(sandbox).decrypt(
            jsonData: try token.jsonData(),
            expecting: PaymentTokenExpectations(
                applicationData: .bytes(applicationData), amount: 1075, currencyCode: "840"))
        #expect(opened.verification.version.rawValue == version.rawValue)
        #expect(opened.payload.applicationPrimaryAccountNumber == "4761120010000492")
        #expect(opened.payload.transactionAmount == 1075)
        #expect(opened.payload.currencyCode == "840")
        #expect(opened.payload.cardholderName == "Ada Lovelace")
        #expect(opened.payload.paymentDataType == "3DSecure")
        if case .threeDSecure(let cryptogram, let eci) = opened.payload.credentials {
            #expect(Data(base64Encoded: cryptogram)?.count == 20)
            #expect(eci == "7")
        } else {
            Issue.record("expected 3DSecure credentials")
        }
        // The bare paymentData object opens too.
        _ = try Self.decryptor(sandbox).decrypt(jsonData: try token.paymentDataJSON())
    }

    @Test("EMV tokens decrypt to EMV credentials")
    func emv() async throws {
        let sandbox = try await SharedSandbox.get()
        let token = try sandbox.mint(
            MintRequest(card: TokenMinterTests.visa, amount: 88, currencyCode: "CNY", paymentDataType: .emv),
            version: .rsaV1)
        let opened = try Self.decryptor(sandbox).decrypt(jsonData: try token.jsonData())
        guard case .emv(let emvData, let pin) = opened.payload.credentials else {
            Issue.record("expected EMV credentials")
            return
        }
        #expect(Data(base64Encoded: emvData)?.count == 64)
        #expect(pin?.count == 32)
        #expect(opened.payload.transactionAmount == 8800)
    }

    @Test("the signing time chosen is the one the verifier checks")
    func signingTime() async throws {
        let sandbox = try await SharedSandbox.get()
        let past = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 86_400 * 30).rounded(.down))
        let token = try sandbox.mint(
            MintRequest(card: TokenMinterTests.visa, amount: 1, currencyCode: "USD", signingTime: past))
        #expect(throws: PaymentTokenError(.signingTimeOutOfRange, "")) {
            try Self.decryptor(sandbox).decrypt(jsonData: try token.jsonData())
        }
        let opened = try Self.decryptor(sandbox, now: past.addingTimeInterval(60)).decrypt(
            jsonData: try token.jsonData())
        #expect(opened.verification.signingTime == past)
    }

    @Test("sandbox tokens are not trusted by a verifier that trusts only Apple's root")
    func notAppleTrusted() async throws {
        let sandbox = try await SharedSandbox.get()
        let token = try sandbox.mint(MintRequest(card: TokenMinterTests.visa, amount: 1, currencyCode: "USD"))
        let appleOnly = try PaymentTokenDecryptor(
            merchants: [
                try MerchantIdentity(
                    certificate: sandbox.paymentProcessingEC.certificate,
                    privateKey: sandbox.paymentProcessingEC.privateKey)
            ])
        #expect(throws: PaymentTokenError(.untrustedCertificateChain, "")) {
            try appleOnly.decrypt(jsonData: try token.jsonData())
        }
    }

    @Test("tokens minted by the independent Python code open in the Swift decryptor", arguments: TokenVersion.allCases)
    func pythonMinted(version: TokenVersion) async throws {
        let sandbox = try await SharedSandbox.get()
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let payload = """
            {"applicationPrimaryAccountNumber":"5204247750001471","applicationExpirationDate":"300131","currencyCode":"978","transactionAmount":4999,"cardholderName":"Alan Turing","deviceManufacturerIdentifier":"040010030273","paymentDataType":"3DSecure","paymentData":{"onlinePaymentCryptogram":"AQIDBAUGBwgJCgsMDQ4PEBESExQ="}}
            """
        try Data(payload.utf8).write(to: folder.url.appendingPathComponent("payload.json"))
        let applicationData = Data("python order".utf8)
        let applicationHash = Digest.sha256(applicationData).map { String(format: "%02x", $0) }.joined()
        let minted = try await ToolRunner.python([
            "mint", "--sandbox", sandbox.folder.path, "--kind", version.rawValue, "--payload",
            folder.path("payload.json"),
            "--application-data-hash", applicationHash,
        ])
        try #require(minted.status == 0, "python: \(minted.error)")
        let opened = try Self.decryptor(sandbox).decrypt(
            jsonData: Data(minted.output.utf8),
            expecting: PaymentTokenExpectations(
                applicationData: .bytes(applicationData), amount: 4999, currencyCode: "978"))
        #expect(opened.verification.version.rawValue == version.rawValue)
        #expect(opened.payload.applicationPrimaryAccountNumber == "5204247750001471")
        #expect(opened.payload.cardholderName == "Alan Turing")
        #expect(
            opened.payload.credentials
                == .threeDSecure(onlinePaymentCryptogram: "AQIDBAUGBwgJCgsMDQ4PEBESExQ=", eciIndicator: nil))
    }
}
