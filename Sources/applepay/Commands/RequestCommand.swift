/// `applepay request`: work with payment requests.
struct RequestCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "request",
            abstract: "Work with Apple Pay payment requests.",
            subcommands: [
                RequestValidateCommand.self
            ])
    }
}
