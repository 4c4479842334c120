import ShopKitOpenSSL
import ShopKitPinning

/// An SCT list in its TLS encoding (`SignedCertificateTimestampList`: the certificate extension's content and the
/// TLS extension's body), through OpenSSL's parser as ShopKit reads it (`SCTListParser`).
enum SCTListTarget {
    static func run(_ bytes: [UInt8]) {
        guard let (timestamps, reencoded) = SCTListParser.parse(bytes) else { return }
        // OpenSSL skips bytes after a v1 SCT's signature inside that SCT's length (`o2i_SCT`), so its encoding of
        // a list it accepted can be shorter than the input, and it reads an SCT with an empty signature that it
        // then cannot encode (both found by this target: Fuzz/sct-list/empty-signature-then-trailing-bytes). What
        // it reads must be a fixed point: its encoding parses back to the same SCTs and encodes to itself, is never
        // longer than the input, and the SCTs' own encodings fill it (two bytes of length each, two for the list).
        guard let reencoded else {
            FuzzCheck.require(
                timestamps.contains { $0.serialized.isEmpty }, "a list that does not encode, though every SCT does")
            return
        }
        FuzzCheck.require(reencoded.count <= bytes.count, "the SCT list grew when encoded again")
        if reencoded != bytes {
            let again = SCTListParser.parse(reencoded)
            FuzzCheck.require(again?.timestamps == timestamps, "the SCT list's encoding does not parse back to its SCTs")
            FuzzCheck.require(again?.reencoded == reencoded, "the SCT list's encoding is not a fixed point")
        }
        let filled = 2 + timestamps.reduce(0) { $0 + 2 + $1.serialized.count }
        FuzzCheck.require(
            filled == reencoded.count, "the SCTs (\(filled) bytes with lengths) do not fill the list (\(reencoded.count))")
        for sct in timestamps {
            FuzzCheck.require(!sct.serialized.isEmpty, "an SCT with no encoding in a list that encodes")
            FuzzCheck.require(sct.source == .embedded, "a parsed SCT claims another source")
            // Never checked against a log here: a parsed SCT must not claim a signature check.
            FuzzCheck.require(sct.status != .valid && sct.status != .invalid, "a parsed SCT claims a signature check")
            if sct.version == 0 { FuzzCheck.require(sct.logID.count == 32, "a v1 SCT whose log id is not 32 bytes") }
        }
    }
}
