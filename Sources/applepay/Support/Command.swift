import Foundation
import Foundations

/// What a command is called and how it is used: the text `--help` prints.
struct CommandConfiguration {
    var name: String
    var abstract: String
    /// The lines after `USAGE:` in the help text, each without the tool's name.
    var usage: [String] = []
    /// Option descriptions, as `("--name VALUE", "what it does")`.
    var options: [(String, String)] = []
    var discussion: String = ""
    var subcommands: [any Command.Type] = []
}

/// A command of the `applepay` tool. A command parses its arguments in `init`, throwing
/// `UsageError` for anything wrong with them, and does its work in `run`, returning the exit status.
protocol Command {
    static var configuration: CommandConfiguration { get }
    init(arguments: inout Arguments) throws
    func run() async throws -> Int32
}

extension Command {
    init(arguments: inout Arguments) throws {
        if let first = arguments.remaining.first, !first.hasPrefix("-") {
            throw UsageError("unknown subcommand '\(first)'")
        }
        throw UsageError("choose a subcommand of '\(Self.configuration.name)'")
    }

    func run() async throws -> Int32 { ExitCode.usage }
}

/// Exit statuses shared by every command.
enum ExitCode {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    /// `EX_USAGE` from sysexits.h.
    static let usage: Int32 = 64
}

/// The stable code of a ``UsageError``; there is one kind of usage error (the message says what to change).
extension ErrorCode<UsageError> {
    /// An unknown or repeated option, a missing or malformed value, a missing or extra argument.
    static var invalidUsage: Self { Self("invalidUsage") }
}

/// The domain of ``UsageError``: its codes are ``ErrorCode`` of it.
enum UsageErrorDomain {}

/// A mistake in how a command was called: exit status 64 and the command's usage. The message says what is wrong
/// with the command line, naming the option or argument.
typealias UsageError = CodedFailure<UsageErrorDomain>

extension UsageError {
    init(_ message: String) { self.init(.invalidUsage, message) }
}

/// The command line, consumed piece by piece: options first, then positionals, then `finish()`.
struct Arguments {
    private(set) var remaining: [String]

    init(_ arguments: [String]) { remaining = arguments }

    /// The value of a single-valued option `--name VALUE` or `--name=VALUE`, if given.
    mutating func option(_ name: String) throws -> String? {
        let values = try options(name)
        guard values.count <= 1 else { throw UsageError("\(name) may be given only once") }
        return values.first
    }

    /// Every value of a repeatable option, in order.
    mutating func options(_ name: String) throws -> [String] {
        var values: [String] = []
        var index = 0
        while index < remaining.count {
            let argument = remaining[index]
            if argument == name {
                guard index + 1 < remaining.count else { throw UsageError("\(name) needs a value") }
                values.append(remaining[index + 1])
                remaining.removeSubrange(index...(index + 1))
            } else if argument.hasPrefix(name + "=") {
                values.append(String(argument.dropFirst(name.count + 1)))
                remaining.remove(at: index)
            } else if argument == "--" {
                break
            } else {
                index += 1
            }
        }
        return values
    }

    /// Whether a flag `--name` was given.
    mutating func flag(_ name: String) -> Bool {
        guard let index = remaining.firstIndex(of: name) else { return false }
        remaining.remove(at: index)
        return true
    }

    /// The next positional argument, or a usage error naming what is missing.
    mutating func positional(_ label: String) throws -> String {
        guard let value = try optionalPositional() else { throw UsageError("missing \(label)") }
        return value
    }

    /// The next positional argument, if there is one.
    mutating func optionalPositional() throws -> String? {
        if remaining.first == "--" { remaining.removeFirst() }
        guard let first = remaining.first else { return nil }
        if first.hasPrefix("-") && first != "-" { throw UsageError("unknown option '\(first)'") }
        remaining.removeFirst()
        return first
    }

    /// Throws if anything was left unconsumed.
    func finish() throws {
        if let first = remaining.first {
            throw UsageError(first.hasPrefix("-") ? "unknown option '\(first)'" : "unexpected argument '\(first)'")
        }
    }

    /// An option's value parsed by `parse`, with a usage error naming the option when it does not parse.
    mutating func option<T>(_ name: String, as parse: (String) -> T?) throws -> T? {
        guard let text = try option(name) else { return nil }
        guard let value = parse(text) else { throw UsageError("invalid value '\(text)' for \(name)") }
        return value
    }
}

/// Finds the command a command line names, parses it and runs it.
enum CommandRunner {
    static func main(root: any Command.Type, arguments: [String]) async -> Int32 {
        var path: [any Command.Type] = [root]
        var command = root
        var rest = arguments
        while let next = rest.first, !next.hasPrefix("-"),
            let sub = command.configuration.subcommands.first(where: { $0.configuration.name == next })
        {
            path.append(sub)
            command = sub
            rest.removeFirst()
        }
        let prefix = path.map { $0.configuration.name }.joined(separator: " ")
        if rest.contains("--help") || rest.contains("-h") {
            print(helpText(for: command, prefix: prefix), terminator: "")
            return ExitCode.success
        }
        do {
            var parsed = Arguments(rest)
            let instance = try command.init(arguments: &parsed)
            try parsed.finish()
            return try await instance.run()
        } catch let error as UsageError {
            let text =
                "error: \(error.message)\n\n" + usageSection(for: command, prefix: prefix)
                + "See '\(prefix) --help'.\n"
            FileHandle.standardError.write(Data(text.utf8))
            return ExitCode.usage
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            return ExitCode.failure
        }
    }

    static func usageSection(for command: any Command.Type, prefix: String) -> String {
        let configuration = command.configuration
        var text = "USAGE:\n"
        if configuration.usage.isEmpty {
            text += "  \(prefix) <subcommand>\n"
        } else {
            for line in configuration.usage { text += "  \(prefix) \(line)\n" }
        }
        return text + "\n"
    }

    static func helpText(for command: any Command.Type, prefix: String) -> String {
        let configuration = command.configuration
        var text = "OVERVIEW: \(configuration.abstract)\n\n"
        if !configuration.discussion.isEmpty { text += configuration.discussion + "\n\n" }
        text += usageSection(for: command, prefix: prefix)
        if !configuration.options.isEmpty {
            text += "OPTIONS:\n"
            let width = min(34, max("-h, --help".count, configuration.options.map { $0.0.count }.max() ?? 0) + 2)
            for (name, help) in configuration.options {
                let padded =
                    name.count >= width ? name + "  " : name.padding(toLength: width, withPad: " ", startingAt: 0)
                text += "  \(padded)\(help)\n"
            }
            text += "  " + "-h, --help".padding(toLength: width, withPad: " ", startingAt: 0) + "Show help.\n\n"
        }
        if !configuration.subcommands.isEmpty {
            text += "SUBCOMMANDS:\n"
            let width = (configuration.subcommands.map { $0.configuration.name.count }.max() ?? 0) + 2
            for sub in configuration.subcommands {
                let name = sub.configuration.name.padding(toLength: width, withPad: " ", startingAt: 0)
                text += "  \(name)\(sub.configuration.abstract)\n"
            }
            text += "\n  See '\(prefix) <subcommand> --help' for each one.\n"
        }
        return text
    }
}

/// Writing JSON to standard output and standard error.
enum Output {
    /// Encodes a value as JSON with sorted keys, unescaped slashes and ISO 8601 dates, on one line (or pretty,
    /// when asked).
    static func json<T: Encodable>(_ value: T, pretty: Bool = false) throws -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting =
            pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func standardError(_ text: String) {
        FileHandle.standardError.write(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
    }
}
