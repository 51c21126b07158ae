import ApplePay
import Cryptography
import Foundation
import Foundations
import Sandbox
import TestSupport
import Testing

/// Helpers to take a minted token apart.
enum TokenParts {
    /// The bytes the CMS signature covers: ephemeralPublicKey or wrappedKey ‖ data ‖ transactionId ‖ applicationData.
    static func signedContent(_ paymentData: [String: Any]) throws -> Data {
        let header = try need(paymentData["header"] as? [String: Any], "header")
        let keyText = try need((header["ephemeralPublicKey"] ?? header["wrappedKey"]) as? String, "key")
        var content = try need(Data(base64Encoded: keyText), "base64 key")
        content.append(try need(Data(base64Encoded: try need(paymentData["data"] as? String)), "data"))
        content.append(try need(hexBytes(try need(header["transactionId"] as? String)), "transactionId"))
        if let applicationData = header["applicationData"] as? String {
            content.append(try need(hexBytes(applicationData), "applicationData"))
        }
        return content
    }

    static func hexBytes(_ text: String) -> Data? {
        var out = Data()
        var iterator = text.makeIterator()
        while let high = iterator.next() {
            guard let low = iterator.next(), let byte = UInt8(String([high, low]), radix: 16) else { return nil }
            out.append(byte)
        }
        return out
    }

    struct Missing: Error, CustomStringConvertible {
        var description: String
    }

    /// The value, or an error naming what was missing (nests where `#require` cannot).
    static func need<T>(_ value: T?, _ what: String = "a value") throws -> T {
        guard let value else { throw Missing(description: "missing \(what)") }
        return value
    }

    static func object(_ data: Data) throws -> [String: Any] {
        try need(try JSONSerialization.jsonObject(with: data) as? [String: Any], "a JSON object")
    }
}

@Suite("Token minter")
struct TokenMinterTests {
    static let visa: SandboxCard = {
        do {
            return try SandboxCard(
                network: .visa, type: .debit, devicePAN: "4761120010000492", expirationDate: "291231",
                cardholderName: "Ada Lovelace")
        } catch { preconditionFailure("\(error)") }
    }()

    @Test("openssl cms -verify accepts minted signatures against the sandbox root", arguments: TokenVersion.allCases)
    func opensslVerifies(version: TokenVersion) async throws {
        let sandbox = try await SharedSandbox.get()
        let token = try sandbox.mint(
            MintRequest(
                card: Self.visa, amount: Decimal(string: "10.75") ?? 0, currencyCode: "USD",
                applicationData: .base64(Data("order-42".utf8).base64EncodedString())),
            version: version)
        let paymentData = try #require(try TokenParts.object(try token.jsonData())["paymentData"] as? [String: Any])
        #expect(paymentData["version"] as? String == version.rawValue)
        let content = try TokenParts.signedContent(paymentData)

        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let signature = try #require(Data(base64Encoded: token.paymentData.signature))
        let result = try await ToolRunner.opensslVerify(signature, content, sandbox: sandbox, in: folder)
        #expect(result.status == 0, "\(result.error)")

        // The signer is the leaf for the version, carrying OID .29, with the intermediate (.2.14) beside it.
        let verified = try CMSSignedData.verifyDetached(signature, content: content)
        let leaf = version == .ecV1 ? sandbox.authority.ecLeaf.certificate : sandbox.authority.rsaLeaf.certificate
        #expect(verified.signer == leaf)
        #expect(verified.certificates.contains(sandbox.authority.intermediate.certificate))
    }

    @Test("the header is Apple's: publicKeyHash, transactionId, applicationData = SHA-256 of the decoded bytes")
    func header() async throws {
        let sandbox = try await SharedSandbox.get()
        let applicationBytes = Data("{\"order\":42}".utf8)
        let transaction = Data((0..<32).map { UInt8($0) })
        let fromBase64 = try sandbox.mint(
            MintRequest(
                card: Self.visa, amount: 1, currencyCode: "USD",
                applicationData: .base64(applicationBytes.base64EncodedString()), transactionIdentifier: transaction))
        let fromBytes = try sandbox.mint(
            MintRequest(card: Self.visa, amount: 1, currencyCode: "USD", applicationData: .bytes(applicationBytes)))
        let expectedHash = Digest.sha256(applicationBytes).map { String(format: "%02x", $0) }.joined()
        #expect(fromBase64.paymentData.header.applicationData == expectedHash)
        #expect(fromBytes.paymentData.header.applicationData == expectedHash)
        #expect(fromBase64.paymentData.header.transactionId == transaction.map { String(format: "%02x", $0) }.joined())
        #expect(fromBase64.transactionIdentifier == fromBase64.paymentData.header.transactionId.uppercased())
        let spkiHash = Digest.sha256(sandbox.paymentProcessingEC.certificate.publicKey.subjectPublicKeyInfoDER)
        #expect(fromBase64.paymentData.header.publicKeyHash == spkiHash.base64EncodedString())
        let ephemeral = try PublicKey(
            subjectPublicKeyInfoDER: try TokenParts.need(
                Data(base64Encoded: try TokenParts.need(fromBase64.paymentData.header.ephemeralPublicKey))))
        #expect(ephemeral.kind == .p256)
        #expect(fromBase64.paymentData.header.wrappedKey == nil)
        #expect(fromBase64.paymentMethod.displayName == "Visa 0492")
        #expect(fromBase64.paymentMethod.network == "Visa")
        #expect(fromBase64.paymentMethod.type == "debit")
        let plain = try sandbox.mint(MintRequest(card: Self.visa, amount: 1, currencyCode: "USD"))
        #expect(plain.paymentData.header.applicationData == nil)
        #expect(plain.paymentData.header.transactionId != fromBytes.paymentData.header.transactionId)
    }

    @Test("Python's cryptography package decrypts minted EC_v1 and RSA_v1 tokens", arguments: TokenVersion.allCases)
    func pythonDecrypts(version: TokenVersion) async throws {
        let sandbox = try await SharedSandbox.get()
        let signingTime = Date(timeIntervalSince1970: 1_780_000_000)
        let token = try sandbox.mint(
            MintRequest(
                card: Self.visa, amount: Decimal(string: "1234.5") ?? 0, currencyCode: "EUR",
                paymentDataType: .threeDSecure, signingTime: signingTime),
            version: version)
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try token.jsonData().write(to: folder.url.appendingPathComponent("token.json"))
        let credential = sandbox.paymentProcessing(version)
        let suffix = version == .ecV1 ? "ec" : "rsa"
        let result = try await ToolRunner.python([
            "decrypt", folder.path("token.json"),
            "--cert", sandbox.folder.appendingPathComponent("payment-processing-\(suffix).pem").path,
            "--key", sandbox.folder.appendingPathComponent("payment-processing-\(suffix).key.pem").path,
        ])
        try #require(result.status == 0, "python: \(result.error)")
        let output = try TokenParts.object(Data(result.output.utf8))
        let payload = try #require(output["payload"] as? [String: Any])
        #expect(payload["applicationPrimaryAccountNumber"] as? String == "4761120010000492")
        #expect(payload["applicationExpirationDate"] as? String == "291231")
        #expect(payload["currencyCode"] as? String == "978")
        #expect(payload["transactionAmount"] as? Int == 123_450)
        #expect(payload["cardholderName"] as? String == "Ada Lovelace")
        #expect(payload["deviceManufacturerIdentifier"] as? String == "040010030273")
        #expect(payload["paymentDataType"] as? String == "3DSecure")
        let inner = try #require(payload["paymentData"] as? [String: Any])
        let cryptogram = try TokenParts.need(
            Data(base64Encoded: try TokenParts.need(inner["onlinePaymentCryptogram"] as? String)))
        #expect(cryptogram.count == 20)
        #expect(inner["eciIndicator"] as? String == "7")
        #expect(
            output["merchantIdentifierHash"] as? String
                == Digest.sha256(Data(SharedSandbox.merchantIdentifier.utf8)).map { String(format: "%02x", $0) }
                .joined())
        _ = credential
        // The signing time is the one asked for.
        let signature = try #require(Data(base64Encoded: token.paymentData.signature))
        #expect(try CMSSignedData(berEncoded: signature).signingTime == signingTime)
    }

    @Test("EMV payloads carry emvData and encryptedPINData")
    func emvPayload() async throws {
        let sandbox = try await SharedSandbox.get()
        let token = try sandbox.mint(
            MintRequest(card: Self.visa, amount: 5, currencyCode: "CNY", paymentDataType: .emv), version: .rsaV1)
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try token.jsonData().write(to: folder.url.appendingPathComponent("token.json"))
        let result = try await ToolRunner.python([
            "decrypt", folder.path("token.json"),
            "--cert", sandbox.folder.appendingPathComponent(Sandbox.File.paymentProcessingRSA).path,
            "--key", sandbox.folder.appendingPathComponent(Sandbox.File.paymentProcessingRSAKey).path,
        ])
        try #require(result.status == 0, "python: \(result.error)")
        let payload = try #require(try TokenParts.object(Data(result.output.utf8))["payload"] as? [String: Any])
        #expect(payload["paymentDataType"] as? String == "EMV")
        #expect(payload["currencyCode"] as? String == "156")
        #expect(payload["transactionAmount"] as? Int == 500)
        let inner = try #require(payload["paymentData"] as? [String: Any])
        #expect(inner["emvData"] is String)
        #expect((inner["encryptedPINData"] as? String)?.count == 32)
        #expect(inner["onlinePaymentCryptogram"] == nil)
    }

    @Test(
        "tokens minted by the independent Python code verify against the sandbox root", arguments: TokenVersion.allCases
    )
    func pythonMintedVerify(version: TokenVersion) async throws {
        let sandbox = try await SharedSandbox.get()
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let payload = """
            {"applicationPrimaryAccountNumber":"4761120010000492","applicationExpirationDate":"291231","currencyCode":"840","transactionAmount":1075,"deviceManufacturerIdentifier":"040010030273","paymentDataType":"3DSecure","paymentData":{"onlinePaymentCryptogram":"AAAAAAAAAAAAAAAAAAAAAAAAAAA=","eciIndicator":"7"}}
            """
        try Data(payload.utf8).write(to: folder.url.appendingPathComponent("payload.json"))
        let applicationHash = String(repeating: "ab", count: 32)
        let minted = try await ToolRunner.python([
            "mint", "--sandbox", sandbox.folder.path, "--kind", version.rawValue, "--payload",
            folder.path("payload.json"),
            "--application-data-hash", applicationHash,
        ])
        try #require(minted.status == 0, "python: \(minted.error)")
        let token = try TokenParts.object(Data(minted.output.utf8))
        let paymentData = try #require(token["paymentData"] as? [String: Any])
        let content = try TokenParts.signedContent(paymentData)
        let signature = try TokenParts.need(
            Data(base64Encoded: try TokenParts.need(paymentData["signature"] as? String)))
        let verified = try CMSSignedData.verifyDetached(signature, content: content)
        #expect(
            verified.signer
                == (version == .ecV1 ? sandbox.authority.ecLeaf.certificate : sandbox.authority.rsaLeaf.certificate))
        let result = try await ToolRunner.opensslVerify(signature, content, sandbox: sandbox, in: folder)
        #expect(result.status == 0, "\(result.error)")
    }

    @Test("amounts convert exactly to minor units for 0, 2 and 3 decimal currencies")
    func minorUnits() throws {
        #expect(try TokenMinter.minorUnits(Decimal(string: "10.75") ?? 0, currencyCode: "USD") == 1075)
        #expect(try TokenMinter.minorUnits(500, currencyCode: "JPY") == 500)
        #expect(try TokenMinter.minorUnits(Decimal(string: "1.234") ?? 0, currencyCode: "BHD") == 1234)
        #expect(try TokenMinter.minorUnits(0, currencyCode: "EUR") == 0)
    }

    @Test("bad inputs: unknown currency, too many decimals, negative amount, bad base64, bad card")
    func badInputs() async throws {
        let sandbox = try await SharedSandbox.get()
        #expect(throws: SandboxError(.unknownCurrency, "")) {
            try sandbox.mint(MintRequest(card: Self.visa, amount: 1, currencyCode: "XYZ"))
        }
        #expect(throws: SandboxError(.amountPrecision, "")) {
            try sandbox.mint(MintRequest(card: Self.visa, amount: Decimal(string: "10.755") ?? 0, currencyCode: "USD"))
        }
        #expect(throws: SandboxError(.amountPrecision, "")) {
            try sandbox.mint(MintRequest(card: Self.visa, amount: Decimal(string: "1.5") ?? 0, currencyCode: "JPY"))
        }
        #expect(throws: SandboxError(.invalidAmount, "")) {
            try sandbox.mint(MintRequest(card: Self.visa, amount: -1, currencyCode: "USD"))
        }
        #expect(throws: SandboxError(.invalidApplicationData, "")) {
            try sandbox.mint(
                MintRequest(card: Self.visa, amount: 1, currencyCode: "USD", applicationData: .base64("not base64!")))
        }
        #expect(throws: SandboxError(.invalidCard, "")) {
            try SandboxCard(network: .visa, devicePAN: "4761120010000493", expirationDate: "291231")
        }
        #expect(throws: SandboxError(.invalidCard, "")) {
            try SandboxCard(network: .visa, devicePAN: "4761120010000492", expirationDate: "2912")
        }
        #expect(throws: SandboxError(.notAPaymentProcessingCertificate, "")) {
            try PaymentProcessingRecipient(certificate: sandbox.rootCertificate)
        }
    }

    @Test("SandboxError: codes match in catch clauses, equality is on the code, the failing field is a property")
    func errorShape() {
        func field(_ pan: String, _ expiry: String) -> String? {
            do {
                _ = try SandboxCard(network: .visa, devicePAN: pan, expirationDate: expiry)
            } catch {
                switch error {
                case SandboxError.Code.invalidCard: return (error as? SandboxError)?.field
                default: return "unexpected \(error)"
                }
            }
            return nil
        }
        #expect(field("4761120010000493", "291231") == "devicePAN")
        #expect(field("4761120010000492", "2912") == "expirationDate")
        #expect(field("4761120010000492", "291231") == nil)
        let error = SandboxError(.folderMissing, "no sandbox folder at /x", path: "/x")
        #expect(error == SandboxError(.folderMissing, "other words"))
        #expect(error != SandboxError(.fileMissing, "no sandbox folder at /x"))
        #expect(error.code.rawValue == "folderMissing")
        #expect(error.path == "/x")
        #expect(error.description == "folderMissing: no sandbox folder at /x")
        #expect(SandboxError.Code.folderMissing ~= error)
        #expect(!(SandboxError.Code.folderMissing ~= CryptographyError(.invalidKey, "")))
    }

    @Test("card checks: 12 to 19 digits passing Luhn, YYMMDD with a month from 01 to 12")
    func cardChecks() {
        for pan in ["4761120010000492", "349956959041362", "6011000991300009", "000000000000"] {
            #expect(SandboxCard.isValidDevicePAN(pan), "\(pan)")
        }
        for pan in [
            "4761120010000493", "00000000000", "00000000000000000000", "4761 1200 1000 0492", "476112001000049/",
            "٤٧٦١١٢٠٠١٠٠٠٠٤٩٢", "",
        ] {
            #expect(!SandboxCard.isValidDevicePAN(pan), "\(pan)")
        }
        for date in ["291231", "300101", "000131"] { #expect(SandboxCard.isValidExpirationDate(date), "\(date)") }
        for date in ["291331", "290031", "2912", "2912310", "29-231", "２９１２３１", ""] {
            #expect(!SandboxCard.isValidExpirationDate(date), "\(date)")
        }
    }

    @Test("descriptions never show the PAN")
    func noPANInDescriptions() async throws {
        let sandbox = try await SharedSandbox.get()
        let token = try sandbox.mint(MintRequest(card: Self.visa, amount: 1, currencyCode: "USD"))
        #expect(!Self.visa.description.contains("4761120010000492"))
        #expect(!token.description.contains(token.paymentData.data.prefix(20)))
        let request = MintRequest(card: Self.visa, amount: 1, currencyCode: "USD")
        for value in [Self.visa, request, token] as [Any] {
            var dumped = ""
            dump(value, to: &dumped)
            for text in [dumped, String(reflecting: value), "\([value])"] {
                #expect(!text.contains("4761120010000492"), "\(text)")
                #expect(!text.contains(token.paymentData.data.prefix(20)), "\(text)")
                #expect(!text.contains(token.paymentData.signature.prefix(20)), "\(text)")
            }
        }
    }

    @Test("minting is fast: 150 EC_v1 and 50 RSA_v1 tokens from one minter, on several threads")
    func speed() async throws {
        let sandbox = try await SharedSandbox.get()
        let request = MintRequest(card: Self.visa, amount: Decimal(string: "10.75") ?? 0, currencyCode: "USD")
        let start = ContinuousClock.now
        let ecCount = 150
        let rsaCount = 50
        let transactions = try await withThrowingTaskGroup(of: [String].self) { group in
            // Each worker on a thread of its own: minting is CPU work that must not hold Swift's cooperative pool.
            for worker in 0..<4 {
                group.addTask {
                    try await blocking {
                        var ids: [String] = []
                        for index in 0..<((ecCount + rsaCount) / 4) {
                            let version: TokenVersion = (worker * 1000 + index) % 4 == 0 ? .rsaV1 : .ecV1
                            ids.append(try sandbox.mint(request, version: version).transactionIdentifier)
                        }
                        return ids
                    }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        let elapsed = ContinuousClock.now - start
        #expect(transactions.count == ecCount + rsaCount)
        #expect(Set(transactions).count == transactions.count)
        print("minted \(transactions.count) tokens in \(elapsed)")
        // Unloaded, debug build, 2 cores: about 1,200 tokens a second. The bound leaves room for a busy CI machine.
        #expect(elapsed < .seconds(30))
    }
}
