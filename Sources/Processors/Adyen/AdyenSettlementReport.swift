import ApplePay
import Foundation
import Foundations
import MerchantCore

/// Adyen's Settlement details report (CSV), read into a ``ProviderStatement``: Adyen has no API that lists
/// payments, so the daily check reads the report a finance team downloads from the Customer Area
/// (https://docs.adyen.com/reporting/settlement-detail-report: one header line, then one line per record).
///
/// Columns are found by their names in the header, as Adyen documents them (the order may be changed and columns
/// added in the Customer Area): `Psp Reference` (the payment's), `Merchant Reference` (ours: the token's transaction
/// id), `Creation Date`, `Type`, `Gross Currency`, `Gross Debit (GC)` and `Gross Credit (GC)`. Records of type
/// `Settled` are captures (Gross Credit), `Refunded` refunds (Gross Debit) and `RefundedReversed` refunds given back;
/// the other types (fees, payouts, chargebacks, corrections) are not payments of an order and are skipped. A
/// settlement report lists what was settled in its batches, so an order paid but not in it is not a discrepancy.
public struct AdyenSettlementReport: Sendable {
    public let statement: ProviderStatement

    /// Reads a report.
    /// - Throws: ``SettlementReportError`` naming the line and column at fault; nothing is read from a report that
    ///   has one bad line.
    public init(csv: Data) throws(SettlementReportError) {
        guard let text = String(data: csv, encoding: .utf8) else {
            throw SettlementReportError(.malformedLine, "the report is not UTF-8 text")
        }
        var lines = try Self.records(text)
        guard !lines.isEmpty else { throw SettlementReportError(.missingColumn, "the report has no header line") }
        let header = lines.removeFirst().map { $0.trimmingCharacters(in: .whitespaces) }
        func column(_ name: String) throws(SettlementReportError) -> Int {
            guard let index = header.firstIndex(of: name) else {
                throw SettlementReportError(.missingColumn, "the report has no \"\(name)\" column")
            }
            return index
        }
        let psp = try column("Psp Reference")
        let merchant = try column("Merchant Reference")
        let type = try column("Type")
        let currency = try column("Gross Currency")
        let debit = try column("Gross Debit (GC)")
        let credit = try column("Gross Credit (GC)")
        let created = header.firstIndex(of: "Creation Date")
        var entries: [String: ProviderStatementEntry] = [:]
        var order: [String] = []
        for (offset, fields) in lines.enumerated() {
            let line = offset + 2
            guard fields.count > max(psp, merchant, type, currency, debit, credit) else {
                throw SettlementReportError(
                    .malformedLine, "line \(line) has \(fields.count) fields, the header \(header.count)")
            }
            let kind = fields[type]
            guard ["Settled", "Refunded", "RefundedReversed"].contains(kind) else { continue }
            let reference = fields[psp]
            guard !reference.isEmpty else {
                throw SettlementReportError(.malformedLine, "line \(line) (\(kind)) has no Psp Reference")
            }
            guard let money = Currency(code: fields[currency].uppercased()) else {
                throw SettlementReportError(.invalidAmount, "line \(line) has no known Gross Currency")
            }
            let text = kind == "Settled" ? fields[credit] : fields[debit]
            let amount: Int64
            do {
                amount = try Money(parsing: text, currency: money).minorUnits
            } catch {
                throw SettlementReportError(
                    .invalidAmount, "line \(line) (\(kind)): \"\(text.prefix(20))\" is not an amount in \(money.code)")
            }
            var entry =
                entries[reference]
                ?? ProviderStatementEntry(
                    reference: reference, merchantReference: fields[merchant].isEmpty ? nil : fields[merchant],
                    amount: 0, currencyCode: money.code, captured: false)
            if entries[reference] == nil { order.append(reference) }
            switch kind {
            case "Settled":
                entry.captured = true
                entry.amount += amount
                entry.createdAt = created.flatMap { Self.date(fields[$0]) } ?? entry.createdAt
            case "Refunded": entry.refunded += amount
            default: entry.refunded -= amount
            }
            entries[reference] = entry
        }
        statement = ProviderStatement(entries: order.compactMap { entries[$0] }, listsEveryPayment: false)
    }

    /// `YYYY-MM-DD HH:MM:SS` in the report's time zone (read as UTC: the check matches by reference, not by date).
    static func date(_ text: String) -> Date? {
        try? Date(text.replacingOccurrences(of: " ", with: "T") + "Z", strategy: .iso8601)
    }

    /// RFC 4180 records: fields separated by commas, a quoted field may hold commas, quotes (doubled) and line
    /// breaks; blank lines are skipped.
    static func records(_ text: String) throws(SettlementReportError) -> [[String]] {
        var records: [[String]] = []
        var record: [String] = []
        var field = ""
        var quoted = false
        var iterator = text.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar? = nil
        func next() -> Unicode.Scalar? {
            if let scalar = pending {
                pending = nil
                return scalar
            }
            return iterator.next()
        }
        while let scalar = next() {
            if quoted {
                if scalar == "\"" {
                    let following = next()
                    if following == "\"" {
                        field.unicodeScalars.append("\"")
                    } else {
                        quoted = false
                        pending = following
                    }
                } else {
                    field.unicodeScalars.append(scalar)
                }
                continue
            }
            switch scalar {
            case "\"" where field.isEmpty: quoted = true
            case ",":
                record.append(field)
                field = ""
            case "\r": break
            case "\n":
                record.append(field)
                field = ""
                if record != [""] { records.append(record) }
                record = []
            default: field.unicodeScalars.append(scalar)
            }
        }
        guard !quoted else { throw SettlementReportError(.malformedLine, "a quoted field is never closed") }
        record.append(field)
        if record != [""] { records.append(record) }
        return records
    }
}

/// The domain of ``SettlementReportError``.
public enum SettlementReportErrorDomain {}

/// A report that cannot be read, with a stable code.
public typealias SettlementReportError = CodedFailure<SettlementReportErrorDomain>

extension ErrorCode<SettlementReportError> {
    /// A column the check needs is not in the header.
    public static var missingColumn: Self { Self("settlementReportMissingColumn") }
    /// A line cannot be read (too few fields, an unclosed quote, no reference).
    public static var malformedLine: Self { Self("settlementReportMalformedLine") }
    /// An amount or currency cannot be read.
    public static var invalidAmount: Self { Self("settlementReportInvalidAmount") }
}
