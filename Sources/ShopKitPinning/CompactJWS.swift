import Foundation

/// A JWS in compact serialisation (RFC 7515 §7.1), parsed but not verified: `BASE64URL(header) "."
/// BASE64URL(payload) "." BASE64URL(signature)`.
///
/// Parsing already refuses what ShopKit never verifies: any `alg` but `EdDSA` (RFC 8037; so `none` and `HS256`
/// never reach a key), any `crit` extension, a header without `kid`. Header members that carry keys (`jwk`, `jku`,
/// `x5c`, `x5u`) are never read: only the app's own keys verify a document.
package struct CompactJWS: Sendable, Equatable {
    /// The largest document accepted, in bytes.
    package static let maximumLength = 256 * 1024
    /// The header `typ` of a pin-set document (RFC 7515 §4.1.9; `application/` may be left out, case does not
    /// matter): explicit typing, so that no other JWS signed with the same key (a JWT, say) reads as pins.
    package static let type = "shopkit-pins+jws"
    /// The header `typ` of a CT log-list document (``CTLogListDocument``): a pin-set document is never read as a log
    /// list, nor the reverse, though both are signed with the same keys.
    package static let logListType = "shopkit-ct-log-list+jws"

    /// What a JWS is expected to carry, told by its `typ`.
    package enum Kind: Sendable {
        /// A pin-set document (`shopkit-pins+jws`).
        case pinSet
        /// A CT log-list document (`shopkit-ct-log-list+jws`).
        case ctLogList

        /// The `typ` of this kind.
        package var type: String { self == .pinSet ? CompactJWS.type : CompactJWS.logListType }

        /// The error for a JWS whose `typ` (nil: none) is not this kind's.
        func wrongType(_ typ: String?) -> PinSetDocumentError {
            self == .pinSet ? .wrongType(typ) : .wrongLogListType(typ)
        }
    }

    /// The `kid` header: which of the app's keys signed it.
    package let keyID: String
    /// The decoded payload.
    package let payload: [UInt8]
    /// The decoded signature (any length: a truncated one fails verification).
    package let signature: [UInt8]
    /// What the signature covers: `BASE64URL(header) "." BASE64URL(payload)` as ASCII.
    package let signingInput: [UInt8]

    /// Parses `text` (surrounding whitespace, such as a final newline, is ignored).
    ///
    /// - Throws: ``PinSetDocumentError`` for a malformed JWS or header, a refused `alg`, `crit` or missing `kid`.
    package init(parsing text: String, kind: Kind = .pinSet) throws(PinSetDocumentError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.utf8.count <= Self.maximumLength else {
            throw .malformedJWS("larger than \(Self.maximumLength) bytes")
        }
        let parts = trimmed.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw .malformedJWS("\(parts.count) dot-separated parts; a compact JWS has three (header.payload.signature)")
        }
        guard let headerBytes = Base64URL.decode(parts[0]) else { throw .malformedJWS("the header is not base64url") }
        guard let payload = Base64URL.decode(parts[1]) else { throw .malformedJWS("the payload is not base64url") }
        guard let signature = Base64URL.decode(parts[2]) else { throw .malformedJWS("the signature is not base64url") }
        switch JSONDuplicateCheck.scan(headerBytes, maximumDepth: PinSetDocument.maximumDepth) {
        case .unique: break
        case .tooDeep(let limit): throw .nestedTooDeeply(maximumDepth: limit)
        case .duplicate(let name, _):
            throw .malformedHeader("member \(String(reflecting: name)) appears twice (RFC 7515 §5.2)")
        case .malformed: throw .malformedHeader("not JSON")
        }
        let header: [String: Any]
        do {
            guard let object = try JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any] else {
                throw PinSetDocumentError.malformedHeader("not a JSON object")
            }
            header = object
        } catch let error as PinSetDocumentError {
            throw error
        } catch {
            throw .malformedHeader("not JSON")
        }
        guard let alg = header["alg"] as? String else { throw .malformedHeader("no string alg") }
        guard alg == "EdDSA" else { throw .algorithmNotAllowed(alg) }
        if let crit = header["crit"] {
            throw .unsupportedCritical((crit as? [Any])?.map { "\($0)" } ?? ["\(crit)"])
        }
        // RFC 7797's unencoded payload is not supported; a `b64` member, even without `crit`, would make another
        // reader verify other bytes than these (RFC 7797 §6 says to reject it then).
        if header["b64"] != nil { throw .malformedHeader("b64 is not supported (RFC 7797); the payload is base64url") }
        guard let kidValue = header["kid"] else { throw .missingKeyID }
        guard let kid = kidValue as? String, !kid.isEmpty else { throw .malformedHeader("kid is not a non-empty string") }
        let typ = header["typ"] as? String
        // ASCII only, compared by bytes: a non-ASCII letter can lowercase to an ASCII one (the Kelvin sign to `k`).
        guard let typ, typ.utf8.allSatisfy({ $0 < 0x80 }),
            [kind.type, "application/" + kind.type].contains(where: { Array($0.utf8) == Array(typ.lowercased().utf8) })
        else {
            throw kind.wrongType(typ ?? header["typ"].map { "\($0)" })
        }
        guard !signature.isEmpty else { throw .badSignature(keyID: kid) }
        self.keyID = kid
        self.payload = payload
        self.signature = signature
        self.signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
    }

    /// The compact form of `payload` signed by `sign` under `keyID` (header `{"alg":"EdDSA","kid":…,"typ":…}`, the
    /// `typ` of `kind`).
    package static func serialize(
        payload: [UInt8], keyID: String, kind: Kind = .pinSet, sign: ([UInt8]) throws -> [UInt8]
    ) rethrows -> String {
        let header = ["alg": "EdDSA", "kid": keyID, "typ": kind.type]
        let headerJSON = (try? JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])) ?? Data()
        let input = Base64URL.encode(Array(headerJSON)) + "." + Base64URL.encode(payload)
        return input + "." + Base64URL.encode(try sign(Array(input.utf8)))
    }
}

/// Base64url without padding (RFC 7515 §2), in its one canonical form.
package enum Base64URL {
    /// The encoding of `bytes`.
    package static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of `text`, or nil unless it is canonical base64url without padding (so that one document has
    /// exactly one encoding: no padding, no whitespace, no stray low bits).
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        guard text.utf8.count % 4 != 1,
            text.utf8.allSatisfy({ byte in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: "_")
            })
        else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: standard) else { return nil }
        let bytes = Array(data)
        guard encode(bytes) == String(text) else { return nil }
        return bytes
    }
}
