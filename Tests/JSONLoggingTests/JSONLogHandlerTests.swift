import Foundation
import JSONLogging
import Logging
import Synchronization
import Testing

/// Lines a ``JSONLogHandler`` wrote, kept in memory.
final class CapturedLines: Sendable {
    private let lines = Mutex<[String]>([])

    func logger(level: Logger.Level = .info) -> Logger {
        Logger(label: "test") { _ in
            JSONLogHandler(logLevel: level) { [self] line in lines.withLock { $0.append(line) } }
        }
    }

    var all: [String] { lines.withLock { $0 } }

    /// Every line, parsed.
    func objects() throws -> [[String: Any]] {
        try all.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }
}

@Suite("JSON log lines")
struct JSONLogHandlerTests {
    @Test("one valid JSON object per line, whatever the text holds")
    func escaping() throws {
        let captured = CapturedLines()
        let logger = captured.logger()
        let nasty = "quote \" backslash \\ newline \n tab \t bell \u{07} é 😀 </script>"
        logger.warning(
            "request",
            metadata: [
                "path": "\(nasty)", "status": .stringConvertible(404), "durationMs": .stringConvertible(1.5),
                "ok": .stringConvertible(false),
            ])
        let line = try #require(captured.all.first)
        #expect(!line.contains("\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["path"] as? String == nasty)
        #expect(object["status"] as? Int == 404)
        #expect(object["durationMs"] as? Double == 1.5)
        #expect(object["ok"] as? Bool == false)
        #expect(object["level"] as? String == "warn")
        #expect(object["msg"] as? String == "request")
        #expect((object["time"] as? String)?.hasSuffix("Z") == true)
    }

    @Test("the request line's bytes: keys sorted, numbers as numbers, as the server has always written them")
    func exactLine() {
        let line = JSONLogHandler.line(
            time: Date(timeIntervalSince1970: 1_796_074_756.123), level: .info, message: "request",
            metadata: [
                "status": .stringConvertible(200), "route": "/v1/products", "method": "GET",
                "durationMs": .stringConvertible(0.25), "requestId": "req_1",
            ])
        #expect(
            line
                == #"{"durationMs":0.25,"level":"info","method":"GET","msg":"request","requestId":"req_1","#
                + #""route":"/v1/products","status":200,"time":"2026-11-30T21:39:16.123Z"}"#)
    }

    @Test("level names: swift-log's, with `warn` for .warning; below the handler's level nothing is written")
    func levels() throws {
        let captured = CapturedLines()
        let logger = captured.logger(level: .trace)
        for level in Logger.Level.allCases { logger.log(level: level, "line") }
        #expect(
            try captured.objects().map { $0["level"] as? String } == [
                "trace", "debug", "info", "notice", "warn", "error", "critical",
            ])
        let quiet = CapturedLines()
        let info = quiet.logger()
        info.debug("not written")
        info.trace("not written")
        info.info("written")
        #expect(try quiet.objects().map { $0["msg"] as? String } == ["written"])
    }

    @Test("the handler's metadata, then the message's; time, level and msg cannot be overridden")
    func metadata() throws {
        let captured = CapturedLines()
        var logger = captured.logger()
        logger[metadataKey: "service"] = "api"
        logger[metadataKey: "region"] = "eu"
        logger.info(
            "real message",
            metadata: ["region": "us", "msg": "spoofed", "level": "critical", "time": "yesterday"])
        let object = try #require(try captured.objects().first)
        #expect(object["service"] as? String == "api")
        #expect(object["region"] as? String == "us")
        #expect(object["msg"] as? String == "real message")
        #expect(object["level"] as? String == "info")
        #expect(object["time"] as? String != "yesterday")
    }

    @Test("values: nested objects and arrays, integers of any width, no NaN, other types as their description")
    func values() throws {
        let captured = CapturedLines()
        captured.logger().info(
            "values",
            metadata: [
                "nested": ["b": .stringConvertible(UInt16(7)), "a": ["x", .stringConvertible(true)]],
                "big": .stringConvertible(Int64.max), "nan": .stringConvertible(Double.nan),
                "amount": .stringConvertible(Decimal(string: "10.75")!),
            ])
        let line = try #require(captured.all.first)
        #expect(line.contains(#""nested":{"a":["x",true],"b":7}"#))
        #expect(line.contains(#""big":9223372036854775807"#))
        #expect(line.contains(#""nan":null"#))
        #expect(line.contains(#""amount":"10.75""#))
    }

    @Test("an error given to the logger becomes the `error` field")
    func error() throws {
        struct Refused: Error, CustomStringConvertible {
            var description: String { "refused [cardDeclined]" }
        }
        let captured = CapturedLines()
        captured.logger().log(level: .error, "charge failed", error: Refused(), metadata: ["orderId": "ord_1"])
        let object = try #require(try captured.objects().first)
        #expect(object["error"] as? String == "refused [cardDeclined]")
        #expect(object["orderId"] as? String == "ord_1")
    }
}

@Suite("Log output written behind the caller")
struct LogOutputTests {
    @Test("every line arrives whole and in order; flush returns once all are written")
    func orderAndFlush() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        let output = LogOutput(descriptor: descriptors[1])
        let reader = Thread.detachedReader(descriptor: descriptors[0])
        // Five threads of 2,000 lines each, long enough that some writes gather many lines.
        DispatchQueue.concurrentPerform(iterations: 5) { thread in
            for index in 0..<2_000 {
                output.write(
                    line: "{\"thread\":\(thread),\"index\":\(index),\"pad\":\"\(String(repeating: "x", count: 100))\"}")
            }
        }
        output.flush()
        close(descriptors[1])
        let text = String(decoding: reader.wait(), as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.last == "")
        var next = [Int](repeating: 0, count: 5)
        for line in lines.dropLast() {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let thread = try #require(object["thread"] as? Int)
            #expect(object["index"] as? Int == next[thread], "lines of one thread stay in order")
            next[thread] += 1
        }
        #expect(next == [Int](repeating: 2_000, count: 5))
    }

    @Test("timestamps are UTC with milliseconds")
    func timestamps() {
        #expect(
            JSONLogHandler.timestamp(Date(timeIntervalSince1970: 1_796_074_756.123_9)) == "2026-11-30T21:39:16.123Z")
        #expect(JSONLogHandler.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(JSONLogHandler.timestamp(Date(timeIntervalSince1970: -0.5)) == "1969-12-31T23:59:59.500Z")
    }
}

extension Thread {
    /// Reads a descriptor to its end on a thread of its own.
    fileprivate final class DescriptorReader: @unchecked Sendable {
        private var bytes: [UInt8] = []
        private let done = DispatchSemaphore(value: 0)

        init(descriptor: Int32) {
            Thread { [self] in
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                    if count <= 0 { break }
                    bytes.append(contentsOf: buffer[0..<count])
                }
                close(descriptor)
                done.signal()
            }.start()
        }

        func wait() -> [UInt8] {
            done.wait()
            return bytes
        }
    }

    fileprivate static func detachedReader(descriptor: Int32) -> DescriptorReader {
        DescriptorReader(descriptor: descriptor)
    }
}
