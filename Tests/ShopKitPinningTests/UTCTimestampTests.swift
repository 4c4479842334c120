import Foundation
import Testing
@testable import ShopKitPinning

/// `UTCTimestamp`, the one reader of document and log-list times, against Foundation's formatter: every instant
/// it writes is read back exactly, and any text read is one that instant writes (nothing is normalized).
@Suite(.timeLimit(.minutes(3))) struct UTCTimestampTests {
    /// A fixed sequence (SplitMix64), so a failure names the case that can be replayed.
    struct Sequence {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test func everyInstantWrittenIsReadBackExactly() {
        var random = Sequence(state: 20_261_128)
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
        var random = Sequence(state: 41)
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
