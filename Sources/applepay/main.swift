import ArgumentParser
import Foundation
import JSONLogging
import MerchantCore

/// The `applepay` tool: every command a merchant needs, from request validation to the server.
struct ApplePayCommand: CommandGroup {
    static let configuration = CommandConfiguration(
        commandName: "applepay",
        abstract: "Apple Pay for the merchant side: requests, tokens, a sandbox, a payment sheet and a server.",
        subcommands: [
            RequestCommand.self,
            SandboxCommand.self,
            MerchantCommand.self,
            ServeCommand.self,
            StoreCommand.self,
            ReconcileCommand.self,
            ProcessorCommand.self,
            DemoCommand.self,
            SimulateCommand.self,
            DecryptCommand.self,
            VerifyCommand.self,
            BenchCommand.self,
        ])
}

// Every `Logger(label:)` of the process writes JSON lines to standard error, behind its caller.
JSONLogHandler.bootstrapStandardError()
let status = await ApplePayCommand.exitStatus(running: Array(CommandLine.arguments.dropFirst()))
// Log lines are written behind their callers: let the last ones out before the process ends.
LogOutput.standardError.flush()
exit(status)
