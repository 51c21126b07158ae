import Foundation

/// A page template (a file in `Web/Assets/`), parsed once, rendered per request with HTML-escaped values:
/// - `{{name}}` is replaced by the text `name`, HTML-escaped;
/// - `{{#name}}…{{/name}}` is written once for each context of the list `name` (an empty list leaves it out); inside,
///   a name is looked up in that context first, then in the enclosing ones.
///
/// Nothing else: no raw (unescaped) values, no logic. A name the context lacks renders nothing (and stops debug
/// builds), so the tests catch a template and its renderer that disagree.
struct PageTemplate: Sendable {
    enum Value: Sendable {
        case text(String)
        case list([Context])
    }
    typealias Context = [String: Value]

    struct SyntaxError: Error, CustomStringConvertible {
        var description: String
    }

    private indirect enum Node: Sendable {
        case literal(String)
        case value(String)
        case section(String, [Node])
    }

    private let nodes: [Node]

    init(_ text: String) throws {
        var open: [(name: String, nodes: [Node])] = [("", [])]
        var rest = text[...]
        while let start = rest.range(of: "{{") {
            open[open.count - 1].nodes.append(.literal(String(rest[..<start.lowerBound])))
            guard let end = rest[start.upperBound...].range(of: "}}") else {
                throw SyntaxError(description: "a {{ without }}")
            }
            let tag = rest[start.upperBound..<end.lowerBound].trimmingCharacters(in: .whitespaces)
            rest = rest[end.upperBound...]
            if tag.hasPrefix("#") {
                open.append((String(tag.dropFirst()), []))
            } else if tag.hasPrefix("/") {
                guard open.count > 1, let section = open.popLast(), section.name == tag.dropFirst() else {
                    throw SyntaxError(description: "{{\(tag)}} closes no open section")
                }
                open[open.count - 1].nodes.append(.section(section.name, section.nodes))
            } else {
                guard !tag.isEmpty else { throw SyntaxError(description: "an empty {{}}") }
                open[open.count - 1].nodes.append(.value(tag))
            }
        }
        open[open.count - 1].nodes.append(.literal(String(rest)))
        guard open.count == 1, let top = open.first else {
            throw SyntaxError(description: "{{#\(open[open.count - 1].name)}} is never closed")
        }
        nodes = top.nodes
    }

    func render(_ context: Context) -> String {
        var out = ""
        Self.render(nodes, in: [context], into: &out)
        return out
    }

    private static func render(_ nodes: [Node], in scopes: [Context], into out: inout String) {
        func lookUp(_ name: String) -> Value? { scopes.reversed().lazy.compactMap { $0[name] }.first }
        for node in nodes {
            switch node {
            case .literal(let text):
                out += text
            case .value(let name):
                guard case .text(let text)? = lookUp(name) else {
                    assertionFailure("no text for {{\(name)}}")
                    continue
                }
                out += escape(text)
            case .section(let name, let body):
                guard case .list(let items)? = lookUp(name) else {
                    assertionFailure("no list for {{#\(name)}}")
                    continue
                }
                for item in items { render(body, in: scopes + [item], into: &out) }
            }
        }
    }

    /// `&`, `<`, `>`, `"` and `'` as character references: safe in text and in quoted attributes.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
