import Foundation
import Foundations
import HTTPClient
import HTTPCore
import HTTPServer
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Cancels `request`, expects it to end with `CancellationError`, and answers how long that took.
func expectCancelled<T: Sendable>(
    _ request: Task<T, any Error>, sourceLocation: SourceLocation = #_sourceLocation
) async -> Duration {
    let clock = ContinuousClock()
    let start = clock.now
    request.cancel()
    let outcome = await request.result
    let elapsed = clock.now - start
    #expect(throws: CancellationError.self, sourceLocation: sourceLocation) { try outcome.get() }
    return elapsed
}

@Suite("HTTP client event loop")
struct HTTPClientEventLoopTests {
    /// Runs `body` on the test threads with a socket that accepts and never answers, and a client whose requests
    /// time out after `timeout`.
    static func withBlackHole(
        timeout: Duration, _ body: @Sendable (BlackHole, HTTPClient) async throws -> Void
    ) async throws {
        try await onTestThreads { try await body(try BlackHole(), HTTPClient(configuration: .init(timeout: timeout))) }
    }

    /// A responder that answers "ok" `delay` after each request, without holding a thread meanwhile.
    static func answering(after delay: Duration) -> ClosureResponder {
        ClosureResponder { _ in
            let answered = Latch()
            answered.open(after: delay)
            await answered.wait()
            return .text("ok")
        }
    }

    @Test("1,000 concurrent requests to a server answering after 300 ms complete on a handful of threads")
    func thousandInFlight() async throws {
        try await onTestThreads {
            let responder = Self.answering(after: .milliseconds(300))
            // Every transfer comes from 127.0.0.1, and each HTTP/1.1 request in flight needs a connection of its own.
            try await HTTPServer.withServer(
                configuration: .init(port: 0, connectionLimit: 4096, perClientConnectionLimit: 0), responder: responder
            ) { server in
                let client = HTTPClient(configuration: .init(timeout: .seconds(60)))
                let url = "http://127.0.0.1:\(server.port)/"
                let count = 1000
                // Sampled on a thread of its own: on a busy machine the cooperative pool (two threads here, shared with
                // every suite running beside this one) may not run a sampling task while the transfers are in flight.
                let sampler = Sampler {
                    (
                        clientThreads: client.eventLoopThreads,
                        inFlight: client.transfersInFlight
                    )
                }
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<count { group.addTask { try await client.send(HTTPClientRequest(url: url)).status } }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
                let samples = sampler.stop()
                #expect(statuses == Array(repeating: 200, count: count))
                let seen = (
                    clientThreads: samples.map(\.clientThreads).max() ?? 0,
                    inFlight: samples.map(\.inFlight).max() ?? 0
                )
                // The client's one event-loop thread carries every transfer (the process's own count would include
                // the server's threads and those of the suites running beside this one).
                #expect(seen.clientThreads == 1, "\(seen.clientThreads) threads of this client at the peak")
                #expect(seen.inFlight > 100, "at most \(seen.inFlight) transfers in flight at once")
                #expect(client.transfersInFlight == 0)
            }
        }
    }

    @Test("cancelling the calling task aborts a transfer the server never answers")
    func cancelHanging() async throws {
        try await Self.withBlackHole(timeout: .seconds(60)) { hole, client in
            let request = Task(executorPreference: TestThreads.shared) {
                try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(hole.port)/"))
            }
            // Connected and sent (the kernel accepts into the backlog); nothing will ever come back.
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(20)
            while client.transfersInFlight == 0 && clock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            try await Task.sleep(for: .milliseconds(200))
            let elapsed = await expectCancelled(request)
            // Removed on the loop thread at once; generous for a busy machine.
            #expect(elapsed < .seconds(3), "took \(elapsed)")
            #expect(client.transfersInFlight == 0)
        }
    }

    @Test("a deadline against a socket that accepts and never answers fires as a timeout")
    func deadlineOnBlackHole() async throws {
        try await Self.withBlackHole(timeout: .milliseconds(500)) { hole, client in
            let clock = ContinuousClock()
            let start = clock.now
            await #expect(throws: HTTPClientError(.timeout, "")) {
                _ = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(hole.port)/"))
            }
            let elapsed = clock.now - start
            // Without its deadline the request would wait forever; a busy machine may keep the awaiting task off the
            // cooperative pool for a few seconds.
            #expect(elapsed >= .milliseconds(450) && elapsed < .seconds(30), "took \(elapsed)")
            // Many at once, each with its own deadline, none holding a thread.
            let url = "http://127.0.0.1:\(hole.port)/"
            let codes = await withTaskGroup(of: String.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        do {
                            _ = try await client.send(HTTPClientRequest(url: url))
                            return "answered"
                        } catch let error as HTTPClientError {
                            return error.code.rawValue
                        } catch {
                            return "\(error)"
                        }
                    }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(codes == Array(repeating: "timeout", count: 50))
        }
    }

    @Test("connections opened by concurrent requests are kept, past a quieter moment, and reused by the next ones")
    func concurrentReuse() async throws {
        try await onTestThreads {
            let responder = Self.answering(after: .milliseconds(100))
            try await HTTPServer.withServer(
                configuration: .init(port: 0, perClientConnectionLimit: 0), responder: responder
            ) { server in
                // Kept longer than a busy machine may take between the two batches.
                let client = HTTPClient(
                    configuration: .init(timeout: .seconds(60), idleConnectionLifetime: .seconds(60)))
                let url = "http://127.0.0.1:\(server.port)/"
                func batch() async throws -> [Bool] {
                    try await withThrowingTaskGroup(of: Bool.self) { group in
                        for _ in 0..<10 {
                            group.addTask { try await client.send(HTTPClientRequest(url: url)).reusedConnection }
                        }
                        return try await group.reduce(into: [Bool]()) { $0.append($1) }
                    }
                }
                let first = try await batch()
                #expect(first.filter { $0 }.count <= 1, "the first batch connects: \(first)")
                // Requests one at a time between the batches: libcurl's own cache holds four times the transfers in
                // flight, and closes the oldest connection each time one ends above that, six of the ten here.
                for _ in 0..<6 { _ = try await client.send(HTTPClientRequest(url: url)) }
                let second = try await batch()
                // A server may close an idle kept-alive connection at any moment; nearly all must be reused.
                #expect(
                    second.filter { $0 }.count >= 8, "the second batch reuses the first one's connections: \(second)")
                #expect(server.openConnections <= 10)
            }
        }
    }
}

/// Calls `sample` every 20 ms on a thread of its own until stopped.
final class Sampler<Sample: Sendable>: Sendable {
    private let samples = Mutex<[Sample]>([])
    private let running = Atomic(true)
    private let done = DispatchSemaphore(value: 0)

    init(_ sample: @escaping @Sendable () -> Sample) {
        let thread = Thread { [self] in
            while running.load(ordering: .relaxed) {
                let value = sample()
                samples.withLock { $0.append(value) }
                usleep(20_000)
            }
            done.signal()
        }
        thread.start()
    }

    /// Ends the sampling and returns what was seen.
    func stop() -> [Sample] {
        running.store(false, ordering: .relaxed)
        done.wait()
        return samples.withLock { $0 }
    }
}
