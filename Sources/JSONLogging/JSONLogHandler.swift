import Foundation
import JSONCoding
import Logging

/// swift-log's handler of the merchant server: each message is one JSON object on one line, keys sorted: `time`
/// (UTC with milliseconds), `level` (``levelName(_:)``: `info`, `warn`, `error`, ...), `msg`, and the metadata (the
/// handler's, then its provider's, then the message's, each winning over the one before; `time`, `level` and `msg`
/// cannot be overridden). A `.stringConvertible` integer, floating-point number or boolean is written as a JSON
/// number or boolean (`"status": .stringConvertible(404)` gives `"status":404`), any other value as a string,
/// `.dictionary` as an object and `.array` as an array. Callers pass only identifiers, codes, statuses and
/// durations: never a PAN, cryptogram, key or token.
///
/// `applepay serve` bootstraps it over ``LogOutput/standardError`` (``bootstrapStandardError(logLevel:)``); tests
/// and apps give it a sink of their own:
/// `Logger(label: "shop") { _ in JSONLogHandler(sink: { line in ... }) }`.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    /// Where lines go; each call receives one complete line without its newline.
    public let sink: @Sendable (String) -> Void

    /// - Parameters:
    ///   - logLevel: the least severe level written (`.info`: every line the server writes today).
    ///   - metadataProvider: metadata added to every line (a task's request id, say).
    ///   - sink: receives each line, without its newline.
    public init(
        logLevel: Logger.Level = .info, metadataProvider: Logger.MetadataProvider? = nil,
        sink: @escaping @Sendable (String) -> Void
    ) {
        self.logLevel = logLevel
        self.metadataProvider = metadataProvider
        self.sink = sink
    }

    /// Lines to standard error, written behind the caller (``LogOutput``): a request never waits for the write.
    public static let standardError = JSONLogHandler(sink: { LogOutput.standardError.write(line: $0) })

    /// Makes every `Logger(label:)` of the process write JSON lines to standard error, behind the caller. swift-log
    /// allows this once per process: the executable calls it first thing; a library never does.
    public static func bootstrapStandardError(logLevel: Logger.Level = .info) {
        LoggingSystem.bootstrap { _ in
            var handler = JSONLogHandler.standardError
            handler.logLevel = logLevel
            return handler
        }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty {
            fields.merge(provided) { $1 }
        }
        if let given = event.metadata {
            if fields.isEmpty { fields = given } else { fields.merge(given) { $1 } }
        }
        if let error = event.error, fields["error"] == nil { fields["error"] = "\(error)" }
        sink(Self.line(time: Date(), level: event.level, message: event.message.description, metadata: fields))
    }

    /// The name a line gives `level`: swift-log's own, but `warn` for `.warning` (the name the server's lines have
    /// always had).
    public static func levelName(_ level: Logger.Level) -> String {
        level == .warning ? "warn" : level.rawValue
    }

    /// One line: `time`, `level`, `msg` and `metadata`, keys sorted, no newline.
    package static func line(time: Date, level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        // One array of the fields, sorted: no copy of the caller's dictionary, no insertion into it.
        var fields: [(key: String, value: Logger.MetadataValue)] = []
        fields.reserveCapacity(metadata.count + 3)
        for field in metadata where field.key != "time" && field.key != "level" && field.key != "msg" {
            fields.append(field)
        }
        fields.append(("time", .string(timestamp(time))))
        fields.append(("level", .string(levelName(level))))
        fields.append(("msg", .string(message)))
        fields.sort { $0.key < $1.key }
        var line: [UInt8] = []
        line.reserveCapacity(256)
        appendObject(fields, to: &line)
        return String(decoding: line, as: UTF8.self)
    }

    private static func appendObject(_ fields: [(key: String, value: Logger.MetadataValue)], to line: inout [UInt8]) {
        line.append(UInt8(ascii: "{"))
        for (index, field) in fields.enumerated() {
            if index > 0 { line.append(UInt8(ascii: ",")) }
            SortedJSONEncoder.appendString(field.key, to: &line)
            line.append(UInt8(ascii: ":"))
            appendValue(field.value, to: &line)
        }
        line.append(UInt8(ascii: "}"))
    }

    private static func appendValue(_ value: Logger.MetadataValue, to line: inout [UInt8]) {
        switch value {
        case .string(let text):
            SortedJSONEncoder.appendString(text, to: &line)
        case .stringConvertible(let convertible):
            // The common types first: a cast to a concrete type is cheaper than one to a protocol.
            switch convertible {
            case let number as Int: line.append(contentsOf: number.description.utf8)
            case let number as Double: appendNumber(number, to: &line)
            case let flag as Bool: line.append(contentsOf: (flag ? "true" : "false").utf8)
            case let number as any BinaryInteger: line.append(contentsOf: number.description.utf8)
            case let number as Float: appendNumber(Double(number), to: &line)
            default: SortedJSONEncoder.appendString(convertible.description, to: &line)
            }
        case .dictionary(let fields):
            appendObject(fields.sorted { $0.key < $1.key }, to: &line)
        case .array(let values):
            line.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                appendValue(element, to: &line)
            }
            line.append(UInt8(ascii: "]"))
        }
    }

    /// A finite number as Swift writes it (`1.5`, `0.123`); infinities and NaN, which JSON has no word for, as
    /// `null`.
    private static func appendNumber(_ number: Double, to line: inout [UInt8]) {
        line.append(contentsOf: (number.isFinite ? number.description : "null").utf8)
    }

    /// ISO 8601 with milliseconds, UTC (`2026-11-30T21:19:16.123Z`), from the C calendar: no formatter per line.
    package static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds.quotient(dividingBy: 1000))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var text: [UInt8] = []
        text.reserveCapacity(24)
        func append(_ value: Int, digits: Int) {
            var divisor = 1
            for _ in 1..<digits { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                text.append(UInt8(ascii: "0") + UInt8(rest / divisor))
                rest %= divisor
                divisor /= 10
            }
        }
        append(Int(parts.tm_year) + 1900, digits: 4)
        text.append(UInt8(ascii: "-"))
        append(Int(parts.tm_mon) + 1, digits: 2)
        text.append(UInt8(ascii: "-"))
        append(Int(parts.tm_mday), digits: 2)
        text.append(UInt8(ascii: "T"))
        append(Int(parts.tm_hour), digits: 2)
        text.append(UInt8(ascii: ":"))
        append(Int(parts.tm_min), digits: 2)
        text.append(UInt8(ascii: ":"))
        append(Int(parts.tm_sec), digits: 2)
        text.append(UInt8(ascii: "."))
        append(Int(milliseconds.remainder(dividingBy: 1000)), digits: 3)
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }
}

extension Int64 {
    /// Division rounding toward negative infinity (times before 1970 included).
    fileprivate func quotient(dividingBy divisor: Int64) -> Int64 {
        let (quotient, remainder) = quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? quotient - 1 : quotient
    }

    /// The remainder that goes with ``quotient(dividingBy:)``: never negative.
    fileprivate func remainder(dividingBy divisor: Int64) -> Int64 {
        let remainder = self % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }
}
