import Foundation

/// The one reader of the times signed documents and CT log lists write: RFC 3339 in UTC,
/// `YYYY-MM-DDTHH:MM:SSZ`, every field its fixed number of ASCII digits and in range (a month's last day, leap
/// years; no 24:00, no leap second; years 1970 to 9999, so no reader's calendar before the Gregorian one can
/// differ), fractional seconds only where the format allows them. Nothing is normalized: `2027-02-30` is refused,
/// not read as March 2nd. Linear in the text's length, without a date formatter.
enum UTCTimestamp {
    /// The instant `text` names, or nil when it is not such a time; `.5` fractions only if `fractionalSeconds`.
    static func parse(_ text: String, fractionalSeconds: Bool) -> Date? {
        let bytes = Array(text.utf8)
        // YYYY-MM-DDTHH:MM:SS is 19 bytes, then an optional fraction, then Z.
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        let separators: [(Int, Character)] = [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":")]
        guard separators.allSatisfy({ bytes[$0.0] == $0.1.asciiValue }),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            year >= 1970, (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 60
        else { return nil }
        var fraction = 0.0
        if bytes.count > 20 {
            let digits = 20..<(bytes.count - 1)
            guard fractionalSeconds, bytes[19] == UInt8(ascii: "."), !digits.isEmpty, digits.count <= 9,
                let value = number(digits)
            else { return nil }
            fraction = Double(value) / pow(10, Double(digits.count))
        }
        let days = daysSince1970(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3_600 + minute * 60 + second) + fraction)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to the date in the proleptic Gregorian calendar (Hinnant's days_from_civil).
    private static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
