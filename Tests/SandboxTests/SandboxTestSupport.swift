import Foundation
import Sandbox
import TestSupport

/// One sandbox shared by the tests of this target (making one generates eight keys, three of them RSA).
enum SharedSandbox {
    static let merchantIdentifier = "merchant.com.example.sandbox-tests"
    static let folder: TemporaryDirectory = {
        do { return try TemporaryDirectory(prefix: "sandbox-tests") } catch {
            preconditionFailure("temporary folder: \(error)")
        }
    }()
    /// The loaded sandbox at `folder/sandbox`.
    static let sandbox: Result<Sandbox, any Error> = Result {
        try Sandbox.create(at: folder.url.appendingPathComponent("sandbox"), merchantIdentifier: merchantIdentifier)
    }

    static func get() throws -> Sandbox { try sandbox.get() }
}

/// Runs a tool and collects its output.
enum ToolRunner {
    struct Result {
        var status: Int32
        var output: String
        var error: String
    }

    static func run(_ tool: String, _ arguments: [String], input: Data? = nil) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let output = Pipe()
        let error = Pipe()
        let standardInput = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = standardInput
        try process.run()
        if let input { standardInput.fileHandleForWriting.write(input) }
        try? standardInput.fileHandleForWriting.close()
        // Read standard error on another thread so that neither pipe can fill up and block the tool.
        nonisolated(unsafe) var errorData = Data()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            errorData = error.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, output: String(decoding: outData, as: UTF8.self),
            error: String(decoding: errorData, as: UTF8.self))
    }

    static func openssl(_ arguments: [String], input: Data? = nil) throws -> Result {
        try run("openssl", arguments, input: input)
    }

    /// The independent Python implementation in `Tests/SandboxTests/python/independent_applepay.py`.
    static func python(_ arguments: [String]) throws -> Result {
        let script = Repository.root.appendingPathComponent("Tests/SandboxTests/python/independent_applepay.py").path
        return try run("python3", [script] + arguments)
    }
}
