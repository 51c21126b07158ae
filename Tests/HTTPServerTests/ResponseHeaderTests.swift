import Testing

@testable import HTTPClient

@Suite("HTTP client: the answer's header lines as libcurl hands them over")
struct ResponseHeaderTests {
    private func headers(_ lines: [String]) -> [String: String] {
        let sink = ResponseSink(limit: 1024)
        for line in lines {
            var bytes = Array(line.utf8)
            bytes.withUnsafeMutableBytes { sink.header(UnsafeRawBufferPointer($0)) }
        }
        return sink.headers
    }

    @Test("names in lowercase, values without the whitespace around them, the CRLF dropped")
    func lines() {
        let read = headers([
            "HTTP/1.1 200 OK\r\n", "Content-Type: application/json\r\n", "Idempotent-Replayed:true\r\n",
            "X-Spaced: \t a value  with  inner spaces \t\r\n", "X-Empty:\r\n", "X-Colons: a:b:c\r\n",
            "X-Ünicode-Value: café\r\n", "not a header line\r\n", "\r\n",
        ])
        #expect(
            read == [
                "content-type": "application/json", "idempotent-replayed": "true",
                "x-spaced": "a value  with  inner spaces", "x-empty": "", "x-colons": "a:b:c",
                "x-Ünicode-value": "café",
            ])
    }

    @Test("a new status line (after 100 Continue, or a proxy's answer) starts the headers again")
    func newResponse() {
        let read = headers([
            "HTTP/1.1 100 Continue\r\n", "X-First: 1\r\n", "\r\n", "HTTP/1.1 201 Created\r\n", "Location: /x\r\n",
        ])
        #expect(read == ["location": "/x"])
    }
}
