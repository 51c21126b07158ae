import Foundation
import Foundations
import HTTPCore
import HTTPServer
import MerchantCore

/// Long-running work the server starts at start-up and stops at shutdown (in the manner of swift-service-lifecycle's
/// `Service`, much smaller): ``run()`` does the work until its task is cancelled, then returns promptly, having
/// finished or abandoned what was under way.
public protocol Service: Sendable {
    /// Runs until the task is cancelled.
    func run() async
}

/// Services started together and stopped together: ``init(_:)`` runs each in a child task of one task group, and
/// ``shutdown()`` cancels the group and waits for every service to return.
public final class ServiceGroup: Sendable {
    private let running: Task<Void, Never>

    /// Starts every service.
    public init(_ services: [any Service]) {
        running = Task.detached {
            await withDiscardingTaskGroup { group in
                for service in services { group.addTask { await service.run() } }
            }
        }
    }

    /// Cancels every service and waits until all have returned.
    public func shutdown() async {
        running.cancel()
        await running.value
    }
}

/// The HTTP server as a service: bound (and its port known) before the services start, so that a port in use
/// fails start-up; when cancelled it stops accepting connections and finishes the requests in flight.
struct HTTPServerService: Service {
    let server: HTTPServer

    func run() async {
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        await server.shutdown()
    }
}

/// The reconciler: settles payments whose outcome was not seen, at once and every `interval`.
struct ReconcilerService: Service {
    let reconciler: Reconciler
    let interval: Duration

    func run() async { await reconciler.run(every: interval) }
}

/// The subscription scheduler: charges what is due, at once and every `interval`.
struct SubscriptionSchedulerService: Service {
    let subscriptions: SubscriptionService
    let interval: Duration

    func run() async { await subscriptions.run(every: interval) }
}

/// Prunes unpaid checkouts older than `lifetime`, at once and every `interval` (either store; several instances on
/// one PostgreSQL database prune disjoint batches: `FOR UPDATE SKIP LOCKED`; see docs/LIMITS.md).
struct CheckoutPruner: Service {
    let store: any OrderStore
    let lifetime: Duration
    let interval: Duration
    let logger: RequestLogger
    let clock: @Sendable () -> Date

    func run() async {
        while !Task.isCancelled {
            let cutoff = clock().addingTimeInterval(-Double(lifetime.components.seconds))
            do {
                let pruned = try await store.pruneExpiredCheckouts(createdBefore: cutoff, batch: 500)
                if pruned > 0 { logger.log("info", "pruned expired checkouts", ["count": pruned]) }
            } catch {
                logger.log("error", "pruning failed", ["code": error.code.rawValue])
            }
            try? await Task.sleep(for: interval)
        }
    }
}
