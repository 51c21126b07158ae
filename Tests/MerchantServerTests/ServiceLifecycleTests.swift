import Cryptography
import Foundation
import HTTPClient
import HTTPCore
import HTTPServer
import Logging
import MerchantCore
import MerchantHTTP
import MerchantSandbox
import MerchantStore
import MerchantTestSupport
import MerchantWallet
import Sandbox
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

@testable import MerchantServer

/// The merchant server under swift-service-lifecycle: run as a service of a `ServiceGroup` (as `applepay serve`
/// runs it, its group trapping SIGTERM), stopped by the group's graceful shutdown; and the Wallet pushes' service.
@Suite("The merchant server's services under swift-service-lifecycle")
struct ServiceLifecycleTests {
    /// A plug-in whose one route, `GET /test/slow`, answers after `delay`, saying when it has started and finished;
    /// and which records when the server stops it.
    final class SlowRoutePlugin: MerchantServerPlugin, MerchantAPIPlugin {
        let delay: Duration
        let started = Mutex(0)
        let finished = Mutex(false)
        let stopped = Mutex(false)

        init(delay: Duration) { self.delay = delay }

        var standsInForApple: Bool { false }

        func install(_ configuration: MerchantServerConfiguration, needsProcessor: Bool)
            async throws(ServerStartError) -> PluginInstallation
        {
            PluginInstallation(routes: [self], stop: { self.stopped.withLock { $0 = true } })
        }

        func register(on group: inout RouterGroup, services: MerchantServices) {
            group.add(.get, "/test/slow") { _, _ in
                self.started.withLock { $0 += 1 }
                try await Task.sleep(for: self.delay)
                self.finished.withLock { $0 = true }
                return .text("finished")
            }
        }
    }

    /// Waits (a minute at most: the whole test run shares two cores) until the slow route has been called.
    static func waitUntilStarted(_ plugin: SlowRoutePlugin) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while plugin.started.withLock({ $0 }) == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        try #require(plugin.started.withLock { $0 } == 1, "the request did not reach the route")
    }

    /// The sandbox's configuration on a free port and a fresh SQLite file in `directory`.
    func configuration(in directory: TemporaryDirectory) async throws -> MerchantServerConfiguration {
        var configuration = MerchantServerConfiguration()
        configuration.port = 0
        configuration.threads = 2
        configuration.useSandbox(folder: try await SharedSandbox.get().folder.path)
        configuration.storeLocation = .sqlite(path: directory.path("orders.sqlite"))
        return configuration
    }

    @Test("graceful shutdown of the group finishes the request in flight, then stops listening and the plug-ins")
    func gracefulShutdownFinishesRequestsInFlight() async throws {
        let directory = try TemporaryDirectory(prefix: "lifecycle")
        defer { directory.remove() }
        let slow = SlowRoutePlugin(delay: .milliseconds(1500))
        let log = CapturedLog()
        let application = try await MerchantApplication.assemble(
            try await configuration(in: directory), processor: SandboxProcessor(), plugins: [SandboxMode(), slow],
            logger: log.logger)
        let group = ServiceGroup(services: [application], logger: Logger(label: "ServiceLifecycleTests"))
        let client = HTTPClient(configuration: .init(timeout: .seconds(60)))
        let url = application.url
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let request = Task { try await client.send(HTTPClientRequest(url: url + "/test/slow")) }
            do {
                try await Self.waitUntilStarted(slow)
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            let answer = try await request.value
            #expect(answer.status == 200)
            #expect(String(decoding: answer.body, as: UTF8.self) == "finished")
            try await tasks.waitForAll()
        }
        #expect(slow.stopped.withLock { $0 }, "the plug-ins were not stopped")
        #expect(log.entries.last?["msg"] as? String == "stopped", "\(log.text)")
        await #expect(throws: (any Error).self, "the server still accepts connections") {
            _ = try await client.send(HTTPClientRequest(url: url + "/v1/products"))
        }
        // Run once only: the group's second run, like the application's, is refused.
        await #expect(throws: ServerStartError(.alreadyRunning, "")) { try await application.run() }
    }

    @Test("start runs the services in the background until shutdown, which waits for the request in flight")
    func startAndShutdown() async throws {
        let directory = try TemporaryDirectory(prefix: "lifecycle")
        defer { directory.remove() }
        let slow = SlowRoutePlugin(delay: .milliseconds(1000))
        let application = try await MerchantApplication.start(
            try await configuration(in: directory), processor: SandboxProcessor(), plugins: [SandboxMode(), slow],
            logger: .silent)
        let client = HTTPClient(configuration: .init(timeout: .seconds(60)))
        let url = application.url
        #expect(try await client.send(HTTPClientRequest(url: url + "/v1/products")).status == 200)
        let request = Task { try await client.send(HTTPClientRequest(url: url + "/test/slow")) }
        do {
            try await Self.waitUntilStarted(slow)
        } catch {
            await application.shutdown()
            throw error
        }
        await application.shutdown()
        #expect(slow.finished.withLock { $0 }, "shutdown did not wait for the request in flight")
        #expect(try await request.value.status == 200)
        #expect(slow.stopped.withLock { $0 })
        await application.shutdown()  // again: nothing to do
    }

    @Test("an application assembled but never run stops listening on shutdown")
    func assembledNeverRun() async throws {
        let directory = try TemporaryDirectory(prefix: "lifecycle")
        defer { directory.remove() }
        let slow = SlowRoutePlugin(delay: .zero)
        let application = try await MerchantApplication.assemble(
            try await configuration(in: directory), processor: SandboxProcessor(), plugins: [SandboxMode(), slow],
            logger: .silent)
        let client = HTTPClient(configuration: .init(timeout: .seconds(60)))
        // Listening from assembly on: the API answers before the services run.
        #expect(try await client.send(HTTPClientRequest(url: application.url + "/v1/products")).status == 200)
        await application.shutdown()
        #expect(slow.stopped.withLock { $0 })
        await #expect(throws: (any Error).self) {
            _ = try await client.send(HTTPClientRequest(url: application.url + "/v1/products"))
        }
        await #expect(throws: ServerStartError(.alreadyRunning, "")) { try await application.run() }
    }

    @Test("Wallet pushes queued before the graceful shutdown reach APNs before the pushes' service returns")
    func queuedPushesAreSentAtShutdown() async throws {
        let sandbox = try await SharedSandbox.get()
        let folder = try TemporaryDirectory(prefix: "lifecycle-apns")
        defer { folder.remove() }
        let (apns, authKey) = try sandbox.startAPNs(teamID: "SANDBOX001", in: folder)
        defer { apns.shutdown() }
        let settings = APNsSettings(
            baseURL: apns.url, keyID: authKey.keyID, teamID: "SANDBOX001", keyPath: authKey.path,
            trustedRootsPath: sandbox.folder.appendingPathComponent(Sandbox.File.root).path)
        let pusher = APNsPusher(
            settings: settings, key: authKey.key,
            trustedRootsPEM: Data(sandbox.rootCertificate.pemRepresentation.utf8),
            topic: sandbox.orderTypeIdentifier, logger: .silent)
        let pushes = OrderUpdatePushes(pusher: pusher)
        let devices = (1...3).map {
            DeviceRegistration(
                deviceIdentifier: "device-\($0)", pushToken: String(repeating: "a\($0)", count: 16),
                orderTypeIdentifier: sandbox.orderTypeIdentifier, orderID: "ord_\($0)")
        }
        // Queued before the service runs, as a request just before the shutdown would.
        for device in devices { await pushes.orderDidChange([device]) }
        // A service that ends at once and, ending, shuts the group down gracefully: the pushes' service is then
        // told to stop as soon as it runs.
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: pushes),
                    .init(service: ClosureService {}, successTerminationBehavior: .gracefullyShutdownGroup),
                ], logger: Logger(label: "ServiceLifecycleTests")))
        try await group.run()
        #expect(Set(apns.pushes.map(\.deviceToken)) == Set(devices.map(\.pushToken)))
        // After the shutdown a push is dropped, not sent.
        await pushes.orderDidChange([devices[0]])
        try await Task.sleep(for: .milliseconds(200))
        #expect(apns.pushes.count == devices.count)
    }
}
