import Foundation
import TestSupport
import Testing

/// `scripts/attack.sh` with small numbers (ATTACK_SMALL=1) against the built binary: slow-loris beside a healthy
/// client, invented methods, a checkout flood, an oversized field and a cross-site POST (`make attack` is the long
/// form).
@Suite("scripts/attack.sh")
struct AttackScriptTests {
    @Test("the server holds: every check of the short attack passes and the figures are printed")
    func shortAttack() async throws {
        let result = try await Subprocess.run(
            "bash", [Repository.root.appendingPathComponent("scripts/attack.sh").path],
            environment: ["ATTACK_SMALL": "1", "APPLEPAY_BIN": CommandLineTool.executable.path], timeout: 180)
        #expect(result.status == 0, "\(result.standardOutput)\n\(result.standardError)")
        let figures = result.json
        #expect(figures?["failures"] as? [String] == [])
        #expect((figures?["floodRateLimited"] as? Int).map { $0 > 0 } == true)
        #expect((figures?["legitimateWorstLatencyMs"] as? Double).map { $0 < 1000 } == true)
    }
}
