internal import CCurl
import Foundation
import Foundations
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One `send(_:) async` call: the request, and the continuation that exactly one party resumes, the event loop
/// (with the response, the error, or `CancellationError`).
final class Transfer: Sendable {
    private struct State {
        var continuation: CheckedContinuation<HTTPClientResponse, any Error>?
        var cancelled = false
        var finished = false
    }

    let request: HTTPClientRequest
    private let state = Mutex(State())

    init(_ request: HTTPClientRequest) { self.request = request }

    /// Whether the calling task asked for cancellation.
    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Keeps `continuation` for the loop to resume.
    func wait(with continuation: CheckedContinuation<HTTPClientResponse, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    /// From the task's cancellation handler, on any thread: `true` when the loop must still be told.
    func requestCancellation() -> Bool {
        state.withLock { state in
            state.cancelled = true
            return !state.finished
        }
    }

    /// On the loop thread, once: resumes the caller.
    func finish(_ result: Result<HTTPClientResponse, any Error>) {
        let continuation = state.withLock { state in
            state.finished = true
            return state.continuation.take()
        }
        continuation?.resume(with: result)
    }
}

/// The event loop of one `HTTPClient`: one thread that owns one libcurl multi handle and drives every transfer of
/// `send(_:) async` on it through `curl_multi_socket_action`, waiting in `epoll_wait` on the transfers' sockets,
/// libcurl's next timeout and an `eventfd` that callers write to after queueing a command.
///
/// The thread starts with the first command and ends once no transfer has been in flight for
/// ``HTTPClient/Configuration/idleConnectionLifetime``, closing the multi handle and with it every kept connection; the next
/// command starts a new thread with a new multi handle. Easy handles, the multi handle, the share handle (TLS
/// sessions, so that a new connection to a known server resumes its session) and epoll are created, used and freed
/// by that thread only; callers touch nothing but the command queue.
final class TransferLoop: Sendable {
    enum Command: Sendable {
        case start(Transfer)
        case cancel(Transfer)
    }

    private struct Queue {
        var commands: [Command] = []
        var threadRunning = false
        var shutDown = false
    }

    let configuration: HTTPClient.Configuration
    private let queue = Mutex(Queue())
    /// Written by callers to wake the loop; read by the loop thread. Lives as long as the loop.
    private let wakeDescriptor: Int32
    private let transfersInFlight = Atomic(0)
    private let runningThreads = Atomic(0)

    /// The loop's threads running now: 0 or 1 (a thread that is ending and its successor may overlap briefly).
    var threads: Int { runningThreads.load(ordering: .relaxed) }

    /// Transfers handed to the loop and not yet finished.
    var inFlight: Int { transfersInFlight.load(ordering: .relaxed) }

    init(configuration: HTTPClient.Configuration) {
        self.configuration = configuration
        wakeDescriptor = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
    }

    deinit { close(wakeDescriptor) }

    /// Queues `command` and wakes the loop, starting its thread when none is running.
    func submit(_ command: Command) {
        if case .start = command { transfersInFlight.add(1, ordering: .relaxed) }
        let (startThread, wake) = queue.withLock { queue -> (Bool, Bool) in
            queue.commands.append(command)
            let start = !queue.threadRunning
            queue.threadRunning = true
            // The loop takes every queued command once woken: a non-empty queue already has a wake-up on its way.
            return (start, !start && queue.commands.count == 1)
        }
        if startThread {
            let thread = Thread { [self] in
                #if os(Linux)
                    // The system's name for the thread (debuggers, `top -H`, /proc/self/task/*/comm); at most 15 bytes.
                    try? "HTTPClient.loop".write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
                #endif
                runningThreads.add(1, ordering: .relaxed)
                run()
                runningThreads.subtract(1, ordering: .relaxed)
            }
            thread.name = "HTTPClient.loop"
            thread.start()
        } else if wake {
            self.wake()
        }
    }

    /// Ends the loop thread (the client is going away, so no transfer is in flight).
    func shutDown() {
        let running = queue.withLock { queue in
            queue.shutDown = true
            return queue.threadRunning
        }
        if running { wake() }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, MemoryLayout<UInt64>.size)
    }

    /// The thread's body: one multi handle from start to end.
    private func run() {
        let driver = MultiDriver(loop: self, wakeDescriptor: wakeDescriptor)
        defer { driver.close() }
        var idleSince: ContinuousClock.Instant? = nil
        let lifetime = configuration.idleConnectionLifetime
        // The command that started the thread came without a wake-up.
        var woken = true
        while true {
            if woken {
                var value: UInt64 = 0
                _ = read(wakeDescriptor, &value, MemoryLayout<UInt64>.size)
                let (commands, shutDown) = queue.withLock { queue in (queue.commands.take(), queue.shutDown) }
                if shutDown {
                    queue.withLock { $0.threadRunning = false }
                    for case .start(let transfer) in commands { driver.refuse(transfer) }
                    return
                }
                for command in commands {
                    switch command {
                    case .start(let transfer): driver.start(transfer)
                    case .cancel(let transfer): driver.cancel(transfer)
                    }
                }
            }
            driver.fireTimerIfDue()
            driver.readCompletions()
            var waitLimit = driver.timeUntilTimer()
            if driver.activeCount == 0 {
                let since = idleSince ?? .now
                idleSince = since
                let remaining = since + lifetime - .now
                if remaining <= .zero {
                    let exit = queue.withLock { queue in
                        guard queue.commands.isEmpty else { return false }
                        queue.threadRunning = false
                        return true
                    }
                    if exit { return }
                }
                waitLimit = min(waitLimit ?? remaining, remaining)
            } else {
                idleSince = nil
            }
            woken = driver.wait(upTo: waitLimit)
        }
    }

    /// On the loop thread, when a transfer has finished.
    fileprivate func finished(_ transfer: Transfer, _ result: Result<HTTPClientResponse, any Error>) {
        transfersInFlight.subtract(1, ordering: .relaxed)
        transfer.finish(result)
    }
}

extension Array {
    /// Returns the elements and leaves the array empty, its capacity kept.
    fileprivate mutating func take() -> [Element] {
        defer { removeAll(keepingCapacity: true) }
        return self
    }
}

/// The libcurl side of one run of the loop thread: the multi handle, its sockets in epoll, its timer, the
/// transfers on it. Used by that thread only.
private final class MultiDriver {
    /// A transfer on the multi handle.
    final class Active {
        let transfer: Transfer
        let handle: UnsafeMutableRawPointer
        let options: TransferOptions

        init(transfer: Transfer, handle: UnsafeMutableRawPointer, options: TransferOptions) {
            self.transfer = transfer
            self.handle = handle
            self.options = options
        }
    }

    unowned let loop: TransferLoop
    let wakeDescriptor: Int32
    let multi: UnsafeMutableRawPointer
    let share: UnsafeMutableRawPointer?
    let epoll: Int32
    /// The transfers on the multi handle, by their `Transfer`.
    private var active: [ObjectIdentifier: Active] = [:]
    /// Reset easy handles, ready for the next transfer.
    private var spare: [UnsafeMutableRawPointer] = []
    static let maximumSpareHandles = 256
    /// The sockets libcurl asked to watch.
    private var watched: Set<Int32> = []
    /// When libcurl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)` called; `nil` for never.
    var timer: ContinuousClock.Instant?
    private var events = [epoll_event](repeating: epoll_event(), count: 256)

    var activeCount: Int { active.count }

    init(loop: TransferLoop, wakeDescriptor: Int32) {
        self.loop = loop
        self.wakeDescriptor = wakeDescriptor
        guard let multi = curl_multi_init() else {
            fatalError("libcurl could not create a multi handle (out of memory).")
        }
        self.multi = multi
        share = curl_share_init()
        if let share { _ = CCurl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue)) }
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wakeDescriptor
        _ = epoll_ctl(epoll, EPOLL_CTL_ADD, wakeDescriptor, &event)
        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = CCurl_multi_setopt_socket_function(multi, socketCallback)
        _ = CCurl_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, context)
        _ = CCurl_multi_setopt_timer_function(multi, timerCallback)
        _ = CCurl_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, context)
        _ = CCurl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        _ = CCurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, max(1, loop.configuration.maximumKeptConnections))
        if let limit = loop.configuration.maximumConnectionsPerHost, limit > 0 {
            _ = CCurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, limit)
        }
    }

    /// Frees everything; called once, by the thread, as it ends.
    func close() {
        for transfer in active.values {
            remove(transfer)
            curl_easy_cleanup(transfer.handle)
            loop.finished(transfer.transfer, .failure(CancellationError()))
        }
        active = [:]
        for handle in spare { curl_easy_cleanup(handle) }
        spare = []
        curl_multi_cleanup(multi)  // closes the kept connections
        if let share { curl_share_cleanup(share) }
        Glibc.close(epoll)
    }

    /// Waits for a socket, a wake-up or `limit`; `true` when woken by a caller.
    func wait(upTo limit: Duration?) -> Bool {
        let milliseconds: Int32
        if let limit {
            let (seconds, attoseconds) = limit.components
            // Rounded up, so that a timer is never polled for just before it is due.
            let total = max(0, seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
            milliseconds = Int32(min(total, 60_000))
        } else {
            milliseconds = -1
        }
        let count = events.withUnsafeMutableBufferPointer {
            epoll_wait(epoll, $0.baseAddress, Int32($0.count), milliseconds)
        }
        var woken = false
        var running: Int32 = 0
        for index in 0..<max(0, Int(count)) {
            let event = events[index]
            let descriptor = event.data.fd
            if descriptor == wakeDescriptor {
                woken = true
                continue
            }
            var flags: Int32 = 0
            if event.events & EPOLLIN.rawValue != 0 { flags |= CURL_CSELECT_IN }
            if event.events & EPOLLOUT.rawValue != 0 { flags |= CURL_CSELECT_OUT }
            if event.events & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { flags |= CURL_CSELECT_ERR }
            _ = curl_multi_socket_action(multi, descriptor, flags, &running)
        }
        return woken
    }

    func timeUntilTimer() -> Duration? { timer.map { $0 - .now } }

    /// Lets libcurl handle its timeouts (connect and total deadlines, retries, a new transfer's first step) once due.
    func fireTimerIfDue() {
        guard let timer, timer <= .now else { return }
        self.timer = nil
        var running: Int32 = 0
        _ = curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running)
    }

    /// Puts a transfer on the multi handle, or finishes it at once when cancelled or when libcurl refuses it.
    func start(_ transfer: Transfer) {
        if transfer.isCancelled {
            loop.finished(transfer, .failure(CancellationError()))
            return
        }
        guard let handle = spare.popLast() ?? curl_easy_init() else {
            loop.finished(
                transfer, .failure(HTTPClientError(.transferFailed, "libcurl could not create a handle.")))
            return
        }
        let options = TransferOptions(request: transfer.request, configuration: loop.configuration)
        let entry = Active(transfer: transfer, handle: handle, options: options)
        var setup = options.apply(to: handle)
        if setup == CURLE_OK, let share { setup = CCurl_setopt_pointer(handle, CURLOPT_SHARE, share) }
        if setup == CURLE_OK {
            setup = CCurl_setopt_pointer(handle, CURLOPT_PRIVATE, Unmanaged.passUnretained(entry).toOpaque())
        }
        guard setup == CURLE_OK, curl_multi_add_handle(multi, handle) == CURLM_OK else {
            let result = options.result(of: setup == CURLE_OK ? CURLE_FAILED_INIT : setup, on: handle)
            _ = CCurl_setopt_pointer(handle, CURLOPT_SHARE, nil)
            curl_easy_cleanup(handle)
            options.release()
            loop.finished(transfer, result.mapError { $0 })
            return
        }
        active[ObjectIdentifier(transfer)] = entry
    }

    /// Refuses a transfer that arrived as the loop shut down.
    func refuse(_ transfer: Transfer) {
        loop.finished(transfer, .failure(CancellationError()))
    }

    /// Removes a cancelled transfer from the multi handle (closing its connection, which is mid-exchange) and
    /// resumes its caller with `CancellationError`.
    func cancel(_ transfer: Transfer) {
        guard let entry = active.removeValue(forKey: ObjectIdentifier(transfer)) else { return }
        remove(entry)
        curl_easy_cleanup(entry.handle)
        loop.finished(transfer, .failure(CancellationError()))
    }

    /// Finishes every transfer libcurl reports done.
    func readCompletions() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            var context: UnsafeMutableRawPointer?
            _ = CCurl_getinfo_pointer(handle, CURLINFO_PRIVATE, &context)
            guard let context else { continue }
            let entry = Unmanaged<Active>.fromOpaque(context).takeUnretainedValue()
            active.removeValue(forKey: ObjectIdentifier(entry.transfer))
            let result = entry.options.result(of: code, on: handle)
            remove(entry)
            if code == CURLE_OK && spare.count < Self.maximumSpareHandles {
                curl_easy_reset(handle)
                spare.append(handle)
            } else {
                curl_easy_cleanup(handle)
            }
            loop.finished(entry.transfer, result.mapError { $0 })
        }
    }

    /// Takes a transfer off the multi handle and frees its options' memory; the easy handle stays.
    private func remove(_ entry: Active) {
        _ = curl_multi_remove_handle(multi, entry.handle)
        _ = CCurl_setopt_pointer(entry.handle, CURLOPT_SHARE, nil)
        entry.options.release()
    }

    /// libcurl's socket callback: watch `descriptor` for `what`, or stop watching it.
    fileprivate func watch(_ descriptor: Int32, _ what: Int32) {
        if what == CURL_POLL_REMOVE {
            // The socket may be closed already, which removed it from epoll: an error here is expected.
            _ = epoll_ctl(epoll, EPOLL_CTL_DEL, descriptor, nil)
            watched.remove(descriptor)
            return
        }
        var event = epoll_event()
        if what == CURL_POLL_IN || what == CURL_POLL_INOUT { event.events |= EPOLLIN.rawValue }
        if what == CURL_POLL_OUT || what == CURL_POLL_INOUT { event.events |= EPOLLOUT.rawValue }
        event.data.fd = descriptor
        if watched.contains(descriptor) {
            if epoll_ctl(epoll, EPOLL_CTL_MOD, descriptor, &event) != 0 {
                _ = epoll_ctl(epoll, EPOLL_CTL_ADD, descriptor, &event)
            }
        } else {
            // A descriptor number libcurl closed without telling (and reused) may still be known to epoll.
            if epoll_ctl(epoll, EPOLL_CTL_ADD, descriptor, &event) != 0 {
                _ = epoll_ctl(epoll, EPOLL_CTL_MOD, descriptor, &event)
            }
            watched.insert(descriptor)
        }
    }
}

private let socketCallback:
    @convention(c) (
        UnsafeMutableRawPointer?, curl_socket_t, Int32, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?
    ) -> Int32 = { _, descriptor, what, context, _ in
        guard let context else { return 0 }
        Unmanaged<MultiDriver>.fromOpaque(context).takeUnretainedValue().watch(descriptor, what)
        return 0
    }

private let timerCallback: @convention(c) (UnsafeMutableRawPointer?, Int, UnsafeMutableRawPointer?) -> Int32 = {
    _, milliseconds, context in
    guard let context else { return 0 }
    let driver = Unmanaged<MultiDriver>.fromOpaque(context).takeUnretainedValue()
    driver.timer = milliseconds < 0 ? nil : .now + .milliseconds(milliseconds)
    return 0
}
