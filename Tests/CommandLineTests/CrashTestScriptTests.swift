import Foundation
import TestSupport
import Testing

/// The short form of `make crash`: scripts/crash-test.sh with a few payments and kills, on the debug binary.
@Suite("scripts/crash-test.sh")
struct CrashTestScriptTests {
    @Test("40 payments, 4 merchant server kills, 2 processor kills: nothing lost, nothing charged twice")
    func shortCrashRun() async throws {
        let result = try await Subprocess.run(
            executable: Repository.root.appendingPathComponent("scripts/crash-test.sh"), ["40", "4", "2"],
            environment: ["APPLEPAY": CommandLineTool.executable.path], timeout: 600)
        #expect(result.status == 0, "\(result.standardOutput)\n\(result.standardError)")
        let figures = try #require(
            result.standardOutput.split(separator: "\n").last.flatMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }, "no figures line: \(result.standardOutput)\n\(result.standardError)")
        #expect(figures["doubleCharges"] as? Int == 0)
        #expect(figures["violations"] as? Int == 0)
        #expect(figures["serverKills"] as? Int == 4)
        #expect(figures["processorKills"] as? Int == 2)
        #expect(figures["payments"] as? Int == 40)
    }

    @Test(
        "against each provider's fake: 30 payments, 3 merchant server kills, nothing lost, nothing charged twice",
        arguments: ["stripe", "checkout", "adyen"])
    func againstProviderFake(provider: String) async throws {
        let vectors = Repository.pspVectors
        let result = try await Subprocess.run(
            executable: Repository.root.appendingPathComponent("scripts/crash-test.sh"), ["30", "3", "0"],
            environment: [
                "APPLEPAY": CommandLineTool.executable.path, "CRASH_PSP": provider, "PSP_VECTORS": vectors.path,
                "CRASH_CLIENTS": "4",
            ], timeout: 600)
        #expect(result.status == 0, "\(result.standardOutput)\n\(result.standardError)")
        let figures = try #require(
            result.standardOutput.split(separator: "\n").last.flatMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }, "no figures line: \(result.standardOutput)\n\(result.standardError)")
        #expect(figures["psp"] as? String == provider)
        #expect(figures["doubleCharges"] as? Int == 0)
        #expect(figures["violations"] as? Int == 0)
        #expect(figures["serverKills"] as? Int == 3)
    }
}
