import Foundation

/// A day of the proleptic Gregorian calendar, counted in UTC: what a delivery estimate or a certificate's validity
/// needs, by Howard Hinnant's days-from-civil algorithms. Exact for every representable year, and a few integer
/// operations where `Calendar` with a time zone costs thousands of instructions.
public struct CivilDay: Hashable, Sendable, CustomStringConvertible {
    /// The year (1 BC is 0).
    public var year: Int
    /// 1 to 12.
    public var month: Int
    /// 1 to the month's last day.
    public var day: Int

    /// A day as given; not checked (31 February counts as 3 March).
    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// The day `days` after 1 January 1970 (negative: before it).
    public init(daysSinceEpoch days: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // 0 is March
        day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// The UTC day `date` falls on.
    public init(_ date: Date) {
        let seconds = date.timeIntervalSince1970
        self.init(daysSinceEpoch: Int((seconds / 86_400).rounded(.down)))
    }

    /// Days from 1 January 1970 to this day (negative: before it).
    public var daysSinceEpoch: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The day `days` later (earlier when negative).
    public func adding(days: Int) -> CivilDay { CivilDay(daysSinceEpoch: daysSinceEpoch + days) }

    /// `YYYY-MM-DD`.
    public var description: String {
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(year, 4))-\(padded(month, 2))-\(padded(day, 2))"
    }
}
