import TestSupport
import Testing

@Suite("applepay --help and usage errors")
struct HelpTests {
    @Test("--help prints the overview and exits 0")
    func rootHelp() async throws {
        let result = try await CommandLineTool.run(["--help"])
        #expect(result.status == 0)
        #expect(result.standardOutput.contains("OVERVIEW:"))
        #expect(result.standardOutput.contains("SUBCOMMANDS:"))
    }

    @Test("an unknown subcommand is a usage error: exit 64")
    func unknownSubcommand() async throws {
        let result = try await CommandLineTool.run(["no-such-command"])
        #expect(result.status == 64)
        #expect(result.standardError.contains("USAGE:"))
    }

    @Test("no arguments at all is a usage error: exit 64")
    func noArguments() async throws {
        let result = try await CommandLineTool.run([])
        #expect(result.status == 64)
    }
}
