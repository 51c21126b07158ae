import Foundation
import TestSupport
import Testing

/// The examples of docs/LIBRARY.md (`Examples/LibraryExamples`), run as a user would run them.
@Suite("docs/LIBRARY.md examples")
struct LibraryExamplesTests {
    /// The checks the examples binary prints, one line each: a check that stops running must fail this test.
    static let checks = [
        "request: the order's request validates and encodes with total 35.69",
        "request: a broken request is refused with amount.tooManyDecimals, networks.empty, capabilities.missing3DS",
        "request JSON: a number for total.amount is json.wrongType at total.amount",
        "request JSON: bytes that are not JSON are notJSON",
        "payment: an EC_v1 token for 35.69 USD is decrypted (Visa …0492)",
        "payment: an RSA_v1 token for 35.69 USD is decrypted",
        "payment: a token for 30.00 USD is refused with amountMismatch",
        "payment: a token made for another order is refused with applicationDataMismatch",
        "payment: a tampered token is refused with signatureInvalid",
        "payment: a token signed 10 minutes ago is refused with signingTimeOutOfRange",
        "payment: a body without a token is refused with malformedToken",
        "payment: one shared handler decrypts 8 payments at once",
        "verify only: a token's signature checks without the merchant key",
        "verify only: a tampered token is refused with signatureInvalid",
    ]

    @Test("the examples binary passes every check, exits 0 and prints no card number")
    func runsEveryExample() async throws {
        let result = try await Subprocess.run(
            executable: CommandLineTool.builtExecutable(named: "LibraryExamples"), [], timeout: 300)
        #expect(result.status == 0, "\(result.standardOutput)\n\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines == Self.checks.map { "ok   \($0)" } + ["all checks passed"])
        // The sandbox's Visa test card: its device PAN must never be printed.
        #expect(!result.standardOutput.contains("4761120010000492"))
        #expect(!result.standardError.contains("4761120010000492"))
    }

    /// The folders whose regions docs/LIBRARY.md quotes, and how many regions each has.
    static let quotedFolders = [
        ("Examples/LibraryExamples", 6), ("Examples/HummingbirdShop/Sources", 2), ("Examples/VaporShop/Sources", 2),
    ]

    @Test("every region of the examples marked // [name] ... // [/name] is quoted verbatim in docs/LIBRARY.md")
    func documentQuotesTheCode() throws {
        let document = try String(
            contentsOf: Repository.root.appendingPathComponent("docs/LIBRARY.md"), encoding: .utf8)
        for (folder, count) in Self.quotedFolders {
            var regions = 0
            for (file, name, block) in try Self.regions(in: folder) {
                regions += 1
                #expect(document.contains(block), "\(folder)/\(file) region \(name) differs in docs/LIBRARY.md")
                #expect(document.contains("From `\(folder)/\(file)`"))
            }
            #expect(regions == count, "\(folder)")
        }
    }

    @Test("every Swift block of docs/LIBRARY.md is an example's region, unless it is marked not compiled")
    func everySampleComesFromAnExample() throws {
        let document = try String(
            contentsOf: Repository.root.appendingPathComponent("docs/LIBRARY.md"), encoding: .utf8)
        let quotable = Set(try Self.quotedFolders.flatMap { try Self.regions(in: $0.0) }.map(\.block))
        var rest = Substring(document)
        var samples = 0
        while let open = rest.range(of: "```swift\n") {
            guard let close = rest[open.upperBound...].range(of: "\n```") else {
                Issue.record("a Swift block is not closed")
                break
            }
            let block = String(rest[open.lowerBound..<close.upperBound])
            // The paragraph before the block says what it is.
            let before = rest[..<open.lowerBound].suffix(400)
            let paragraph =
                before.components(separatedBy: "\n\n").last {
                    !$0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
                }
                ?? ""
            if !quotable.contains(block) {
                #expect(
                    paragraph.contains("**not compiled**"), "a Swift block that no example holds: \(block.prefix(160))")
            }
            samples += 1
            rest = rest[close.upperBound...]
        }
        #expect(samples >= 10)
    }

    /// The regions between `// [name]` and `// [/name]` of every Swift file in `folder`, each as the Markdown block
    /// that quotes it.
    static func regions(in folder: String) throws -> [(file: String, name: String, block: String)] {
        let url = Repository.root.appendingPathComponent(folder)
        var found: [(file: String, name: String, block: String)] = []
        for file in try FileManager.default.contentsOfDirectory(atPath: url.path).sorted()
        where file.hasSuffix(".swift") {
            let lines = try String(contentsOf: url.appendingPathComponent(file), encoding: .utf8)
                .split(separator: "\n", omittingEmptySubsequences: false)
            var open: (name: String, body: [Substring])?
            for line in lines {
                if let current = open {
                    if line == "// [/\(current.name)]" {
                        found.append(
                            (file, current.name, "```swift\n" + current.body.joined(separator: "\n") + "\n```"))
                        open = nil
                    } else {
                        open?.body.append(line)
                    }
                } else if line.hasPrefix("// ["), line.hasSuffix("]"), !line.hasPrefix("// [/") {
                    open = (String(line.dropFirst(4).dropLast()), [])
                }
            }
            #expect(open == nil, "\(folder)/\(file): region \(open?.name ?? "") is not closed")
        }
        return found
    }
}
