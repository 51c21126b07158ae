import ArgumentParser
import Foundation
import HTTPClient
import HTTPCore
import HTTPServer
import Synchronization

/// `applepay bench http [--requests N] [--delay-ms MS]`
struct BenchHTTPCommand: StatusCommand {
    static let configuration = CommandConfiguration(
        commandName: "http",
        abstract: "Send many concurrent requests to a slow loopback server; print requests per second and threads.",
        usage: "applepay bench http [--requests N] [--delay-ms MS]",
        discussion: """
            Starts an HTTPServer on 127.0.0.1 that answers every request after the delay, then sends all the \
            requests twice: with 128 threads each making blocking `HTTPClient.send(_:)` calls (how \
            `send(_:) async` ran before the event loop: a pool of 128 transfer threads), and as concurrent \
            `send(_:) async` calls on the client's event loop. Prints one JSON line per way (requests per second, \
            peak threads of the process and their growth, seconds) and one with the ratio.
            """)

    @Option(
        name: .customLong("requests"), parsing: .unconditional,
        help: ArgumentHelp("Requests, all sent at once (default 1000).", valueName: "N"))
    var requestsOption: Int?

    @Option(
        name: .customLong("delay-ms"), parsing: .unconditional,
        help: ArgumentHelp("How long the server waits before each answer (default 300).", valueName: "MS"))
    var delayOption: Int?

    var requests: Int { requestsOption ?? 1000 }
    var delay: Duration { .milliseconds(delayOption ?? 300) }

    func validate() throws {
        if let requestsOption, !(1...20_000).contains(requestsOption) {
            throw ValidationError("invalid value '\(requestsOption)' for --requests")
        }
        if let delayOption, !(0...10_000).contains(delayOption) {
            throw ValidationError("invalid value '\(delayOption)' for --delay-ms")
        }
    }

    struct Report: Encodable {
        var client: String
        var requests: Int
        var requestsPerSecond: Int
        var peakThreads: Int
        var addedThreads: Int
        var seconds: Double
    }

    struct Ratio: Encodable {
        var requestsPerSecondRatio: Double
        var peakThreadsOld: Int
        var peakThreadsNew: Int
    }

    static func threads() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
    }

    func perform() async throws -> ExitCode {
        let delay = self.delay
        let responder = ClosureResponder { _ in
            try? await Task.sleep(for: delay)
            return .text("ok")
        }
        let count = requests
        let configuration = HTTPServer.Configuration(
            port: 0, connectionLimit: 2 * count + 64, perClientConnectionLimit: 0)
        return try await HTTPServer.withServer(configuration: configuration, responder: responder) { server in
            let url = "http://127.0.0.1:\(server.port)/"
            let old = try await measure("threads128") { client in
                // The former `send(_:) async`: at most 128 transfers at once, each on a thread of its own.
                let next = Mutex(0)
                let failures = Mutex(0)
                let done = DispatchGroup()
                for _ in 0..<min(128, count) {
                    done.enter()
                    let thread = Thread {
                        defer { done.leave() }
                        while next.withLock({ index in
                            defer { index += 1 }
                            return index < count
                        }) {
                            if (try? client.send(HTTPClientRequest(url: url)))?.status != 200 {
                                failures.withLock { $0 += 1 }
                            }
                        }
                    }
                    thread.start()
                }
                await withCheckedContinuation { continuation in
                    done.notify(queue: .global()) { continuation.resume() }
                }
                return failures.withLock { $0 }
            }
            let new = try await measure("eventLoop") { client in
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<count {
                        group.addTask { try await client.send(HTTPClientRequest(url: url)).status == 200 ? 0 : 1 }
                    }
                    return try await group.reduce(0, +)
                }
            }
            for report in [old, new] { print(try Output.json(report)) }
            let ratio = Ratio(
                requestsPerSecondRatio: (Double(new.requestsPerSecond) / Double(max(1, old.requestsPerSecond)) * 100)
                    .rounded() / 100,
                peakThreadsOld: old.peakThreads, peakThreadsNew: new.peakThreads)
            print(try Output.json(ratio))
            return .success
        }
    }

    /// Runs `body` (which returns its failures) on a fresh client while sampling the process's threads.
    private func measure(_ name: String, _ body: @escaping @Sendable (HTTPClient) async throws -> Int) async throws
        -> Report
    {
        let client = HTTPClient(configuration: .init(timeout: .seconds(60)))
        let before = Self.threads()
        let peak = Atomic(before)
        let sampler = Thread {
            while peak.load(ordering: .relaxed) >= 0 {
                let now = Self.threads()
                if now > peak.load(ordering: .relaxed) { peak.store(now, ordering: .relaxed) }
                usleep(10_000)
            }
        }
        sampler.start()
        let clock = ContinuousClock()
        let start = clock.now
        let failures = try await body(client)
        let elapsed = clock.now - start
        let peakThreads = peak.exchange(-1, ordering: .relaxed)
        guard failures == 0 else { throw BenchFailure(message: "\(failures) of \(requests) requests failed (\(name))") }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Report(
            client: name, requests: requests, requestsPerSecond: Int(Double(requests) / seconds),
            peakThreads: peakThreads - 1, addedThreads: peakThreads - 1 - before,
            seconds: (seconds * 1000).rounded() / 1000)
    }

    struct BenchFailure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
