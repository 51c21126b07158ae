import Cryptography
import Foundation
import MerchantCore
import MerchantServer
import ProcessorService
import Processors
import Sandbox

/// Sandbox mode as a plug-in of the merchant server: the sandbox (for the checkout page's sandbox wallet and
/// tokens, ``SandboxTokens``), its gateway trusted through the sandbox root, and, without `--processor`, the
/// sandbox processor service in process behind the same protocol as a real one. Installed by
/// `applepay serve --sandbox`, `applepay demo` and the tests; a production server never links it.
public struct SandboxMode: MerchantServerPlugin {
    public init() {}

    public func install(_ configuration: MerchantServerConfiguration, needsProcessor: Bool)
        async throws(ServerStartError) -> PluginInstallation
    {
        guard let folder = configuration.sandboxFolder else { return PluginInstallation() }
        let sandbox: Sandbox
        do {
            sandbox = try Sandbox.load(from: URL(fileURLWithPath: folder))
        } catch {
            throw ServerStartError(.unreadableFile, "cannot load the sandbox \(folder): \(error)")
        }
        var installation = PluginInstallation(routes: [SandboxTokens(sandbox: sandbox)])
        if let url = configuration.sandboxGatewayURL {
            guard let components = URLComponents(string: url), components.scheme == "https",
                components.host != nil, components.path.isEmpty || components.path == "/"
            else {
                throw ServerStartError(
                    .invalidConfiguration, "--sandbox-gateway must be an https:// base URL (got '\(url)')")
            }
            installation.gatewayBaseURL = url.hasSuffix("/") ? String(url.dropLast()) : url
            installation.gatewayTrustedRootsPEM = Data(sandbox.rootCertificate.pemRepresentation.utf8)
        }
        guard needsProcessor else { return installation }
        // No processor named: the sandbox processor service, in process, declining tokens not signed by the
        // trusted root.
        var fingerprint: String?
        if let path = configuration.trustedRootPath {
            let data = try MerchantCredential.readFile(path, role: "trusted root certificate")
            fingerprint = (try? Certificate(pem: String(decoding: data, as: UTF8.self))).map {
                $0.sha256Fingerprint.map { String(format: "%02x", $0) }.joined()
            }
        }
        let service: ProcessorServer
        do {
            service = try ProcessorServer.start(
                .init(ledgerPath: try configuration.effectiveSandboxLedgerPath(), rootFingerprint: fingerprint))
        } catch let error as ServerStartError {
            throw error
        } catch {
            throw ServerStartError(.invalidStore, "cannot start the sandbox processor: \(error)")
        }
        installation.processor = HTTPPaymentProcessor(
            baseURL: service.url, timeout: configuration.store.processor.timeout)
        installation.stop = { await service.shutdown() }
        return installation
    }
}
