import Foundation
import Synchronization

/// Log lines written behind their callers to a file descriptor: a line is appended to a buffer and a thread of its
/// own writes whatever has gathered, so a busy server makes one `write` for many lines and a request never waits
/// for the terminal or the pipe. A buffer past 4 MB (the reader is not keeping up) is written by the caller itself,
/// so memory stays bounded. ``flush()`` waits until every line appended so far is written.
public final class LogOutput: Sendable {
    /// Standard error.
    public static let standardError = LogOutput(descriptor: 2)

    private struct State {
        var pending: [UInt8] = []
        /// Lines appended so far and lines written so far, counted in appends.
        var appended = 0
        var written = 0
        var writerWaiting = false
    }

    private let descriptor: Int32
    private let state = Mutex(State())
    private let wake = NSCondition()
    private let written = NSCondition()
    private static let directWriteThreshold = 4 << 20

    /// Starts the writing thread for `descriptor`, which stays open as long as the process.
    public init(descriptor: Int32) {
        self.descriptor = descriptor
        let thread = Thread { [self] in run() }
        thread.name = "LogOutput.\(descriptor)"
        thread.start()
    }

    /// Appends one line (a newline is added).
    public func write(line: String) {
        let (signal, behind) = state.withLock { state -> (Bool, Bool) in
            state.pending.append(contentsOf: line.utf8)
            state.pending.append(UInt8(ascii: "\n"))
            state.appended += 1
            return (state.writerWaiting, state.pending.count > Self.directWriteThreshold)
        }
        if behind {
            // The reader is behind: this caller pays for the write, which keeps memory bounded.
            writeGathered()
        } else if signal {
            wake.lock()
            wake.signal()
            wake.unlock()
        }
    }

    /// Returns once every line appended before the call is written.
    public func flush() {
        let target = state.withLock { $0.appended }
        wake.lock()
        wake.signal()
        wake.unlock()
        written.lock()
        while state.withLock({ $0.written }) < target {
            _ = written.wait(until: Date().addingTimeInterval(0.05))
        }
        written.unlock()
    }

    private func run() {
        while true {
            wake.lock()
            while state.withLock({ state -> Bool in
                state.writerWaiting = state.pending.isEmpty
                return state.writerWaiting
            }) {
                wake.wait()
            }
            wake.unlock()
            // Let the lines of a busy moment gather into one write.
            usleep(1000)
            writeGathered()
        }
    }

    /// Takes and writes everything gathered, in order (one writer at a time), then wakes `flush()`.
    private func writeGathered() {
        written.lock()
        let (batch, count) = state.withLock { state -> ([UInt8], Int) in
            defer { state.pending.removeAll(keepingCapacity: true) }
            return (state.pending, state.appended)
        }
        writeAll(batch)
        state.withLock { $0.written = max($0.written, count) }
        written.broadcast()
        written.unlock()
    }

    private func writeAll(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let result = Foundation.write(descriptor, base + offset, buffer.count - offset)
                if result > 0 {
                    offset += result
                } else if result < 0 && errno == EINTR {
                    continue
                } else {
                    return  // a closed or broken output: the lines are lost, the server goes on
                }
            }
        }
    }
}
