import MerchantCore
import MerchantWallet
import ServiceLifecycle

/// Wallet order pushes as a service: ``orderDidChange(_:)`` queues the devices to tell and returns at once; ``run()``
/// hands each batch to the pusher (APNs) as it comes, several at once. At graceful shutdown it takes no more and
/// returns once the queued and sending ones are done (the HTTP server, shut down before it, has finished the
/// requests that queue them); cancelled, it abandons them (devices see the change on their next download).
final class OrderUpdatePushes: OrderUpdatePushing, Service {
    private let pusher: any OrderUpdatePushing
    private let queue = AsyncStream.makeStream(of: [DeviceRegistration].self)

    init(pusher: any OrderUpdatePushing) {
        self.pusher = pusher
    }

    func orderDidChange(_ registrations: [DeviceRegistration]) async {
        queue.continuation.yield(registrations)
    }

    func run() async {
        let (pusher, queue) = (pusher, queue)
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                for await registrations in queue.stream {
                    group.addTask { await pusher.orderDidChange(registrations) }
                }
            }
        } onGracefulShutdown: {
            queue.continuation.finish()
        }
    }
}
