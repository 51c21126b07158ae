import Testing

@testable import Foundations

@Suite("Bulkhead: a bounded share for one outside party")
struct BulkheadTests {
    @Test("admits up to the limit at once, queues up to the queue's size, refuses past both at once")
    func limits() async {
        let bulkhead = Bulkhead(
            name: "processor", limits: .init(maximumInFlight: 2, maximumQueued: 1, maximumWait: .seconds(60)))
        #expect(await bulkhead.acquire())
        #expect(await bulkhead.acquire())
        let queued = Task { await bulkhead.acquire() }
        while bulkhead.counts.queued < 1 { await Task.yield() }
        // In flight and queue full: refused without waiting.
        #expect(await bulkhead.acquire() == false)
        #expect(bulkhead.counts == .init(inFlight: 2, queued: 1, refused: 1))
        // A finished call passes its place to the waiter.
        bulkhead.release()
        #expect(await queued.value)
        #expect(bulkhead.counts == .init(inFlight: 2, queued: 0, refused: 1))
        bulkhead.release()
        bulkhead.release()
        #expect(bulkhead.counts.inFlight == 0)
    }

    @Test("a waiter is refused when no place frees within the wait, and when its task is cancelled")
    func waitsAreBounded() async {
        let bulkhead = Bulkhead(
            name: "gateway", limits: .init(maximumInFlight: 1, maximumQueued: 4, maximumWait: .milliseconds(50)))
        #expect(await bulkhead.acquire())
        #expect(await bulkhead.acquire() == false)  // the only place is never released: the wait runs out
        let patient = Bulkhead(
            name: "apns", limits: .init(maximumInFlight: 1, maximumQueued: 4, maximumWait: .seconds(600)))
        #expect(await patient.acquire())
        let waiter = Task { await patient.acquire() }
        while patient.counts.queued < 1 { await Task.yield() }
        waiter.cancel()
        #expect(await waiter.value == false)
        #expect(patient.counts == .init(inFlight: 1, queued: 0, refused: 1))
        // The refused waiter took no place: the next release frees it.
        patient.release()
        #expect(patient.counts.inFlight == 0)
    }

    @Test("withPermit runs the body in a place and gives it back, also when the body throws")
    func withPermit() async throws {
        struct Failure: Error {}
        let bulkhead = Bulkhead(
            name: "processor", limits: .init(maximumInFlight: 1, maximumQueued: 0, maximumWait: .seconds(1)))
        #expect(await bulkhead.withPermit { 7 } == 7)
        await #expect(throws: Failure.self) { try await bulkhead.withPermit { throw Failure() } }
        #expect(bulkhead.counts.inFlight == 0)
        #expect(await bulkhead.acquire())
        #expect(await bulkhead.withPermit { 8 } == nil)  // no queue: refused at once
    }

    @Test("many callers at once never exceed the limit")
    func concurrentCallers() async {
        let bulkhead = Bulkhead(
            name: "processor", limits: .init(maximumInFlight: 3, maximumQueued: 1000, maximumWait: .seconds(600)))
        let peak = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    await bulkhead.withPermit {
                        let inFlight = bulkhead.counts.inFlight
                        await Task.yield()
                        return inFlight
                    } ?? -1
                }
            }
            return await group.reduce(0) { max($0, $1) }
        }
        #expect(peak <= 3 && peak >= 1)
        #expect(bulkhead.counts == .init(inFlight: 0, queued: 0, refused: 0))
    }
}
