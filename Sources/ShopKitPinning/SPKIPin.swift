import Foundation

/// A public-key pin: the SHA-256 digest of a certificate's DER `SubjectPublicKeyInfo`.
///
/// Its canonical form is OkHttp's `sha256/BASE64`; curl's `sha256//BASE64` is accepted on input. That text is
/// its one public form: a pin is made with ``init(_:)`` (or decoded) and shown with ``description`` (or
/// encoded); the raw digest is the OpenSSL layer's (package access).
/// Pinning the key rather than the certificate lets a server renew its certificate with the same key.
public struct SPKIPin: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The 32-byte SHA-256 digest of the DER `SubjectPublicKeyInfo`.
    package let sha256: [UInt8]

    /// A pin from a raw 32-byte SHA-256 digest (the OpenSSL layer's, and the tests').
    package init(sha256 digest: some Collection<UInt8>) throws(PinParseError) {
        let bytes = Array(digest)
        guard bytes.count == 32 else { throw .wrongLength(bytes.count) }
        self.sha256 = bytes
    }

    /// Parses `sha256/BASE64` (or curl's `sha256//BASE64`): the one pin parser, for pins files, `pin-check --pin`
    /// and pin-set documents alike.
    ///
    /// A digest whose base64 starts with `/` makes OkHttp's form begin with `sha256//` too; the two are told
    /// apart by length (a SHA-256 digest is always 44 base64 characters), so both forms of every pin parse. The
    /// base64 must be the digest's canonical encoding (no stray low bits in its last character: `…AQF=` is not
    /// `…AQE=`), and nothing may surround the pin (a pins file's fields are split on spaces before this).
    public init(_ text: String) throws(PinParseError) {
        guard text.first.map({ !$0.isWhitespace }) ?? true, text.last.map({ !$0.isWhitespace }) ?? true else {
            throw .surroundingSpace
        }
        guard text.hasPrefix("sha256/") else { throw .wrongPrefix(Self.redactedPreview(text)) }
        var body = text.dropFirst("sha256/".count)
        // curl's form: one more slash, unless that slash is the digest's own first character.
        if body.hasPrefix("/") && body.count != 44 { body = body.dropFirst() }
        guard let data = Data(base64Encoded: String(body)) else { throw .badBase64 }
        try self.init(sha256: data)
        // Decoders ignore the unused low bits of the last character: `…AQF=` decodes as `…AQE=` does. One digest
        // has one text, so that what is signed, reviewed and grepped for is what applies.
        guard Data(sha256).base64EncodedString() == String(body) else { throw .notCanonical }
    }

    /// The pin in its canonical `sha256/BASE64` form.
    public var description: String { "sha256/" + Data(sha256).base64EncodedString() }

    /// Decodes a pin from its `sha256/BASE64` string.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        try self.init(container.decode(String.self))
    }

    /// Encodes the pin as its canonical `sha256/BASE64` string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    private static func redactedPreview(_ text: String) -> String {
        text.count <= 12 ? text : String(text.prefix(12)) + "…"
    }
}

/// Why a pin string was refused.
public enum PinParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The text does not start with `sha256/` (or `sha256//`).
    case wrongPrefix(String)
    /// The part after the prefix is not valid base64.
    case badBase64
    /// The digest is not 32 bytes long (a SHA-1 or certificate hash given by mistake, for example).
    case wrongLength(Int)
    /// The base64 decodes, but is not the digest's canonical encoding: its last character carries low bits that
    /// are not part of the digest (a hand-edited or corrupted pin).
    case notCanonical
    /// Spaces, tabs or line breaks around the pin.
    case surroundingSpace
    /// Where only the canonical text is taken (a pin-set document): the pin (given here) was written in curl's
    /// `sha256//BASE64` form.
    case curlForm(SPKIPin)

    /// What is wrong with the pin text and what a pin looks like.
    public var description: String {
        switch self {
        case .wrongPrefix(let start):
            return "pin \"\(start)\" must start with sha256/ followed by the base64 SHA-256 of the SubjectPublicKeyInfo"
        case .badBase64:
            return "pin is not valid base64 after sha256/ (standard alphabet with = padding, 44 characters)"
        case .wrongLength(let count) where count == 20:
            return "pin digest is 20 bytes, the size of a SHA-1 digest; a pin is the SHA-256 (32 bytes) of the "
                + "SubjectPublicKeyInfo, e.g. from `pin-check`"
        case .wrongLength(let count):
            return "pin digest is \(count) bytes; a SHA-256 SPKI pin is 32 bytes (44 base64 characters ending in =)"
        case .notCanonical:
            return "pin is not canonical base64: its last character before = carries bits that are not part of the "
                + "digest; copy the pin again from pin-check"
        case .surroundingSpace:
            return "pin has a space, tab or line break around it; write sha256/BASE64 alone"
        case .curlForm(let pin):
            return "pin is written in curl's form (sha256//BASE64); write it as sha256/BASE64: \(pin)"
        }
    }
}
