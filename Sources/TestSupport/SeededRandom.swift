/// A small deterministic generator (SplitMix64): the same choices for the same seed, so a failing round of a
/// randomised test can be replayed from the seed it prints.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number from 0 up to, not including, `upperBound`.
    public mutating func next(upperBound: Int) -> Int { Int(next() % UInt64(upperBound)) }
}
