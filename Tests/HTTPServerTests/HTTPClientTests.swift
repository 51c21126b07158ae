import Foundation
import HTTPClient
import HTTPServer
import Testing

@Suite("HTTP client")
struct HTTPClientTests {
    @Test("refuses protocols other than http and https before connecting")
    func protocols() {
        let client = HTTPClient()
        #expect(throws: HTTPClientError(.unsupportedProtocol, "")) {
            _ = try client.send(HTTPClientRequest(url: "file:///etc/passwd"))
        }
        #expect(throws: HTTPClientError(.unsupportedProtocol, "")) {
            _ = try client.send(HTTPClientRequest(url: "ftp://127.0.0.1/x"))
        }
        #expect(throws: HTTPClientError(.invalidURL, "")) { _ = try client.send(HTTPClientRequest(url: "not a url")) }
    }

    @Test("times out against a slow server, and limits the response size")
    func timeoutAndSize() async throws {
        let responder = ClosureResponder { request in
            if request.path == "/big" { return HTTPResponse(status: 200, body: Data(count: 10_000)) }
            try? await Task.sleep(for: .milliseconds(700))
            return .text("late")
        }
        try await HTTPServer.withServer(configuration: .init(port: 0), responder: responder) { server in
            let quick = HTTPClient(configuration: .init(timeout: .milliseconds(200)))
            let url = "http://127.0.0.1:\(server.port)/slow"
            // Timed on a thread of its own, so that a busy cooperative pool cannot stretch the measurement.
            let (error, elapsed) = try await offPool { () -> (HTTPClientError?, Duration) in
                let clock = ContinuousClock()
                let start = clock.now
                do {
                    _ = try quick.send(HTTPClientRequest(url: url))
                    return (nil, clock.now - start)
                } catch {
                    return (error as? HTTPClientError, clock.now - start)
                }
            }
            #expect(error?.code == .timeout)
            #expect(elapsed < .milliseconds(650))
            let small = HTTPClient(configuration: .init(timeout: .seconds(10), maximumResponseSize: 1000))
            await #expect(throws: HTTPClientError(.responseTooLarge, "")) {
                _ = try await small.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/big"))
            }
        }
    }

    @Test("reports a refused connection")
    func refused() async throws {
        let port: UInt16 = try await HTTPServer.withServer(
            configuration: .init(port: 0), responder: ClosureResponder { _ in .text("") }
        ) { $0.port }
        await #expect(throws: HTTPClientError(.connectionFailed, "")) {
            _ = try await HTTPClient().send(HTTPClientRequest(url: "http://127.0.0.1:\(port)/"))
        }
    }
}
