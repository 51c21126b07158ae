import Foundation

/// The calling thread: its name, the task executor whose worker it is, and the jobs it keeps to run itself.
///
/// A thread that finishes a piece of work (SQLite's writer after a commit, an HTTP server's polling thread that
/// starts a responder) can run the tasks it resumes itself instead of handing each to another thread: inside
/// ``runKeeping(_:)``, an executor that cooperates (``keep(_:for:)`` in its `enqueue`) leaves the job with the
/// calling thread, which runs it as soon as `body` returns. A task then goes on on the thread that resumed it until
/// it next waits, and the hand-off (two context switches) is saved.
public enum CurrentThread {
    private final class State {
        var executor: (any TaskExecutor)?
        var kept: [(job: UnownedJob, executor: any TaskExecutor)]?
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            Unmanaged<AnyObject>.fromOpaque(pointer).release()
        }
        return key
    }()

    private static var existingState: State? {
        pthread_getspecific(key).map { Unmanaged<State>.fromOpaque($0).takeUnretainedValue() }
    }

    private static var state: State {
        if let state = existingState { return state }
        let state = State()
        pthread_setspecific(key, Unmanaged.passRetained(state).toOpaque())
        return state
    }

    /// Gives the calling thread a name the system shows (perf, top, /proc): at most 15 bytes of it are kept.
    public static func setName(_ name: String) {
        #if os(Linux)
            let descriptor = open("/proc/thread-self/comm", O_WRONLY)
            guard descriptor >= 0 else { return }
            let bytes = Array(name.utf8.prefix(15))
            _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
        #else
            Thread.current.name = name
        #endif
    }

    /// The task executor whose job the calling thread is running: its worker's (``setCurrentExecutor(_:)``), or a
    /// kept job's; `nil` on other threads. A task started here with this preference stays on the same threads.
    public static var currentExecutor: (any TaskExecutor)? { existingState?.executor }

    /// Marks the calling thread as a worker of `executor` for the rest of its life.
    public static func setCurrentExecutor(_ executor: any TaskExecutor) { state.executor = executor }

    /// Runs `body`, then on this thread every job an executor kept for it meanwhile, and the jobs those give in
    /// turn, until none is left. Nested calls run inside the outermost one.
    public static func runKeeping(_ body: () -> Void) {
        let state = self.state
        guard state.kept == nil else { return body() }
        state.kept = []
        body()
        let worker = state.executor
        var index = 0
        while let kept = state.kept, index < kept.count {
            let (job, executor) = kept[index]
            index += 1
            state.executor = executor
            job.runSynchronously(on: executor.asUnownedTaskExecutor())
        }
        state.executor = worker
        state.kept = nil
    }

    /// For an executor's `enqueue`: keeps `job` for the calling thread when it is inside ``runKeeping(_:)`` and
    /// returns true; otherwise returns false, and the executor queues the job as usual.
    public static func keep(_ job: UnownedJob, for executor: any TaskExecutor) -> Bool {
        guard let state = existingState, state.kept != nil else { return false }
        state.kept?.append((job, executor))
        return true
    }
}
