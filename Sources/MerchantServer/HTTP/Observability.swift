import Foundation
import HTTPServer
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
    static func timestamp(_ date: Date) -> String {
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

/// Middleware that writes one log line and records metrics for every request the router sees (404, 405 and 413
/// included): method, route pattern, status, duration, request id, the checkout and order ids and the error
/// code. Fields come from the context, the thrown error and the response's `logFields`: never card data.
public struct RequestLogging: Middleware {
    public let logger: RequestLogger
    public let metrics: Metrics

    public init(logger: RequestLogger, metrics: Metrics) {
        self.logger = logger
        self.metrics = metrics
    }

    public func handle(_ request: HTTPRequest, context: RequestContext, next: Next) async throws -> HTTPResponse {
        let clock = ContinuousClock()
        let start = clock.now
        var code: String?
        let response: HTTPResponse
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            code = error.code
            response = error.response
        } catch {
            code = HTTPError.internalError().code
            response = HTTPError.internalError().response
        }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        // Labels from a fixed set: the router's patterns, the methods HTTP defines; anything else is `other`.
        let route = context.route ?? "other"
        let method = Metrics.methodLabel(request.method.rawValue)
        metrics.recordRequest(route: route, method: method, status: response.status, seconds: seconds)
        var line: [String: any Sendable] = [
            "method": method, "route": route, "status": response.status,
            "durationMs": (seconds * 1_000_000).rounded() / 1000, "requestId": context.requestID,
        ]
        if let id = context.parameters["id"], id.hasPrefix("chk_") { line["checkoutId"] = id }
        if let code { line["code"] = code }
        for (key, value) in response.logFields { line[key] = value }
        let level = response.status >= 500 ? "error" : response.status >= 400 ? "warn" : "info"
        logger.log(level, "request", line)
        return response
    }
}

/// Counters and a latency histogram in the Prometheus text format (`GET /metrics`).
public final class Metrics: Sendable {
    /// Upper bounds of the latency histogram's buckets, in seconds.
    public static let latencyBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private struct RequestKey: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    private struct Histogram {
        var buckets = [Int](repeating: 0, count: Metrics.latencyBuckets.count)
        var count = 0
        var sum = 0.0
    }

    private struct State {
        var requests: [RequestKey: Int] = [:]
        var latency: [String: Histogram] = [:]
        var payments: [String: Int] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// The methods counted under their own name; any other is counted as `other`.
    public static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    /// `method` if it is one of ``knownMethods``, else `other`.
    public static func methodLabel(_ method: String) -> String { knownMethods.contains(method) ? method : "other" }

    /// Counts one answered request and its duration. `route` must come from a fixed set (the router's patterns or
    /// `other`); a method outside ``knownMethods`` is counted as `other`, a status outside 100-599 as 0.
    public func recordRequest(route: String, method: String, status: Int, seconds: Double) {
        let method = Self.methodLabel(method)
        let status = (100...599).contains(status) ? status : 0
        state.withLock { state in
            state.requests[RequestKey(route: route, method: method, status: status), default: 0] += 1
            var histogram = state.latency[route] ?? Histogram()
            for (index, bound) in Self.latencyBuckets.enumerated() where seconds <= bound {
                histogram.buckets[index] += 1
            }
            histogram.count += 1
            histogram.sum += seconds
            state.latency[route] = histogram
        }
    }

    /// Counts one payment attempt by outcome (`approved`, `declined`, `error`, `refused`, `replayed`, ...).
    public func recordPayment(outcome: String) {
        state.withLock { $0.payments[outcome, default: 0] += 1 }
    }

    /// How many payments ended with `outcome`.
    public func payments(outcome: String) -> Int { state.withLock { $0.payments[outcome] ?? 0 } }

    /// The Prometheus text exposition.
    public func render() -> String {
        let snapshot = state.withLock { $0 }
        var lines: [String] = []
        lines.append("# HELP applepay_http_requests_total HTTP requests answered, by route, method and status.")
        lines.append("# TYPE applepay_http_requests_total counter")
        for (key, count) in snapshot.requests.sorted(by: {
            ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status)
        }) {
            lines.append(
                "applepay_http_requests_total{route=\"\(Self.escape(key.route))\",method=\"\(Self.escape(key.method))\",status=\"\(key.status)\"} \(count)"
            )
        }
        lines.append("# HELP applepay_payments_total Payment attempts, by outcome.")
        lines.append("# TYPE applepay_payments_total counter")
        for (outcome, count) in snapshot.payments.sorted(by: { $0.key < $1.key }) {
            lines.append("applepay_payments_total{outcome=\"\(Self.escape(outcome))\"} \(count)")
        }
        lines.append("# HELP applepay_http_request_duration_seconds Time to answer a request, by route.")
        lines.append("# TYPE applepay_http_request_duration_seconds histogram")
        for (route, histogram) in snapshot.latency.sorted(by: { $0.key < $1.key }) {
            let label = Self.escape(route)
            for (index, bound) in Self.latencyBuckets.enumerated() {
                lines.append(
                    "applepay_http_request_duration_seconds_bucket{route=\"\(label)\",le=\"\(bound)\"} \(histogram.buckets[index])"
                )
            }
            lines.append(
                "applepay_http_request_duration_seconds_bucket{route=\"\(label)\",le=\"+Inf\"} \(histogram.count)")
            lines.append("applepay_http_request_duration_seconds_sum{route=\"\(label)\"} \(histogram.sum)")
            lines.append("applepay_http_request_duration_seconds_count{route=\"\(label)\"} \(histogram.count)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
