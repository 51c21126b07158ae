import Foundation
import Foundations
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

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

    /// The payment providers' published specs, examples and webhook vectors: `PSP_VECTORS`, else
    /// `Tests/Fixtures/psp` (a copy of the team's `shared/vectors/psp`, with its PROVENANCE.md and licences).
    public static let pspVectors: URL = {
        if let folder = ProcessInfo.processInfo.environment["PSP_VECTORS"] { return URL(fileURLWithPath: folder) }
        return root.appendingPathComponent("Tests/Fixtures/psp")
    }()
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
    /// How long the child ran, from start to exit (not counting any wait for a free slot before it started).
    public var elapsed: Duration = .zero

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
        return builtExecutable(named: "applepay")
    }

    /// An executable target of this package built beside the test bundle (`applepay`, `LibraryExamples`), or in
    /// `.build/debug` when none is found there.
    public static func builtExecutable(named name: String) -> URL {
        let bundle = Bundle.main.bundleURL
        let folders = [
            bundle.deletingLastPathComponent(), bundle, bundle.deletingLastPathComponent().deletingLastPathComponent(),
        ]
        for folder in folders {
            let candidate = folder.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory),
                !isDirectory.boolValue
            {
                return candidate
            }
        }
        return Repository.root.appendingPathComponent(".build/debug/\(name)")
    }

    /// Runs `applepay` with the arguments and optional standard input; waits at most `timeout` seconds.
    ///
    /// The child is waited for on threads of its own (see ``Subprocess``), so a test that runs the tool does not
    /// hold one of Swift's cooperative threads (there are as many as cores) and stall every other test meanwhile.
    public static func run(
        _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil, timeout: TimeInterval = 120
    ) async throws -> ToolResult {
        try await Subprocess.run(
            executable: executable, arguments, input: input, environment: environment, timeout: timeout)
    }

    /// Runs `applepay` and blocks the calling thread until it ends; prefer the `async` variant in tests.
    public static func runBlocking(
        _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil, timeout: TimeInterval = 120
    ) throws -> ToolResult {
        try Subprocess.runBlocking(
            executable: executable, arguments, input: input, environment: environment, timeout: timeout)
    }
}

/// Runs blocking work (a child process, a pipe, a socket, a long computation) on a thread of its own and
/// suspends the caller meanwhile.
///
/// Swift Testing runs tests on Swift's cooperative thread pool, which has only as many threads as cores (two
/// on CI). A test that blocks one of them stalls every other test in the process, including timing tests that
/// expect a 150 ms timeout to fire on time.
///
/// The thread runs at a lower scheduling priority (nice 10), and so do the threads and child processes it starts:
/// on a machine with two cores, key generation and child processes would otherwise take the CPU from the
/// cooperative threads, and every test waiting there would see its timers fire seconds late.
public func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            lowerThreadPriority()
            continuation.resume(with: Result { try body() })
        }
        thread.start()
    }
}

/// A value made once for the whole test run, on a thread of its own (see ``blocking(_:)``), in a new temporary folder
/// that lasts the run: tests await it without holding any of Swift's cooperative threads meanwhile (a `static let`
/// initialiser that made it would hold every waiting thread, and the pool has only as many threads as cores).
public struct MadeOnce<Value: Sendable>: Sendable {
    private let making: Task<Value, any Error>

    /// Starts making the value: `make` is given a new temporary folder named after `prefix`.
    public init(inFolder prefix: String, _ make: @escaping @Sendable (TemporaryDirectory) throws -> Value) {
        making = Task { try await blocking { try make(TemporaryDirectory(prefix: prefix)) } }
    }

    /// The value, once made (or what making it threw).
    public var value: Value { get async throws { try await making.value } }
}

/// TCP sockets to 127.0.0.1 for tests that write raw bytes.
public enum LoopbackSocket {
    /// A new TCP socket whose reads wait at most 5 s; negative when none could be made.
    public static func open() -> Int32 {
        #if canImport(Glibc)
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { return descriptor }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return descriptor
    }

    /// Connects `descriptor` to 127.0.0.1:`port`; whether it connected.
    public static func connect(_ descriptor: Int32, port: UInt16) -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }
}

/// A test's helper script (`python3 SCRIPT ARGUMENTS...`) that serves on 127.0.0.1 and prints its port as its
/// first line. `launch` blocks until that line: call it on a thread of its own (`blocking`).
public enum PortPrintingScript {
    /// Starts the script and reads its port; `nil` (the process terminated) when the first line is not a port.
    public static func launch(_ script: String, _ arguments: [String]) throws -> (process: Process, port: UInt16)? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let piece = output.fileHandleForReading.availableDataRetryingInterrupts()
            if piece.isEmpty { break }
            line.append(piece)
        }
        let first = line.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).first ?? Data()
        guard let port = UInt16(String(decoding: first, as: UTF8.self)) else {
            process.terminate()
            return nil
        }
        return (process, port)
    }
}

/// Sets the calling thread's nice value to 10 (Linux schedules each thread on its own; new threads and child
/// processes inherit it). Raising one's own nice value needs no privilege.
private func lowerThreadPriority() {
    #if os(Linux)
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)  // 0: the calling thread on Linux
    #endif
}

/// Runs external tools (`openssl`, `python3`, `curl`, the built `applepay`) and collects what they print.
///
/// The child is waited for on a thread of its own, its standard output and standard error are read by two
/// more threads at the same time (so neither pipe can fill up and block it), and standard input is written by
/// another. No work is put on Swift's cooperative pool or on Dispatch's global queues, which other tests use for
/// their timers.
public enum Subprocess {
    /// Runs `tool`, found on the `PATH` through `/usr/bin/env`, with the arguments and optional standard input.
    ///
    /// - Parameters:
    ///   - environment: variables added to (or replacing those of) the test process's environment.
    ///   - timeout: seconds after which the child is killed (SIGKILL); the result then has a nonzero status and
    ///     standard error says so.
    public static func run(
        _ tool: String, _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
        timeout: TimeInterval = 120
    ) async throws -> ToolResult {
        try await run(
            executable: URL(fileURLWithPath: "/usr/bin/env"), [tool] + arguments, input: input,
            environment: environment, timeout: timeout)
    }

    /// Runs the executable at `executable`; see ``run(_:_:input:environment:timeout:)``.
    ///
    /// At most ``concurrentChildren`` run at a time; the others wait without holding a thread. Dozens of
    /// children at once (the command-line tests start that many) would otherwise take the two cores from the
    /// tests that run in this process, even at a lower priority.
    public static func run(
        executable: URL, _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
        timeout: TimeInterval = 120
    ) async throws -> ToolResult {
        await slots.acquire()
        do {
            let result = try await blocking {
                try runBlocking(
                    executable: executable, arguments, input: input, environment: environment, timeout: timeout)
            }
            await slots.release()
            return result
        } catch {
            await slots.release()
            throw error
        }
    }

    /// How many children ``run(executable:_:input:environment:timeout:)`` lets run at the same time.
    public static let concurrentChildren = max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)

    private static let slots = Slots(count: concurrentChildren)

    /// A counting semaphore that suspends instead of blocking.
    private actor Slots {
        private var free: Int
        private var waiting: [CheckedContinuation<Void, Never>] = []

        init(count: Int) { free = count }

        func acquire() async {
            if free > 0 {
                free -= 1
                return
            }
            await withCheckedContinuation { waiting.append($0) }
        }

        func release() {
            if waiting.isEmpty {
                free += 1
            } else {
                waiting.removeFirst().resume()
            }
        }
    }

    /// Runs the executable and blocks the calling thread until it ends (for one-shot setup outside async code).
    public static func runBlocking(
        executable: URL, _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
        timeout: TimeInterval = 120
    ) throws -> ToolResult {
        _ = ignoreBrokenPipes
        let started = ContinuousClock.now
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let output = Pipe()
        let error = Pipe()
        let standardInput = input.map { _ in Pipe() }
        process.standardOutput = output
        process.standardError = error
        process.standardInput = standardInput ?? FileHandle.nullDevice
        try process.run()

        let finished = DispatchGroup()
        let outData = Mutex(Data())
        let errData = Mutex(Data())
        onThread(finished) {
            let data = output.fileHandleForReading.readToEndRetryingInterrupts()
            outData.withLock { $0 = data }
        }
        onThread(finished) {
            let data = error.fileHandleForReading.readToEndRetryingInterrupts()
            errData.withLock { $0 = data }
        }
        if let input, let writer = standardInput?.fileHandleForWriting {
            // A child that exits without reading gives EPIPE here, not a signal (see `ignoreBrokenPipes`).
            onThread(nil) {
                try? writer.write(contentsOf: input)
                try? writer.close()
            }
        }
        var killed = false
        if finished.wait(timeout: .now() + timeout) == .timedOut {
            // SIGKILL: the test process may have SIGTERM blocked, and children inherit the mask.
            kill(process.processIdentifier, SIGKILL)
            killed = true
            // A grandchild may still hold the pipes open: give up on the rest of the output after a while.
            _ = finished.wait(timeout: .now() + 10)
        }
        process.waitUntilExit()
        var standardError = String(decoding: errData.withLock { $0 }, as: UTF8.self)
        if killed {
            let name = arguments.first.map { "\(executable.lastPathComponent) \($0)" } ?? executable.lastPathComponent
            standardError += "\n[Subprocess: \(name) killed after \(timeout) s]\n"
        }
        return ToolResult(
            status: process.terminationStatus,
            standardOutput: String(decoding: outData.withLock { $0 }, as: UTF8.self),
            standardError: standardError, elapsed: ContinuousClock.now - started)
    }

    /// Writing to a child that has exited must fail with EPIPE rather than kill the test process.
    private static let ignoreBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    private static func onThread(_ group: DispatchGroup?, _ body: @escaping @Sendable () -> Void) {
        group?.enter()
        let thread = Thread {
            body()
            group?.leave()
        }
        thread.start()
    }
}

/// Keeps apart the tests that hold Swift's whole cooperative pool on purpose (to show that a server answers
/// anyway) and the tests that measure how quickly something answers on that pool (a 150 ms processor time
/// limit): all tests share one process, and on two cores the pool has two threads.
public enum CooperativePool {
    /// Runs `body`, which blocks every cooperative thread on purpose, while no measurement runs.
    public static func blockingEveryThread<T>(_ body: () async throws -> T) async rethrows -> T {
        await gate.enterExclusive()
        return try await withCleanup(body) { await gate.leaveExclusive() }
    }

    /// Runs the timing measurement `body` while no test holds the pool on purpose, once the pool has worked off
    /// its backlog (see ``waitUntilResponsive(threshold:limit:)``).
    public static func measuring<T>(_ body: () async throws -> T) async rethrows -> T {
        await gate.enterShared()
        await waitUntilResponsive()
        return try await withCleanup(body) { await gate.leaveShared() }
    }

    /// Waits until a new job on Swift's global executor starts within `threshold` three times in a row (at most
    /// `limit`): when every test of the run starts at once, their synchronous work queues up ahead of any new job
    /// for a second or so, and the Dispatch global queue (where timers run their handlers) shares those threads.
    public static func waitUntilResponsive(
        threshold: Duration = .milliseconds(20), limit: Duration = .seconds(20)
    ) async {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        var quietRounds = 0
        while quietRounds < 3, clock.now < deadline {
            let start = clock.now
            await Task.detached {}.value
            quietRounds = clock.now - start < threshold ? quietRounds + 1 : 0
        }
    }

    private static let gate = Gate()

    /// A readers-writer lock that suspends instead of blocking; a waiting writer goes before new readers.
    private actor Gate {
        private var readers = 0
        private var writing = false
        private var waitingReaders: [CheckedContinuation<Void, Never>] = []
        private var waitingWriters: [CheckedContinuation<Void, Never>] = []

        func enterShared() async {
            if !writing, waitingWriters.isEmpty {
                readers += 1
                return
            }
            await withCheckedContinuation { waitingReaders.append($0) }  // `readers` is counted by the waker
        }

        func leaveShared() {
            readers -= 1
            if readers == 0, !waitingWriters.isEmpty {
                writing = true
                waitingWriters.removeFirst().resume()
            }
        }

        func enterExclusive() async {
            if !writing, readers == 0 {
                writing = true
                return
            }
            await withCheckedContinuation { waitingWriters.append($0) }  // `writing` is set by the waker
        }

        func leaveExclusive() {
            writing = false
            if !waitingReaders.isEmpty {
                readers += waitingReaders.count
                for reader in waitingReaders { reader.resume() }
                waitingReaders.removeAll()
            } else if !waitingWriters.isEmpty {
                writing = true
                waitingWriters.removeFirst().resume()
            }
        }
    }
}

/// A one-way gate that suspends its waiters until someone opens it: whoever finishes the awaited work calls
/// `open()`, which resumes every waiter at once (no polling). Waiting on an open latch returns at once.
public final class Latch: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Whether `open()` has been called.
    public var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Opens the latch and resumes every waiter; later calls do nothing.
    public func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.isOpen else { return [] }
            state.isOpen = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Opens the latch after `delay` (a Dispatch timer), unless it is opened before.
    public func open(after delay: Duration) {
        let (seconds, attoseconds) = delay.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in open() }
    }

    /// Suspends until the latch is open.
    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.isOpen { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}

/// Threads of the tests' own that run tasks preferring them (`withTaskExecutorPreference`), apart from Swift's
/// cooperative pool. The suites run in parallel in one process, and some hold the pool's threads (as many as
/// cores) with blocking work for seconds at a time: code that measures how long something takes, or that must keep
/// a connection busy, runs here so that it measures the code under test and not the pool's queue.
public final class TestThreads: TaskExecutor, Sendable {
    /// Two threads for every suite's timed code.
    public static let shared = TestThreads(threads: 2)

    private let jobs = Mutex<[UnownedJob]>([])
    private let available = DispatchSemaphore(value: 0)

    private init(threads: Int) {
        for _ in 0..<threads {
            let thread = Thread { [self] in
                while true {
                    available.wait()
                    guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                    job.runSynchronously(on: asUnownedTaskExecutor())
                }
            }
            thread.name = "TestThreads"
            thread.start()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        available.signal()
    }
}

/// Runs `body`, and the tasks it starts, on ``TestThreads`` instead of the cooperative pool.
public func onTestThreads<T: Sendable>(_ body: @Sendable () async throws -> T) async rethrows -> T {
    try await withTaskExecutorPreference(TestThreads.shared) { try await body() }
}

extension FileHandle {
    /// What the descriptor has now, or at least one byte once it comes; empty at the end of the file or on an error.
    /// A read that a signal interrupts (`EINTR`) is made again: Foundation's `availableData` and
    /// `readDataToEndOfFile()` stop the whole test process with `fatalError` on it (seen once under a full suite on
    /// a busy machine).
    public func availableDataRetryingInterrupts() -> Data {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fileDescriptor, $0.baseAddress, $0.count) }
            if count >= 0 { return Data(buffer[0..<count]) }
            if errno != EINTR { return Data() }
        }
    }

    /// Everything up to the end of the file, read as ``availableDataRetryingInterrupts()`` reads.
    public func readToEndRetryingInterrupts() -> Data {
        var data = Data()
        while true {
            let piece = availableDataRetryingInterrupts()
            if piece.isEmpty { return data }
            data.append(piece)
        }
    }
}
