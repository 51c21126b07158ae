// A coverage-guided fuzz target for the token path (issue 3: garbage in any field gives a PaymentTokenError code,
// never a crash or a hang). Built two ways:
// - `scripts/fuzz-token.sh` builds it with `-sanitize=fuzzer,address -DFUZZING`: libFuzzer owns `main` and calls
//   `LLVMFuzzerTestOneInput` for every input it generates.
// - a plain `swift build` makes a corpus replayer: `FuzzPaymentToken FILE...` runs each file through the same
//   function and exits 1 if any of them produced a finding.
import Cryptography
import Foundation
import Foundations
import FuzzSupport
import PaymentToken

/// What one input does, and what counts as a finding: bytes → `PaymentToken(jsonData:)` → verify → decrypt, with
/// the merchant keys of the real vectors, every error must carry one of the twelve `PaymentTokenError` codes. The
/// bytes also go to the BER/CMS reader directly (the token path only reaches it through base64), where every error
/// must be a `CryptographyError`. A crash, an ASan report or a timeout is a finding too (libFuzzer reports those).
enum FuzzHarness {
    /// The repository root, from this file's location (Sources/FuzzPaymentToken/FuzzPaymentToken.swift).
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The decryptor, built once: every vector merchant key, Apple Root CA - G3, a clock and window that accept any
    /// real vector's signing time (so a valid seed goes all the way through decryption).
    static let decryptor: PaymentTokenDecryptor = {
        let vectors = repository.appendingPathComponent("Tests/Fixtures/apple-pay-tokens")
        var merchants: [MerchantIdentity] = []
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: vectors.path)) ?? []
        for folder in folders.sorted() {
            let url = vectors.appendingPathComponent(folder)
            func text(_ name: String) -> String? {
                (try? Data(contentsOf: url.appendingPathComponent(name))).map { String(decoding: $0, as: UTF8.self) }
            }
            guard let keyPEM = text("merchant-key.pem") else { continue }
            if let certificatePEM = text("merchant-cert.pem"),
                let identity = try? MerchantIdentity(certificatePEM: certificatePEM, privateKeyPEM: keyPEM)
            {
                merchants.append(identity)
            } else if let meta = text("meta.json"),
                let object = try? JSONSerialization.jsonObject(with: Data(meta.utf8)) as? [String: Any],
                let identifier = object["merchantIdentifier"] as? String,
                let key = try? PrivateKey(pem: keyPEM),
                let identity = try? MerchantIdentity(privateKey: key, merchantIdentifier: identifier)
            {
                merchants.append(identity)
            }
        }
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        do {
            return try PaymentTokenDecryptor(merchants: merchants, maximumAge: 40 * 365 * 86_400, now: { now })
        } catch {
            fatalError("the fuzz harness cannot load the merchant keys from \(vectors.path): \(error)")
        }
    }()

    static let knownCodes = Set(PaymentTokenError.Code.all)

    /// Runs one input; returns a description of the finding, or nil when the input was handled as it should be.
    /// `outcome` receives what the token path made of it ("decrypted" or the error code), for triage.
    static func run(_ bytes: UnsafeBufferPointer<UInt8>, outcome: ((String) -> Void)? = nil) -> String? {
        let data = Data(buffer: bytes)
        do {
            _ = try decryptor.decrypt(jsonData: data)
            outcome?("decrypted")
        } catch {
            outcome?(error.code.rawValue)
            if !knownCodes.contains(error.code) { return "PaymentTokenError with an unknown code \(error.code)" }
        }
        do {
            _ = try CMSSignedData(berEncoded: data)
        } catch is CryptographyError {
        } catch {
            return "CMSSignedData threw \(type(of: error)), not a CryptographyError"
        }
        return nil
    }
}

#if FUZZING
    /// libFuzzer's entry point: a finding stops the run with the input saved as `crash-…`.
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzPaymentToken(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        guard let data else { return 0 }
        if let finding = FuzzHarness.run(UnsafeBufferPointer(start: data, count: size)) {
            fatalError("finding: \(finding)")
        }
        return 0
    }

    /// SwiftPM links executables on Linux with `main` aliased to `<module>_main` (so tests can import them); this is
    /// that symbol, and it hands the process to libFuzzer's driver.
    @_cdecl("FuzzPaymentToken_main")
    public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
        _ = FuzzHarness.decryptor  // keys are loaded once, before the first input
        return runLibFuzzer(argc, argv, fuzzPaymentToken)
    }
#else
    /// The corpus replayer: `FuzzPaymentToken FILE|DIR...`; with `FUZZ_VERBOSE=1` it prints each input's outcome.
    @main
    struct CorpusReplayer {
        static func main() {
            let files = FuzzCorpus.files(CommandLine.arguments.dropFirst())
            guard !files.isEmpty else { FuzzCorpus.usage("FuzzPaymentToken FILE|DIR...") }
            let verbose = ProcessInfo.processInfo.environment["FUZZ_VERBOSE"] == "1"
            FuzzCorpus.replay(files) { file, data in
                data.withUnsafeBytes { bytes in
                    FuzzHarness.run(bytes.bindMemory(to: UInt8.self)) { outcome in
                        if verbose { print("\(file.lastPathComponent) \(data.count) \(outcome)") }
                    }
                }
            }
        }
    }
#endif
