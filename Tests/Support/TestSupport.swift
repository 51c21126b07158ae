import Foundation

/// Locations in the repository that tests read from.
public enum Repository {
    /// The repository's root folder.
    public static let root: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }  // Tests/Support/TestSupport.swift
        return url
    }()

    /// `Tests/Fixtures/apple-pay-tokens`: eight real tokens signed by Apple (see its README).
    public static let appleTokenVectors = root.appendingPathComponent("Tests/Fixtures/apple-pay-tokens")

    /// `scenarios/`: example payment-sheet scenarios.
    public static let scenarios = root.appendingPathComponent("scenarios")
}

/// A folder that exists for the life of the value's scope; removed by `remove()` or at process exit.
public struct TemporaryDirectory: Sendable {
    public let url: URL

    public init(prefix: String = "applepay-test") throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func path(_ component: String) -> String { url.appendingPathComponent(component).path }

    public func remove() { try? FileManager.default.removeItem(at: url) }
}

/// What running the built `applepay` binary printed and returned.
public struct ToolResult: Sendable {
    public var status: Int32
    public var standardOutput: String
    public var standardError: String

    /// Standard output parsed as one JSON object.
    public var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(standardOutput.utf8))) as? [String: Any]
    }

    /// Standard error parsed as one JSON object.
    public var errorJSON: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(standardError.utf8))) as? [String: Any]
    }
}

/// Runs the built `applepay` executable, as a user would.
public enum CommandLineTool {
    /// The binary beside the test bundle (the same build folder), or `APPLEPAY_BIN` when set.
    public static var executable: URL {
        if let override = ProcessInfo.processInfo.environment["APPLEPAY_BIN"] {
            return URL(fileURLWithPath: override)
        }
        let bundle = Bundle.main.bundleURL
        for folder in [bundle.deletingLastPathComponent(), bundle, bundle.deletingLastPathComponent().deletingLastPathComponent()] {
            let candidate = folder.appendingPathComponent("applepay")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue {
                return candidate
            }
        }
        return Repository.root.appendingPathComponent(".build/debug/applepay")
    }

    /// Runs `applepay` with the arguments and optional standard input; waits at most `timeout` seconds.
    ///
    /// The child is waited for on a thread of its own, so a test that runs the tool does not hold one of
    /// Swift's cooperative threads (there are as many as cores) and stall every other test meanwhile.
    public static func run(
        _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil, timeout: TimeInterval = 120
    ) async throws -> ToolResult {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(
                    with: Result {
                        try runBlocking(arguments, input: input, environment: environment, timeout: timeout)
                    })
            }
            thread.start()
        }
    }

    /// Runs `applepay` and blocks the calling thread until it ends; prefer the `async` variant in tests.
    public static func runBlocking(
        _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil, timeout: TimeInterval = 120
    ) throws -> ToolResult {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let output = Pipe()
        let error = Pipe()
        let inputPipe = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = inputPipe
        try process.run()
        if let input { inputPipe.fileHandleForWriting.write(input) }
        try? inputPipe.fileHandleForWriting.close()
        // Read both pipes concurrently so that a chatty process cannot block on a full pipe.
        let group = DispatchGroup()
        nonisolated(unsafe) var outData = Data()
        nonisolated(unsafe) var errData = Data()
        group.enter()
        DispatchQueue.global().async {
            outData = output.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        group.enter()
        DispatchQueue.global().async {
            errData = error.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        if group.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            group.wait()
        }
        process.waitUntilExit()
        return ToolResult(
            status: process.terminationStatus,
            standardOutput: String(decoding: outData, as: UTF8.self),
            standardError: String(decoding: errData, as: UTF8.self))
    }
}
