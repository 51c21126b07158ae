import ArgumentParser

/// `applepay request`: work with payment requests.
struct RequestCommand: CommandGroup {
    static let configuration = CommandConfiguration(
        commandName: "request", abstract: "Work with Apple Pay payment requests.",
        subcommands: [RequestValidateCommand.self])
}
