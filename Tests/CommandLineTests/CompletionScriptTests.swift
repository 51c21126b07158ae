import Foundation
import TestSupport
import Testing

/// `applepay --generate-completion-script bash|zsh|fish`: ArgumentParser's completion scripts for the whole tree of
/// commands, the bash one run by bash itself.
@Suite("applepay --generate-completion-script")
struct CompletionScriptTests {
    @Test(
        "each shell's script names the tool, its subcommands and their options",
        arguments: [
            ("bash", "complete -o filenames -F _applepay applepay"), ("zsh", "#compdef applepay"),
            ("fish", "complete -c 'applepay'"),
        ])
    func script(shell: String, registration: String) async throws {
        let result = try await CommandLineTool.run(["--generate-completion-script", shell])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains(registration), "\(shell): no \(registration)")
        // fish names options without their dashes.
        for word in ["sandbox", "reconcile", "verify-webhook", "merchant-id", "settlement-report", "since"] {
            #expect(result.standardOutput.contains(word), "\(shell): \(word) is not completed")
        }
    }

    @Test("bash completes subcommands and a subcommand's options from the script")
    func bashCompletes() async throws {
        let folder = try TemporaryDirectory(prefix: "completion")
        defer { folder.remove() }
        let script = try await CommandLineTool.run(["--generate-completion-script", "bash"])
        try #require(script.status == 0)
        let file = folder.path("applepay.bash")
        try Data(script.standardOutput.utf8).write(to: URL(fileURLWithPath: file))
        // What bash's programmable completion hands the function for the words typed so far (the last one partial).
        func completions(_ words: [String]) async throws -> [String] {
            let line = words.joined(separator: " ")
            let program = """
                shopt -s extglob; source "$1"
                COMP_WORDS=(\(words.map { "'\($0)'" }.joined(separator: " "))); COMP_CWORD=\(words.count - 1)
                COMP_LINE='\(line)'; COMP_POINT=${#COMP_LINE}
                _applepay applepay '\(words.last ?? "")' '\(words.dropLast().last ?? "")'
                printf '%s\\n' "${COMPREPLY[@]}"
                """
            let result = try await Subprocess.run("bash", ["-c", program, "bash", file])
            #expect(result.status == 0, "\(result.standardError)")
            return result.standardOutput.split(separator: "\n").map(String.init)
        }
        #expect(try await completions(["applepay", "sa"]) == ["sandbox"])
        #expect(Set(try await completions(["applepay", "sandbox", ""])).isSuperset(of: ["init", "mint", "gateway"]))
        #expect(try await completions(["applepay", "store", "migrate", "--f"]) == ["--from"])
        #expect(
            Set(try await completions(["applepay", "reconcile", "--s"])) == [
                "--since", "--store", "--settlement-report",
            ])
    }

    @Test("a shell ArgumentParser has no script for is a usage error")
    func unknownShell() async throws {
        let result = try await CommandLineTool.run(["--generate-completion-script", "tcsh"])
        #expect(result.status == 64)
        #expect(result.standardError.contains("zsh bash fish"))
        #expect(result.standardOutput.isEmpty)
    }
}
