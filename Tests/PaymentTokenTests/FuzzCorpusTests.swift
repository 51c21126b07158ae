import Cryptography
import Foundation
import Foundations
import PaymentToken
import TestSupport
import Testing

/// Replays `Tests/Fixtures/fuzz-corpus` (inputs kept from `make fuzz`, see scripts/fuzz-token.sh) through the
/// public API the way the fuzz target does: every input ends in a result or a `PaymentTokenError` with one of the
/// twelve codes (the one each file is named for), and the CMS reader fails only with a `CryptographyError`;
/// never a crash or a hang.
@Suite("Fuzz regression corpus")
struct FuzzCorpusTests {
    static let corpus = Repository.root.appendingPathComponent("Tests/Fixtures/fuzz-corpus")

    static func inputs() throws -> [(name: String, bytes: Data)] {
        let names = try FileManager.default.contentsOfDirectory(atPath: corpus.path).sorted()
        return try names.map { ($0, try Data(contentsOf: corpus.appendingPathComponent($0))) }
    }

    @Test("every corpus input gives a PaymentTokenError code or a result, quickly")
    func replay() throws {
        let inputs = try Self.inputs()
        try #require(inputs.count >= 5)
        let merchants = try TokenFixture.decryptable.map { try TokenFixture($0).identity() }
        // A window wide enough for every real vector, so a valid input goes through decryption as in the fuzzer.
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let decryptor = try PaymentTokenDecryptor(merchants: merchants, maximumAge: 40 * 365 * 86_400, now: { now })
        let known = Set(PaymentTokenError.Code.all)
        let started = Date()
        for (name, bytes) in inputs {
            // Files are named for the code they gave when kept (`ber-…` are raw BER, not JSON: malformedToken).
            let prefix = String(name.prefix { $0 != "-" })
            let expected =
                prefix == "ber" ? PaymentTokenError.Code.malformedToken : known.first { $0.rawValue == prefix }
            do {
                _ = try decryptor.decrypt(jsonData: bytes)
                Issue.record("\(name): decrypted, expected \(expected?.rawValue ?? prefix)")
            } catch {
                #expect(known.contains(error.code), "\(name): unknown code \(error.code)")
                #expect(error.code == expected, "\(name): \(error.code), expected \(expected?.rawValue ?? prefix)")
            }
            do {
                _ = try CMSSignedData(berEncoded: bytes)
            } catch {
                #expect(error is CryptographyError, "\(name): CMSSignedData threw \(type(of: error))")
            }
        }
        #expect(Date().timeIntervalSince(started) < 2)
    }
}
