import Foundation
import JSONCoding
import Synchronization

/// One JSON object per line (to standard error by default): time, level, message and fields. Callers pass only
/// identifiers, codes, statuses and durations: never a PAN, cryptogram, key or token.
public struct RequestLogger: Sendable {
    /// Where lines go; each call receives one complete line without its newline.
    public let sink: @Sendable (String) -> Void
    /// Waits until every line given to `sink` so far is written (a no-op for sinks that write at once).
    public let flush: @Sendable () -> Void

    public init(sink: @escaping @Sendable (String) -> Void, flush: @escaping @Sendable () -> Void = {}) {
        self.sink = sink
        self.flush = flush
    }

    /// Lines to standard error, written behind the caller (``LogOutput``): a request never waits for the write.
    public static let standardError = RequestLogger(
        sink: { LogOutput.standardError.write(line: $0) }, flush: { LogOutput.standardError.flush() })

    /// Discards everything.
    public static let silent = RequestLogger { _ in }

    /// Writes a line with `level` (`info`, `warn`, `error`), `msg` and the given fields (strings, numbers, booleans),
    /// keys in sorted order.
    public func log(_ level: String, _ message: String, _ fields: [String: any Sendable] = [:]) {
        var entries = fields.filter { $0.key != "time" && $0.key != "level" && $0.key != "msg" }.map {
            ($0.key, $0.value)
        }
        entries.append(("time", Self.timestamp(Date())))
        entries.append(("level", level))
        entries.append(("msg", message))
        entries.sort { $0.0 < $1.0 }
        var line: [UInt8] = []
        line.reserveCapacity(256)
        line.append(UInt8(ascii: "{"))
        for (index, (key, value)) in entries.enumerated() {
            if index > 0 { line.append(UInt8(ascii: ",")) }
            SortedJSONEncoder.appendString(key, to: &line)
            line.append(UInt8(ascii: ":"))
            switch value {
            case let value as String: SortedJSONEncoder.appendString(value, to: &line)
            case let value as Int: line.append(contentsOf: String(value).utf8)
            case let value as Int64: line.append(contentsOf: String(value).utf8)
            case let value as UInt16: line.append(contentsOf: String(value).utf8)
            case let value as Double where value.isFinite: line.append(contentsOf: String(value).utf8)
            case let value as Bool: line.append(contentsOf: (value ? "true" : "false").utf8)
            default: line.append(contentsOf: "null".utf8)
            }
        }
        line.append(UInt8(ascii: "}"))
        sink(String(decoding: line, as: UTF8.self))
    }

    /// ISO 8601 with milliseconds, UTC (`2026-11-30T21:19:16.123Z`), from the C calendar: no formatter per line.
    package static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds.quotient(dividingBy: 1000))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var text: [UInt8] = []
        text.reserveCapacity(24)
        func append(_ value: Int, digits: Int) {
            var divisor = 1
            for _ in 1..<digits { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                text.append(UInt8(ascii: "0") + UInt8(rest / divisor))
                rest %= divisor
                divisor /= 10
            }
        }
        append(Int(parts.tm_year) + 1900, digits: 4)
        text.append(UInt8(ascii: "-"))
        append(Int(parts.tm_mon) + 1, digits: 2)
        text.append(UInt8(ascii: "-"))
        append(Int(parts.tm_mday), digits: 2)
        text.append(UInt8(ascii: "T"))
        append(Int(parts.tm_hour), digits: 2)
        text.append(UInt8(ascii: ":"))
        append(Int(parts.tm_min), digits: 2)
        text.append(UInt8(ascii: ":"))
        append(Int(parts.tm_sec), digits: 2)
        text.append(UInt8(ascii: "."))
        append(Int(milliseconds.remainder(dividingBy: 1000)), digits: 3)
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }
}

extension Int64 {
    /// Division rounding toward negative infinity (times before 1970 included).
    fileprivate func quotient(dividingBy divisor: Int64) -> Int64 {
        let (quotient, remainder) = quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? quotient - 1 : quotient
    }

    /// The remainder that goes with ``quotient(dividingBy:)``: never negative.
    fileprivate func remainder(dividingBy divisor: Int64) -> Int64 {
        let remainder = self % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }
}

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
