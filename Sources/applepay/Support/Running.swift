import ArgumentParser
import Foundation

/// How the tool runs a command line: ArgumentParser parses it (help, usage errors, completion scripts), the command
/// it names runs, and a failure is printed the way the tool always printed it: `error: ...` on standard error, and
/// for a usage error (exit 64) the command's usage under the `USAGE:` heading its help uses.
extension ApplePayCommand {
    /// Runs the command `arguments` name (without the tool's own name) and gives the status to exit with.
    static func exitStatus(running arguments: [String]) async -> Int32 {
        var command: any ParsableCommand
        do {
            command = try parseAsRoot(arguments)
        } catch {
            return report(error)
        }
        do {
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
            return ExitCode.success.rawValue
        } catch let error as ValidationError {
            // Found by the command's work rather than by parsing: its usage, as a parse error would show it.
            return reportUsageError(error.message, of: type(of: command))
        } catch {
            return report(error)
        }
    }

    /// The words that call `command`, from the tool's name on (`applepay request validate`).
    static func words(naming command: any ParsableCommand.Type) -> String {
        func path(to node: any ParsableCommand.Type, from words: [String]) -> [String]? {
            let words = words + [node._commandName]
            if ObjectIdentifier(node) == ObjectIdentifier(command) { return words }
            return node.configuration.subcommands.lazy.compactMap { path(to: $0, from: words) }.first
        }
        return (path(to: ApplePayCommand.self, from: []) ?? [command._commandName]).joined(separator: " ")
    }

    /// Prints what ArgumentParser says of `error` (help and completion scripts on standard output, the rest on
    /// standard error) and gives its exit status.
    private static func report(_ error: any Error) -> Int32 {
        let status = exitCode(for: error)
        var text = fullMessage(for: error)
        guard status != .success else {
            print(text)
            return status.rawValue
        }
        if text.hasPrefix("Error: ") { text = "error: " + text.dropFirst("Error: ".count) }
        // "Usage:" as the help's "USAGE:" section, a blank line before it (both seven characters: the usage's
        // further lines stay aligned).
        text = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix("Usage: ") ? "\nUSAGE: " + line.dropFirst("Usage: ".count) : String(line)
        }.joined(separator: "\n")
        if !text.isEmpty { Output.standardError(text) }
        return status.rawValue
    }

    private static func reportUsageError(_ message: String, of command: any ParsableCommand.Type) -> Int32 {
        Output.standardError(
            """
            error: \(message)

            USAGE: \(usageString(for: command).replacingOccurrences(of: "\n", with: "\n       "))
              See '\(words(naming: command)) --help' for more information.
            """)
        return ExitCode.validationFailure.rawValue
    }
}
