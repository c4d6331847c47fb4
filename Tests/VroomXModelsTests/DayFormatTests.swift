import Testing
import VroomXModels

struct DayFormatTests {
    private func day(_ text: String) -> LocalDate { LocalDate(text)! }

    @Test func daysAndSpansReadAsWords() {
        #expect(DayFormat.day(day("2026-11-27")) == "Nov 27, 2026")
        #expect(DayFormat.day(day("2027-01-05")) == "Jan 5, 2027")
        #expect(DayFormat.span(day("2026-11-27"), day("2026-11-27")) == "Nov 27, 2026")
        #expect(DayFormat.span(day("2026-11-27"), day("2026-11-30")) == "Nov 27 – 30, 2026")
        #expect(DayFormat.span(day("2026-11-27"), day("2026-12-01")) == "Nov 27 – Dec 1, 2026")
        #expect(DayFormat.span(day("2026-12-30"), day("2027-01-02")) == "Dec 30, 2026 – Jan 2, 2027")
        #expect(DayFormat.span(day("2026-11-27"), nil) == "from Nov 27, 2026")
        #expect(DayFormat.span(nil, day("2026-11-30")) == "by Nov 30, 2026")
        #expect(DayFormat.span(nil, nil) == nil)
        // A span the other way round (not stored by the server, but a cache may hold anything) names both days.
        #expect(DayFormat.span(day("2026-11-30"), day("2026-11-27")) == "Nov 30, 2026 – Nov 27, 2026")
        for month in 1...12 {
            #expect(DayFormat.day(LocalDate(year: 2026, month: month, day: 1)!).hasSuffix(" 1, 2026"))
        }
    }
}
