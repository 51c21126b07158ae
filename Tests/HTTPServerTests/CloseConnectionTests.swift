import Foundation
import HTTPClient
import HTTPCore
import HTTPServer
import TestSupport
import Testing

/// `/drop` answers `HTTPResponse.closeConnection`; anything else a plain `ok`.
private struct DroppingResponder: Responder {
    func respond(to request: HTTPRequest) async -> HTTPResponse {
        request.path == "/drop" ? .closeConnection : .text("ok")
    }
}

@Suite("HTTPResponse.closeConnection")
struct CloseConnectionTests {
    @Test("the client sees the connection closed with no answer; other requests are answered and shutdown finishes")
    func dropsTheConnection() async throws {
        try await HTTPServer.withServer(configuration: .init(port: 0), responder: DroppingResponder()) { server in
            let port = server.port
            let answer = try await offPool { () -> Int? in
                let connection = try RawConnection(port: port)
                try connection.send("GET /drop HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                return try connection.readResponse()?.status
            }
            #expect(answer == nil)
            let client = HTTPClient(configuration: .init(timeout: .seconds(20)))
            await #expect(throws: HTTPClientError.self) {
                try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(port)/drop"))
            }
            let ok = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(port)/other"))
            #expect(ok.status == 200)
        }
    }
}
