import Foundation
import Foundations
import Logging
import MerchantCore
import ServiceLifecycle

/// The reconciler: settles payments whose outcome was not seen, at once and every `interval`, until the graceful
/// shutdown (a pass under way is cancelled: what it settled is recorded, the rest waits for the next start).
struct ReconcilerService: Service {
    let reconciler: Reconciler
    let interval: Duration

    func run() async {
        let (reconciler, interval) = (reconciler, interval)
        await cancelWhenGracefulShutdown { await reconciler.run(every: interval) }
    }
}

/// The subscription scheduler: charges what is due, at once and every `interval`, until the graceful shutdown.
struct SubscriptionSchedulerService: Service {
    let subscriptions: SubscriptionService
    let interval: Duration

    func run() async {
        let (subscriptions, interval) = (subscriptions, interval)
        await cancelWhenGracefulShutdown { await subscriptions.run(every: interval) }
    }
}

/// Prunes unpaid checkouts older than `lifetime`, at once and every `interval` (either store; several instances on
/// one PostgreSQL database prune disjoint batches: `FOR UPDATE SKIP LOCKED`; see docs/LIMITS.md), until the
/// graceful shutdown.
struct CheckoutPruner: Service {
    let store: any OrderStore
    let lifetime: Duration
    let interval: Duration
    let logger: Logger
    let clock: @Sendable () -> Date

    func run() async {
        let pruner = self
        await cancelWhenGracefulShutdown { await pruner.pruneUntilCancelled() }
    }

    private func pruneUntilCancelled() async {
        while !Task.isCancelled {
            let cutoff = clock().addingTimeInterval(-Double(lifetime.components.seconds))
            do {
                let pruned = try await store.pruneExpiredCheckouts(createdBefore: cutoff, batch: 500)
                if pruned > 0 {
                    logger.info("pruned expired checkouts", metadata: ["count": .stringConvertible(pruned)])
                }
            } catch {
                logger.error("pruning failed", metadata: ["code": "\(error.code.rawValue)"])
            }
            try? await Task.sleep(for: interval)
        }
    }
}
