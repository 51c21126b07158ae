import Foundation
import Sandbox
import SandboxGateway

/// `applepay sandbox gateway [--host ADDRESS] [--port N] DIR`: Apple's payment-session endpoint for the sandbox.
struct SandboxGatewayCommand: Command {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "gateway",
            abstract: "Serve Apple's merchant-validation endpoint over HTTPS for a sandbox (Apple Pay on the web).",
            usage: ["[--host ADDRESS] [--port N] DIR"],
            options: [
                ("--host ADDRESS", "The address to listen on (default 127.0.0.1)."),
                ("--port N", "The port to listen on; 0 picks a free one (default 8443)."),
            ],
            discussion: """
                Serves POST /paymentservices/paymentSession over HTTPS with a certificate issued by the sandbox root
                (for localhost and 127.0.0.1), demands the sandbox's Merchant Identity certificate as TLS client
                certificate (refuses others), checks merchantIdentifier, displayName, initiative and
                initiativeContext as Apple does, and answers an opaque merchant session. GET /sandbox/v1/activity
                counts sessions issued and refusals. Prints its URL, then one JSON line per request on standard
                error. Point `applepay serve --sandbox DIR --sandbox-gateway URL` at it. SIGINT or SIGTERM stop it.
                """)
    }

    var folder: String
    var host: String
    var port: UInt16

    init(arguments: inout Arguments) throws {
        host = try arguments.option("--host") ?? "127.0.0.1"
        port = try arguments.option("--port", as: { UInt16($0) }) ?? 8443
        folder = try arguments.positional("DIR")
    }

    func run() async throws -> Int32 {
        let sandbox: Sandbox
        do {
            sandbox = try Sandbox.load(from: URL(fileURLWithPath: folder))
        } catch {
            Output.standardError("error: cannot load the sandbox \(folder): \(error)")
            return SandboxExit.noInput
        }
        let gateway: SandboxGateway
        do {
            gateway = try SandboxGateway.start(sandbox: sandbox, host: host, port: port) { line in
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
        } catch {
            Output.standardError("error: cannot start the sandbox gateway: \(error)")
            return ExitCode.failure
        }
        FileHandle.standardOutput.write(Data("Sandbox Apple Pay gateway on \(gateway.url)\n".utf8))
        await ServeCommand.waitForTermination()
        await gateway.shutdown()
        return ExitCode.success
    }
}
