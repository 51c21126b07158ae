import Foundation
import TestSupport
import Testing

/// The checkout page in headless Chromium (python/browser_checkout.py with Selenium): purchases through the sandbox
/// sheet, the store checked through the admin API, no request to another host, merchant validation through
/// `applepay sandbox gateway` with the client certificate. Takes the README's two screenshots (`docs/images/`).
@Suite("The checkout page in a real browser")
struct BrowserCheckoutTests {
    /// Chromium and its driver (Debian's `chromium` and `chromium-driver`, installed by scripts/setup.sh).
    static let browserInstalled =
        FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver")

    @Test(
        "purchases with shipping, a corrected address, a coupon, another card, a plan with another product, a plan (merchant token) cancelled from its page, a cancel"
    )
    func checkout() async throws {
        // Not skipped when missing: scripts/setup.sh (run by make test) installs them, so a missing browser fails.
        try #require(Self.browserInstalled, "needs chromium and chromium-driver: run scripts/setup.sh")
        let directory = try TemporaryDirectory(prefix: "browser-checkout")
        defer { directory.remove() }
        let script = Repository.root.appendingPathComponent("Tests/CommandLineTests/python/browser_checkout.py").path
        // The README's screenshots are rewritten when missing or with APPLEPAY_UPDATE_SCREENSHOTS=1 (pixels differ
        // slightly from run to run, so an ordinary run writes them to its temporary folder and leaves the tree clean).
        let images = Repository.root.appendingPathComponent("docs/images")
        let update =
            ProcessInfo.processInfo.environment["APPLEPAY_UPDATE_SCREENSHOTS"] == "1"
            || !FileManager.default.fileExists(atPath: images.appendingPathComponent("sandbox-sheet.png").path)
        let screenshots = update ? images.path : directory.path("screenshots")
        let result = try await Subprocess.run(
            "python3", [script, CommandLineTool.executable.path, directory.path("work"), screenshots], timeout: 600)
        let transcript = result.standardOutput + result.standardError
        #expect(result.status != 77, "Selenium is missing: run scripts/setup.sh\n\(transcript)")
        #expect(result.status == 0, "\(transcript)")
        #expect(result.standardOutput.contains("browser checkout: 1 passed, 0 failed"), "\(transcript)")
    }
}
