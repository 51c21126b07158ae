import Foundation
import Foundations
import Testing

@Suite("CivilDay: UTC calendar days by integer arithmetic")
struct CivilDayTests {
    /// Foundation's Gregorian calendar in UTC, the reference.
    private static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    @Test("every day from 1600 to 2400 agrees with Foundation's Gregorian calendar, both ways")
    func agreesWithCalendar() {
        let first = CivilDay(year: 1600, month: 1, day: 1).daysSinceEpoch
        let last = CivilDay(year: 2400, month: 12, day: 31).daysSinceEpoch
        #expect(last - first + 1 == 292_560)  // 801 years: 801 × 365 days and 195 leap days
        var mismatches: [String] = []
        for days in stride(from: first, through: last, by: 1) {
            let date = Date(timeIntervalSince1970: TimeInterval(days) * 86_400 + 43_210)
            let parts = Self.calendar.dateComponents([.year, .month, .day], from: date)
            let day = CivilDay(date)
            if day != CivilDay(year: parts.year!, month: parts.month!, day: parts.day!) || day.daysSinceEpoch != days {
                mismatches.append("\(days): \(day) against \(parts)")
                if mismatches.count > 5 { break }
            }
        }
        #expect(mismatches.isEmpty)
    }

    @Test("known days: the epoch, leap days, the last second of a day, before 1970")
    func knownDays() {
        #expect(CivilDay(daysSinceEpoch: 0) == CivilDay(year: 1970, month: 1, day: 1))
        #expect(CivilDay(year: 2000, month: 2, day: 29).adding(days: 1) == CivilDay(year: 2000, month: 3, day: 1))
        #expect(CivilDay(year: 2100, month: 2, day: 28).adding(days: 1) == CivilDay(year: 2100, month: 3, day: 1))
        #expect(CivilDay(year: 2024, month: 12, day: 31).adding(days: 1) == CivilDay(year: 2025, month: 1, day: 1))
        #expect(CivilDay(Date(timeIntervalSince1970: 86_399.999)) == CivilDay(year: 1970, month: 1, day: 1))
        #expect(CivilDay(Date(timeIntervalSince1970: -0.5)) == CivilDay(year: 1969, month: 12, day: 31))
        #expect(CivilDay(year: 1969, month: 12, day: 31).daysSinceEpoch == -1)
        #expect(CivilDay(year: 2026, month: 12, day: 2).description == "2026-12-02")
    }
}
