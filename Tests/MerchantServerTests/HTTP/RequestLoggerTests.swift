import Foundation
import MerchantCore
import Synchronization
import Testing

@testable import MerchantServer

@Suite("JSON log lines")
struct RequestLoggerTests {
    @Test("one valid JSON object per line, whatever the text holds")
    func escaping() throws {
        let lines = Mutex<[String]>([])
        let logger = RequestLogger { line in lines.withLock { $0.append(line) } }
        let nasty = "quote \" backslash \\ newline \n tab \t bell \u{07} é 😀 </script>"
        logger.log("warn", "request", ["path": nasty, "status": 404, "durationMs": 1.5, "ok": false])
        let line = try #require(lines.withLock { $0.first })
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
        #expect(RequestLogger.timestamp(Date(timeIntervalSince1970: 1_796_074_756.123_9)) == "2026-11-30T21:39:16.123Z")
        #expect(RequestLogger.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(RequestLogger.timestamp(Date(timeIntervalSince1970: -0.5)) == "1969-12-31T23:59:59.500Z")
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
