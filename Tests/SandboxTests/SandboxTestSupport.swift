import Foundation
import Sandbox
import TestSupport

/// One sandbox shared by the tests of this target (making one generates eight keys, three of them RSA), made
/// once on a thread of its own: tests await it without holding any of Swift's cooperative threads meanwhile.
enum SharedSandbox {
    static let merchantIdentifier = "merchant.com.example.sandbox-tests"

    private static let sandbox = MadeOnce(inFolder: "sandbox-tests") {
        try Sandbox.create(at: $0.url.appendingPathComponent("sandbox"), merchantIdentifier: merchantIdentifier)
    }

    /// The loaded sandbox.
    static func get() async throws -> Sandbox { try await sandbox.value }
}

/// Runs `openssl` or the independent Python implementation and collects its output (see `Subprocess`).
enum ToolRunner {
    struct Result {
        var status: Int32
        var output: String
        var error: String
    }

    static func run(_ tool: String, _ arguments: [String], input: Data? = nil) async throws -> Result {
        let result = try await Subprocess.run(tool, arguments, input: input)
        return Result(status: result.status, output: result.standardOutput, error: result.standardError)
    }

    static func openssl(_ arguments: [String], input: Data? = nil) async throws -> Result {
        try await run("openssl", arguments, input: input)
    }

    /// `openssl cms -verify` of a detached DER `signature` over `content` against the sandbox root; the files it
    /// reads are written to `folder`.
    static func opensslVerify(_ signature: Data, _ content: Data, sandbox: Sandbox, in folder: TemporaryDirectory)
        async throws -> Result
    {
        try signature.write(to: folder.url.appendingPathComponent("signature.der"))
        try content.write(to: folder.url.appendingPathComponent("content.bin"))
        return try await openssl([
            "cms", "-verify", "-binary", "-inform", "DER", "-in", folder.path("signature.der"), "-content",
            folder.path("content.bin"), "-CAfile", sandbox.folder.appendingPathComponent(Sandbox.File.root).path,
            "-purpose", "any", "-out", "/dev/null",
        ])
    }

    /// The independent Python implementation in `Tests/SandboxTests/python/independent_applepay.py`.
    static func python(_ arguments: [String]) async throws -> Result {
        let script = Repository.root.appendingPathComponent("Tests/SandboxTests/python/independent_applepay.py").path
        return try await run("python3", [script] + arguments)
    }
}
