import Foundation
import Foundations
import Synchronization

/// Log lines written behind their callers to a file descriptor: a line is appended to a buffer and a thread of its
/// own writes whatever has gathered, so a busy server makes one `write` for many lines and a request never waits
/// for the terminal or the pipe. A buffer past 4 MB (the reader is not keeping up) is written by the caller itself,
/// so memory stays bounded. ``flush()`` writes every line appended so far before it returns.
///
/// The thread waits for a first line, then lets lines gather for ``gatheringWindow`` before each write, and goes on
/// doing so without being woken while lines keep coming: a busy server costs the thread one wake-up a window (not
/// one every few requests, as a 1 ms window did: 0.6 context switches a payment), and its callers no signal at all.
public final class LogOutput: Sendable {
    /// Standard error.
    public static let standardError = LogOutput(descriptor: 2)

    /// How long lines gather before a write once the first has come.
    public static let gatheringWindow: Duration = .milliseconds(10)

    private struct State {
        var pending: [UInt8] = []
        var writerWaiting = false
    }

    private let descriptor: Int32
    private let state = Mutex(State())
    private let wake = NSCondition()
    /// Held by whoever writes a batch, from taking it to the end of its write: batches reach the descriptor in order.
    private let writing = NSLock()
    private static let directWriteThreshold = 4 << 20

    /// Starts the writing thread for `descriptor`, which stays open as long as the process.
    public init(descriptor: Int32) {
        self.descriptor = descriptor
        Thread { [self] in
            CurrentThread.setName("LogOutput.\(descriptor)")
            run()
        }.start()
    }

    /// Appends one line (a newline is added).
    public func write(line: String) {
        let (signal, behind) = state.withLock { state -> (Bool, Bool) in
            state.pending.append(contentsOf: line.utf8)
            state.pending.append(UInt8(ascii: "\n"))
            defer { state.writerWaiting = false }
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

    /// Returns once every line appended before the call is written (by this caller, or by the write under way that
    /// took it).
    public func flush() { writeGathered() }

    private func run() {
        let window = UInt32(Self.gatheringWindow / .microseconds(1))
        while true {
            wake.lock()
            // `writerWaiting` is set and cleared under the state's lock: a line appended after the check below
            // finds it set and signals, and the signal cannot come before the wait (it needs `wake`'s lock).
            while state.withLock({ state -> Bool in
                state.writerWaiting = state.pending.isEmpty
                return state.writerWaiting
            }) {
                wake.wait()
            }
            wake.unlock()
            // Let the lines of a busy moment gather into one write.
            usleep(window)
            writeGathered()
        }
    }

    /// Takes and writes everything gathered, in order (one writer at a time).
    private func writeGathered() {
        writing.lock()
        defer { writing.unlock() }
        let batch = state.withLock { state -> [UInt8] in
            defer { state.pending.removeAll(keepingCapacity: true) }
            return state.pending
        }
        writeAll(batch)
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
