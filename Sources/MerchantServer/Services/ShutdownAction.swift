import HTTPServer
import ServiceLifecycle

/// Something already running as a service of a swift-service-lifecycle `ServiceGroup`: a server that listens from
/// the moment it started. ``run()`` waits until the group shuts down gracefully (or is cancelled), then runs the
/// action that stops it, and returns once that is done.
public struct ShutdownAction: Service {
    private let action: @Sendable () async -> Void

    /// - Parameter action: stops what is running (a server: stop accepting connections, finish the requests in
    ///   flight).
    public init(_ action: @escaping @Sendable () async -> Void) {
        self.action = action
    }

    public func run() async {
        try? await gracefulShutdown()
        await action()
    }
}

/// The HTTP server as a service: bound (and its port known) before the services start, so that a port in use
/// fails start-up; at graceful shutdown (or cancellation) it stops accepting connections and finishes the requests
/// in flight.
struct HTTPServerService: Service {
    let server: HTTPServer

    func run() async {
        let server = server
        await ShutdownAction { await server.shutdown() }.run()
    }
}
