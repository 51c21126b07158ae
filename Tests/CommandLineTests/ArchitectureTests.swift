import Foundation
import TestSupport
import Testing

/// docs/ARCHITECTURE.md's module map against Package.swift: the map names every module, in an order where each
/// module depends only on modules above it; production modules never link the sandbox; no module dominates.
@Suite("The architecture: docs/ARCHITECTURE.md's module map and Package.swift")
struct ArchitectureTests {
    /// The modules that may join production code to the sandbox (`Sandbox`, `ProcessorService`).
    static let sandboxJoiners: Set<String> = [
        "applepay", "PaymentSheet", "InProcessMerchant", "FuzzPaymentToken", "FuzzMerchant", "SandboxGateway",
        "MerchantSandbox", "ProcessorService", "LibraryExamples",
    ]

    @Test("the map lists every target of Package.swift and nothing else")
    func mapMatchesPackage() throws {
        let targets = try PackageTargets.read()
        let map = try ModuleMap.read()
        let listed = Set(map)
        let declared = Set(targets.keys)
        #expect(listed.subtracting(declared).sorted() == [], "listed in docs/ARCHITECTURE.md but not a target")
        #expect(declared.subtracting(listed).sorted() == [], "a target that docs/ARCHITECTURE.md does not list")
        #expect(map.count == listed.count, "a module listed twice")
    }

    @Test("each module depends only on modules listed above it")
    func layering() throws {
        let targets = try PackageTargets.read()
        let map = try ModuleMap.read()
        for (index, module) in map.enumerated() {
            let above = Set(map[..<index])
            for dependency in targets[module] ?? [] {
                #expect(above.contains(dependency), "\(module) depends on \(dependency), listed below it")
            }
        }
    }

    @Test("no production module depends on or imports Sandbox or ProcessorService")
    func sandboxStaysOut() throws {
        let targets = try PackageTargets.read()
        for (module, dependencies) in targets where !Self.sandboxJoiners.contains(module) && module != "Sandbox" {
            #expect(!dependencies.contains("Sandbox"), "\(module) depends on Sandbox")
            #expect(!dependencies.contains("ProcessorService"), "\(module) depends on ProcessorService")
        }
        let sources = Repository.root.appendingPathComponent("Sources")
        for module in try FileManager.default.contentsOfDirectory(atPath: sources.path)
        where !Self.sandboxJoiners.contains(module) && module != "Sandbox" {
            for file in try swiftFiles(in: sources.appendingPathComponent(module)) {
                let text = try String(contentsOf: file, encoding: .utf8)
                for line in text.split(separator: "\n") where line.hasPrefix("import ") {
                    let name = line.split(separator: " ").last.map(String.init) ?? ""
                    #expect(
                        name != "Sandbox" && name != "ProcessorService",
                        "\(module)/\(file.lastPathComponent) imports \(name)")
                }
            }
        }
    }

    @Test("no module holds more than a quarter of the lines in Sources")
    func noModuleDominates() throws {
        let sources = Repository.root.appendingPathComponent("Sources")
        var lines: [String: Int] = [:]
        for module in try FileManager.default.contentsOfDirectory(atPath: sources.path) {
            for file in try swiftFiles(in: sources.appendingPathComponent(module)) {
                lines[module, default: 0] += try String(contentsOf: file, encoding: .utf8).split(
                    separator: "\n", omittingEmptySubsequences: false
                ).count
            }
        }
        let total = lines.values.reduce(0, +)
        let (largest, count) = try #require(lines.max { $0.value < $1.value })
        #expect(count * 4 <= total, "\(largest) holds \(count) of \(total) lines")
    }

    private func swiftFiles(in folder: URL) throws -> [URL] {
        guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else {
            return []
        }
        return walker.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
    }
}

/// The targets Package.swift declares (not tests, not `TestSupport`), each with its dependencies.
enum PackageTargets {
    static func read() throws -> [String: [String]] {
        let text = try String(contentsOf: Repository.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        var targets: [String: [String]] = [:]
        let kinds = [".target(", ".executableTarget(", ".systemLibrary("]
        var rest = Substring(text)
        while let start = kinds.compactMap({ rest.range(of: $0) }).min(by: { $0.lowerBound < $1.lowerBound }) {
            // The call's text, up to its closing parenthesis.
            var depth = 1
            var end = start.upperBound
            while end < rest.endIndex, depth > 0 {
                if rest[end] == "(" { depth += 1 }
                if rest[end] == ")" { depth -= 1 }
                end = rest.index(after: end)
            }
            let call = rest[start.upperBound..<end]
            rest = rest[end...]
            guard let name = quoted(after: "name:", in: call), name != "TestSupport" else { continue }
            var dependencies: [String] = []
            if let list = call.range(of: "dependencies:"),
                let open = call[list.upperBound...].firstIndex(of: "["),
                let close = call[open...].firstIndex(of: "]")
            {
                // Products of other packages (`.product(name:package:)`) are not modules of the map.
                var names = String(call[open..<close])
                while let product = names.range(of: ".product("),
                    let end = names[product.upperBound...].firstIndex(of: ")")
                {
                    names.removeSubrange(product.lowerBound...end)
                }
                dependencies = names.split(separator: "\"").enumerated().filter { $0.offset % 2 == 1 }
                    .map { String($0.element) }
            }
            targets[name] = dependencies
        }
        return targets
    }

    private static func quoted(after label: String, in text: Substring) -> String? {
        guard let label = text.range(of: label) else { return nil }
        let parts = text[label.upperBound...].split(separator: "\"", maxSplits: 2)
        return parts.count >= 2 ? String(parts[1]) : nil
    }
}

/// The module names of docs/ARCHITECTURE.md's map (the block under "## The layers"), in order.
enum ModuleMap {
    static func read() throws -> [String] {
        let text = try String(
            contentsOf: Repository.root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        guard let section = text.range(of: "## The layers"), let block = text[section.upperBound...].range(of: "```\n")
        else { return [] }
        var names: [String] = []
        var inSources = false
        for line in text[block.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { break }
            if line == "Sources/" {
                inSources = true
                continue
            }
            if line.hasPrefix("Examples/") {
                names.append(String(line.dropFirst("Examples/".count).prefix { !$0.isWhitespace }))
                inSources = false
                continue
            }
            // A module's line starts two spaces in; the names end where two spaces do.
            guard inSources, line.hasPrefix("  "), !line.hasPrefix("   ") else { continue }
            let head = line.dropFirst(2).components(separatedBy: "  ")[0]
            names += head.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty
            }
        }
        return names
    }
}
