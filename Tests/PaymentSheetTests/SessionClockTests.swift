import Foundation
import PaymentSheet
import Testing

@Suite("Session clocks")
struct SessionClockTests {
    /// Starts a sleep until `deadline`, cancels it after a moment, and returns what the sleep threw.
    static func cancelledSleep(on clock: any SessionClock, until deadline: Date) async -> (any Error)? {
        let sleeper = Task { try await clock.sleep(until: deadline) }
        try? await Task.sleep(for: .milliseconds(50))
        sleeper.cancel()
        do {
            try await sleeper.value
            return nil
        } catch {
            return error
        }
    }

    @Test("a deadline no duration can hold waits until cancelled instead of trapping")
    func farDeadlines() async {
        for seconds in [1e30, Double.infinity] {
            let deadline = Date(timeIntervalSince1970: seconds)
            #expect(await Self.cancelledSleep(on: SystemSessionClock(), until: deadline) is CancellationError)
            #expect(await Self.cancelledSleep(on: VirtualClock(), until: deadline) is CancellationError)
        }
    }

    @Test("a deadline long past returns at once on both clocks")
    func pastDeadlines() async throws {
        for seconds in [-1e30, -Double.infinity, 0, Double.nan] {
            try await SystemSessionClock().sleep(until: Date(timeIntervalSince1970: seconds))
            try await VirtualClock().sleep(until: Date(timeIntervalSince1970: seconds))
        }
    }
}
