import TestSupport
import Testing

/// Runs the tool with `arguments` and expects a usage error: exit 64, the usage on standard error.
func expectUsageError(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let result = try await CommandLineTool.run(arguments)
    #expect(result.status == 64, sourceLocation: sourceLocation)
    #expect(result.standardError.contains("USAGE:"), sourceLocation: sourceLocation)
}

@Suite("applepay --help and usage errors")
struct HelpTests {
    @Test("--help prints the overview and exits 0")
    func rootHelp() async throws {
        let result = try await CommandLineTool.run(["--help"])
        #expect(result.status == 0)
        #expect(result.standardOutput.contains("OVERVIEW:"))
        #expect(result.standardOutput.contains("SUBCOMMANDS:"))
    }

    @Test("the binary allocates through jemalloc, not glibc's malloc (Package.swift links it)")
    func allocator() async throws {
        // jemalloc prints its statistics at exit when MALLOC_CONF asks; glibc ignores the variable.
        let result = try await CommandLineTool.run(["--help"], environment: ["MALLOC_CONF": "stats_print:true"])
        #expect(result.status == 0)
        #expect(result.standardError.contains("Begin jemalloc statistics"))
    }

    @Test("an unknown subcommand is a usage error: exit 64")
    func unknownSubcommand() async throws {
        try await expectUsageError(["no-such-command"])
    }

    @Test("no arguments at all is a usage error: exit 64")
    func noArguments() async throws {
        let result = try await CommandLineTool.run([])
        #expect(result.status == 64)
    }

    @Test("store migrate is listed and documented; its usage errors exit 64")
    func storeMigrate() async throws {
        let root = try await CommandLineTool.run(["--help"])
        #expect(root.standardOutput.contains("store"))
        let help = try await CommandLineTool.run(["store", "migrate", "--help"])
        #expect(help.status == 0)
        #expect(help.standardOutput.contains("--from sqlite:PATH"))
        #expect(help.standardOutput.contains("--to URI"))
        let missing = try await CommandLineTool.run(["store", "migrate", "--to", "postgresql:///x"])
        #expect(missing.status == 64)
        #expect(missing.standardError.contains("--from sqlite:PATH is required"))
        let wrong = try await CommandLineTool.run(["store", "migrate", "--from", "sqlite:a.db", "--to", "mysql://x"])
        #expect(wrong.status == 64)
    }
}
