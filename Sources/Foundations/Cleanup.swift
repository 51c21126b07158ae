/// Runs `body`, then `cleanup`, whether `body` returns or throws: how a scoped `withX { }` API ends what it started
/// (a server, a harness, a permit) on every path. Runs on the caller's actor.
/// - Throws: what `body` throws, after `cleanup` has run.
public func withCleanup<T, E: Error>(
    isolation: isolated (any Actor)? = #isolation, _ body: () async throws(E) -> T, cleanup: () async -> Void
) async throws(E) -> T {
    let result: T
    do {
        result = try await body()
    } catch {
        await cleanup()
        throw error
    }
    await cleanup()
    return result
}
