import Foundation
import MerchantServer
import Synchronization
import Testing

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
