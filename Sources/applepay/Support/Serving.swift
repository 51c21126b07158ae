import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// The end of every serving command: its services under swift-service-lifecycle until SIGINT or SIGTERM, when
/// each shuts down gracefully, the last first (a server stops accepting connections and finishes the requests in
/// flight); then the command exits 0.
enum Serving {
    /// Runs `services` until a signal stops them; `announcement` (the URL a caller waits for) is printed on
    /// standard output once the signals are trapped, so that a signal sent after it always stops them cleanly.
    static func run(_ services: [any Service], announcing announcement: String) async throws {
        let group = ServiceGroup(
            services: [Announcement(text: announcement)] + services, gracefulShutdownSignals: [.sigterm, .sigint],
            logger: Logger(label: "applepay"))
        try await group.run()
    }
}

/// Prints a line when it starts (the group starts its services after trapping its signals), then waits for the
/// graceful shutdown.
private struct Announcement: Service {
    let text: String

    func run() async {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
        try? await gracefulShutdown()
    }
}
