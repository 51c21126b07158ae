import ArgumentParser

/// A command whose work ends in an exit status: `success`, or one its help lists (`failure`, `noInput`, or a status
/// of its own, such as `applepay reconcile`'s 2), which the tool exits with.
protocol StatusCommand: AsyncParsableCommand {
    /// Does the command's work and gives the status to exit with.
    func perform() async throws -> ExitCode
}

extension StatusCommand {
    mutating func run() async throws {
        let status = try await perform()
        if status != .success { throw status }
    }
}

/// A command that only groups subcommands: called without one, it is a usage error (exit 64) that shows its usage.
protocol CommandGroup: ParsableCommand {}

extension CommandGroup {
    mutating func run() throws {
        throw ValidationError("choose a subcommand of '\(ApplePayCommand.words(naming: Self.self))'")
    }
}

/// Exit statuses several commands share, beside ArgumentParser's `success` (0), `failure` (1) and
/// `validationFailure` (64, `EX_USAGE` from sysexits.h: a usage error).
extension ExitCode {
    /// A named input file does not exist or cannot be read (`EX_NOINPUT` from sysexits.h).
    static var noInput: ExitCode { ExitCode(66) }
}
