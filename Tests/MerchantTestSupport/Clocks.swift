// Clocks a test moves.

import Foundation
import Synchronization

/// A clock the test moves: the server's "now" for cancellations, token times and the scheduler.
public final class VirtualClock: Sendable {
    private let now: Mutex<Date>
    public init(_ start: Date = Date()) { now = Mutex(start) }
    public func set(_ date: Date) { now.withLock { $0 = date } }
    public var date: Date { now.withLock { $0 } }
    public var read: @Sendable () -> Date { { [self] in self.date } }
}

/// A server clock a test moves: `now` runs the offset given to ``move(ahead:)`` (none at first) ahead of the time.
public final class MovableClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    public var now: @Sendable () -> Date { { Date().addingTimeInterval(self.offset.withLock { $0 }) } }

    /// From now on the clock runs `seconds` ahead.
    public func move(ahead seconds: TimeInterval) { offset.withLock { $0 = seconds } }
}
