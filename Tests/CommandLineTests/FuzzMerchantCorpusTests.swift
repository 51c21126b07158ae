import Foundation
import TestSupport
import Testing

/// `make test`'s short form of `make fuzz` for issue 14's targets: the built replayer (`FuzzMerchant`, a plain build
/// of the libFuzzer target, same harness) runs every seed and regression input of `Tests/Fixtures/fuzz-merchant`.
/// A libFuzzer build (sanitizers, release) takes minutes on two cores, too long for every test run; the long runs
/// are `make fuzz` (scripts/fuzz-merchant.sh).
@Suite("Fuzz corpora of the merchant side")
struct FuzzMerchantCorpusTests {
    @Test(
        "every input of each corpus is handled: no crash, no 5xx but the documented 503s",
        arguments: [
            "request", "store", "http",
        ])
    func replay(target: String) async throws {
        let folder = Repository.root.appendingPathComponent("Tests/Fixtures/fuzz-merchant/\(target)")
        let count = try FileManager.default.contentsOfDirectory(atPath: folder.path).count
        try #require(count >= 3)
        let result = try await Subprocess.run(
            executable: CommandLineTool.builtExecutable(named: "FuzzMerchant"), [target, folder.path], timeout: 120)
        #expect(result.status == 0, "\(result.standardOutput)\(result.standardError)")
        #expect(result.standardOutput.contains("replayed \(count) input(s), 0 finding(s)"))
    }
}
