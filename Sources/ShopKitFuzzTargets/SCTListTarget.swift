import ShopKitOpenSSL
import ShopKitPinning

/// An SCT list in its TLS encoding (`SignedCertificateTimestampList`: the certificate extension's content and the
/// TLS extension's body), through OpenSSL's parser as ShopKit reads it (`SCTListParser`).
enum SCTListTarget {
    static func run(_ bytes: [UInt8]) {
        guard let (timestamps, reencoded) = SCTListParser.parse(bytes) else { return }
        // A list OpenSSL accepted is exactly its SCTs: encoded again, the same bytes (nothing dropped, nothing
        // added), and the SCTs' own encodings fill it (two bytes of length each, two for the list).
        FuzzCheck.require(reencoded == bytes, "the SCT list does not encode back to its input")
        let filled = 2 + timestamps.reduce(0) { $0 + 2 + $1.serialized.count }
        FuzzCheck.require(filled == bytes.count, "the SCTs (\(filled) bytes with lengths) do not fill the list (\(bytes.count))")
        for sct in timestamps {
            FuzzCheck.require(!sct.serialized.isEmpty, "an SCT with no encoding")
            FuzzCheck.require(sct.source == .embedded, "a parsed SCT claims another source")
            // Never checked against a log here: a parsed SCT must not claim a signature check.
            FuzzCheck.require(sct.status != .valid && sct.status != .invalid, "a parsed SCT claims a signature check")
            if sct.version == 0 { FuzzCheck.require(sct.logID.count == 32, "a v1 SCT whose log id is not 32 bytes") }
        }
    }
}
