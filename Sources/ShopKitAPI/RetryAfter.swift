import Foundation

/// Parses the `Retry-After` header (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
package enum RetryAfter {
    /// The delay `value` asks for, relative to `now`; `nil` when it is neither form. Dates in the past give zero.
    package static func delay(from value: String, now: Date) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed.allSatisfy(\.isASCIIDigit) {
            // Saturate absurd values instead of overflowing; callers cap by their max delay anyway.
            return .seconds(Int64(trimmed) ?? Int64.max / 1_000_000_000_000)
        }
        guard let date = httpDate(trimmed) else { return nil }
        let seconds = date.timeIntervalSince(now)
        return seconds > 0 ? .milliseconds(Int64((seconds * 1000).rounded(.up))) : .zero
    }

    /// Parses IMF-fixdate and the two obsolete forms every recipient must accept (RFC 850, asctime).
    ///
    /// asctime pads a one-digit day with a space (`Sun Nov  6 08:49:37 1994`); runs of spaces are collapsed first.
    static func httpDate(_ value: String) -> Date? {
        // An HTTP-date is printable ASCII. Anything else is refused before DateFormatter, which leaks memory on
        // characters outside the BMP (swift-corelibs-foundation; found by the retry-after fuzz target).
        guard value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return nil }
        let value = value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        let formats = ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"]
        for format in formats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: value) { return date }
        }
        return nil
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
