import Foundation
import Foundations
import HTTPClient
import HTTPCore
import HTTPServer
import MerchantCore
import TestSupport
import Testing

@testable import Processors

@Suite("The HTTP client of processor calls")
struct ProcessorClientTests {
    /// A provider slower than the calls in flight keeps them all open at once; the next calls must find those
    /// connections kept. Kept only up to libcurl's old bound (64), every call past it connected again: over TLS, a
    /// handshake a payment exactly when the provider is slow.
    @Test("connections of as many concurrent calls as the processor's share are kept for the next ones")
    func keepsConnectionsOfTheShare() async throws {
        #expect(
            HTTPClient.processorClient(timeout: .seconds(10), clientIdentity: nil, trustedRootsPEM: nil, proxy: nil)
                .configuration.maximumKeptConnections >= PaymentService.defaultShare.maximumInFlight)
        try await onTestThreads {
            let responder = ClosureResponder { _ in
                let answered = Latch()
                answered.open(after: .milliseconds(200))
                await answered.wait()
                return .text("ok")
            }
            try await HTTPServer.withServer(
                configuration: .init(port: 0, perClientConnectionLimit: 0), responder: responder
            ) { server in
                let client = HTTPClient.processorClient(
                    timeout: .seconds(60), clientIdentity: nil, trustedRootsPEM: nil, proxy: nil)
                let url = "http://127.0.0.1:\(server.port)/"
                func batch() async throws -> Int {
                    try await withThrowingTaskGroup(of: Bool.self) { group in
                        for _ in 0..<100 {
                            group.addTask { try await client.send(HTTPClientRequest(url: url)).reusedConnection }
                        }
                        return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
                    }
                }
                _ = try await batch()
                // A server may close an idle kept-alive connection at any moment; nearly all must be reused.
                let reused = try await batch()
                #expect(reused >= 90, "the second 100 calls reused \(reused) of the first ones' connections")
            }
        }
    }
}
