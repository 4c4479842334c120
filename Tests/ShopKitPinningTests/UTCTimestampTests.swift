import Foundation
import Testing
@testable import ShopKitPinning

/// `UTCTimestamp`, the one reader of document and log-list times, against Foundation's formatter: every instant
/// it writes is read back exactly, and any text read is one that instant writes (nothing is normalized).
@Suite(.timeLimit(.minutes(3))) struct UTCTimestampTests {
    @Test func everyInstantWrittenIsReadBackExactly() {
        var random = SplitMix(seed: 20_261_128)  // fixed, so a failure can be replayed
        // 1970-01-01 to 2200-01-01, whole seconds.
        let start: Int64 = 0, span: UInt64 = 7_258_118_400
        for _ in 0..<20_000 {
            let date = Date(timeIntervalSince1970: TimeInterval(start + Int64(random.next() % span)))
            let text = PinSetDocument.timestamp(date)
            #expect(UTCTimestamp.parse(text, fractionalSeconds: false) == date, "\(text)")
            #expect(UTCTimestamp.parse(String(text.dropLast()) + ".250Z", fractionalSeconds: true) == date + 0.25, "\(text)")
            #expect(UTCTimestamp.parse(String(text.dropLast()) + ".250Z", fractionalSeconds: false) == nil, "\(text)")
        }
    }

    /// One character changed anywhere: either refused, or a time that writes back as exactly that text.
    @Test func aChangedTimeIsRefusedOrReadAsWritten() {
        var random = SplitMix(seed: 41)
        let alphabet = Array("0123456789-:TZz+. ٣\u{0}")
        for _ in 0..<20_000 {
            let date = Date(timeIntervalSince1970: TimeInterval(random.next() % 8_000_000_000))
            var text = Array(PinSetDocument.timestamp(date))
            text[Int(random.next() % UInt64(text.count))] = alphabet[Int(random.next() % UInt64(alphabet.count))]
            let changed = String(text)
            if let read = UTCTimestamp.parse(changed, fractionalSeconds: false) {
                #expect(PinSetDocument.timestamp(read) == changed, "\(changed) read as \(read)")
            }
        }
    }
}
