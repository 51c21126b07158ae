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
            // Packages' products (swift-log's `Logging`, …) are outside the map.
            for dependency in targets[module] ?? [] where targets[dependency] != nil {
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

    @Test("each module's dependencies in Package.swift are the modules its files import")
    func dependenciesMatchImports() throws {
        try expectDependenciesMatchImports { !$0.isTest && $0.folder.hasPrefix("Sources/") }
    }

    @Test("each test target's dependencies in Package.swift are the modules its files import")
    func testDependenciesMatchImports() throws {
        try expectDependenciesMatchImports { $0.isTest }
    }

    /// For each target `selected` picks: its dependencies are exactly the modules its files import, counting only
    /// modules Package.swift can name (its own targets and the packages' products it depends on). A test may depend
    /// on an executable only to have it built (CommandLineTests runs `applepay`).
    private func expectDependenciesMatchImports(_ selected: (PackageTargets.Declaration) -> Bool) throws {
        let declarations = try PackageTargets.declarations()
        let known = Set(declarations.map(\.name)).union(declarations.flatMap(\.dependencies))
        let executables = Set(declarations.filter { $0.kind == ".executableTarget(" }.map(\.name))
        for target in declarations where selected(target) {
            var imported = Set<String>()
            for file in try swiftFiles(in: Repository.root.appendingPathComponent(target.folder)) {
                imported.formUnion(try Self.imports(of: file))
            }
            let importedKnown = imported.intersection(known).subtracting([target.name])
            let declared = Set(target.dependencies)
            let builtOnly = target.isTest ? executables : []
            #expect(
                declared.subtracting(importedKnown).subtracting(builtOnly).sorted() == [],
                "\(target.name) depends on modules it never imports")
            #expect(
                importedKnown.subtracting(declared).sorted() == [],
                "\(target.name) imports modules Package.swift does not list as its dependencies")
        }
    }

    /// The modules a file imports (`import X`, `@testable import X`, `package import X`, `import struct X.Y`).
    static func imports(of file: URL) throws -> Set<String> {
        var names = Set<String>()
        for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
            let words = line.split(separator: " ")
            guard let index = words.firstIndex(of: "import"), index <= 2,
                words[..<index].allSatisfy({ $0.hasPrefix("@") || ["public", "package", "internal"].contains($0) }),
                index + 1 < words.count
            else { continue }
            let target = words.count > index + 2 ? words[index + 2] : words[index + 1]
            names.insert(String(target.split(separator: ".").first ?? target))
        }
        return names
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

/// The targets Package.swift declares, each with its folder and its dependencies: the names of targets and of
/// packages' products (`.product(name: "Logging", package: "swift-log")` as `Logging`).
enum PackageTargets {
    /// One `.target(`, `.executableTarget(`, `.systemLibrary(` or `.testTarget(` call.
    struct Declaration {
        var kind: String
        var name: String
        /// Its `path:`, or SwiftPM's default folder.
        var folder: String
        var dependencies: [String]

        /// A test target, or a support target under `Tests/`.
        var isTest: Bool { kind == ".testTarget(" || folder.hasPrefix("Tests/") }
    }

    /// The modules (not tests, nor the support targets under `Tests/`) and their dependencies.
    static func read() throws -> [String: [String]] {
        var targets: [String: [String]] = [:]
        for target in try declarations() where !target.isTest { targets[target.name] = target.dependencies }
        return targets
    }

    /// Every target Package.swift declares, in order.
    static func declarations() throws -> [Declaration] {
        let text = try String(contentsOf: Repository.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        var targets: [Declaration] = []
        let kinds = [".target(", ".executableTarget(", ".systemLibrary(", ".testTarget("]
        var rest = Substring(text)
        while let (kind, start) = kinds.compactMap({ kind in rest.range(of: kind).map { (kind, $0) } })
            .min(by: { $0.1.lowerBound < $1.1.lowerBound })
        {
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
            guard let name = quoted(after: "name:", in: call) else { continue }
            var dependencies: [String] = []
            if let list = call.range(of: "dependencies:"),
                let open = call[list.upperBound...].firstIndex(of: "["),
                let close = call[open...].firstIndex(of: "]")
            {
                // A product's package name follows `package:`; every other quoted name is a module.
                var quoted = call[open..<close].split(separator: "\"", omittingEmptySubsequences: false)
                    .enumerated().filter { $0.offset % 2 == 1 }.map { (text: String($0.element), index: $0.offset) }
                let parts = call[open..<close].split(separator: "\"", omittingEmptySubsequences: false)
                quoted.removeAll { parts[$0.index - 1].hasSuffix("package: ") }
                dependencies = quoted.map(\.text)
            }
            let folder = quoted(after: "path:", in: call) ?? (kind == ".testTarget(" ? "Tests/" : "Sources/") + name
            targets.append(Declaration(kind: kind, name: name, folder: folder, dependencies: dependencies))
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
