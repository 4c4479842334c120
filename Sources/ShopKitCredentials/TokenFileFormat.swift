import Foundation
import ShopKitAPI
import ShopKitOpenSSL

/// The token file, version 2 (version 1 still read): its binary header and the sealed item set (see
/// docs/token-file-format.md). The header layout is the same in both; version 2 items may carry a `kind`.
///
/// This type only parses, range-checks and serialises bytes; the store supplies the keys.
package struct TokenFile: Equatable {
    static let magic: [UInt8] = Array("SKTF".utf8)
    /// The version written; ``readableVersions`` are read.
    static let version: UInt8 = 2
    static let readableVersions: ClosedRange<UInt8> = 1...2
    static let kdfScrypt: UInt8 = 1
    static let saltSize = 16
    /// Bytes covered by the header checksum (magic … payload length).
    static let checkedHeaderSize = 116
    /// The full header, including its SHA-256 checksum; also the payload's AAD.
    static let headerSize = checkedHeaderSize + SHA256Checksum.size
    /// Bytes of the header that describe the passphrase key (magic … salt); the key wrap's AAD.
    static let kdfPrefixSize = 32
    /// The smallest well-formed file: a header, an empty payload and its tag.
    static let minimumSize = headerSize + AES256GCM.tagSize
    /// Files larger than this are refused before any parsing or crypto.
    static let maximumSize = 16 * 1024 * 1024

    /// The size of a file whose payload is `payloadLength` bytes (GCM's ciphertext is as long as the plaintext).
    static func size(payloadLength: Int) -> Int { headerSize + payloadLength + AES256GCM.tagSize }

    /// Accepted scrypt cost, checked before any derivation (a hostile file must not demand unbounded work).
    static let logNRange: ClosedRange<UInt8> = 10...20
    static let rRange: ClosedRange<UInt32> = 1...32
    static let pRange: ClosedRange<UInt32> = 1...16
    /// At most 256 MiB for scrypt's V array (128·r·N); the default (N=2^17, r=8) needs 128 MiB.
    static let maximumMemory: UInt64 = 256 * 1024 * 1024
    /// At most N·r·p = 2^23 block mixes (8× the default's work).
    static let maximumWork: UInt64 = 1 << 23

    /// This file's format version (in the header, and so in both AADs).
    var formatVersion: UInt8 = TokenFile.version
    var kdf: EncryptedFileStore.ScryptParameters
    var salt: [UInt8]
    var generation: UInt64
    var wrapNonce: [UInt8]
    var wrappedKey: [UInt8]
    var wrapTag: [UInt8]
    var payloadNonce: [UInt8]
    var ciphertext: [UInt8]
    var payloadTag: [UInt8]

    /// Checks scrypt parameters against the accepted ranges, RFC 7914's own bounds (N < 2^(16·r) among them)
    /// and the memory OpenSSL will be allowed; returns why they are refused, or `nil`.
    static func rangeProblem(_ kdf: EncryptedFileStore.ScryptParameters) -> String? {
        guard logNRange.contains(kdf.logN) else { return "scrypt logN \(kdf.logN) outside \(logNRange)" }
        guard rRange.contains(kdf.r) else { return "scrypt r \(kdf.r) outside \(rRange)" }
        guard pRange.contains(kdf.p) else { return "scrypt p \(kdf.p) outside \(pRange)" }
        if let problem = Scrypt.parameterProblem(logN: kdf.logN, r: kdf.r, p: kdf.p) { return problem }
        let n = UInt64(1) << UInt64(kdf.logN)
        if 128 * UInt64(kdf.r) * n > maximumMemory { return "scrypt memory 128·r·N exceeds 256 MiB" }
        if n * UInt64(kdf.r) * UInt64(kdf.p) > maximumWork { return "scrypt work N·r·p exceeds 2^23" }
        return nil
    }

    /// The key wrap's AAD: magic, version, KDF id and parameters, salt.
    var kdfPrefix: [UInt8] {
        var out = Self.magic
        out += [formatVersion, Self.kdfScrypt, kdf.logN, 0]
        out += bigEndian(kdf.r) + bigEndian(kdf.p)
        out += salt
        return out
    }

    /// The header (with its checksum), which is also the payload's AAD.
    func header() throws(OpenSSLError) -> [UInt8] {
        var out = kdfPrefix
        out += bigEndian(generation)
        out += wrapNonce + wrappedKey + wrapTag + payloadNonce
        out += bigEndian(UInt32(ciphertext.count))
        out += try SHA256Checksum.digest(out)
        return out
    }

    /// The whole file.
    func serialized() throws(OpenSSLError) -> [UInt8] {
        try header() + ciphertext + payloadTag
    }

    /// Parses and checks everything that can be checked without a key. Order: size, magic, version, header
    /// checksum, KDF id, reserved byte, scrypt ranges, payload length.
    package static func parse(_ bytes: [UInt8]) throws(CredentialError) -> TokenFile {
        guard bytes.count <= maximumSize else { throw .corrupt("file is larger than 16 MiB") }
        guard bytes.count >= 4, Array(bytes[0..<4]) == magic else {
            throw .corrupt("not a ShopKit token file (bad magic); move it aside or pass another path")
        }
        guard bytes.count >= minimumSize else { throw .corrupt("file is truncated (\(bytes.count) bytes)") }
        guard readableVersions.contains(bytes[4]) else {
            throw .corrupt("unsupported format version \(bytes[4]); this ShopKit reads versions 1 and \(version)")
        }
        let checksum: [UInt8]
        do { checksum = try SHA256Checksum.digest(Array(bytes[0..<checkedHeaderSize])) } catch {
            throw .io("SHA-256 failed: \(error)")
        }
        guard checksum == Array(bytes[checkedHeaderSize..<headerSize]) else {
            throw .corrupt("header checksum mismatch (damaged or edited header)")
        }
        guard bytes[5] == kdfScrypt else { throw .corrupt("unknown KDF id \(bytes[5])") }
        guard bytes[7] == 0 else { throw .corrupt("reserved header byte is not zero") }
        let kdf = EncryptedFileStore.ScryptParameters(
            logN: bytes[6], r: readUInt32(bytes, at: 8), p: readUInt32(bytes, at: 12))
        if let problem = rangeProblem(kdf) { throw .corrupt("hostile or damaged KDF parameters: \(problem)") }
        let length = Int(readUInt32(bytes, at: 112))
        guard bytes.count == size(payloadLength: length) else {
            throw .corrupt("payload length \(length) does not match the file size \(bytes.count) (truncated?)")
        }
        return TokenFile(
            formatVersion: bytes[4],
            kdf: kdf,
            salt: Array(bytes[16..<32]),
            generation: readUInt64(bytes, at: 32),
            wrapNonce: Array(bytes[40..<52]),
            wrappedKey: Array(bytes[52..<84]),
            wrapTag: Array(bytes[84..<100]),
            payloadNonce: Array(bytes[100..<112]),
            ciphertext: Array(bytes[headerSize..<(headerSize + length)]),
            payloadTag: Array(bytes[(headerSize + length)...]))
    }
}

// MARK: - The item set (the payload's plaintext)

/// The decrypted payload: every stored item. JSON with sorted keys (see the format document).
struct TokenItemSet: Codable, Equatable {
    var items: [TokenItem]
}

/// One stored item. Device-bound items keep their tokens in `bound`, sealed again with the device id as AAD.
struct TokenItem: Codable, Equatable {
    var service: String
    var account: String
    /// `clientKey` for a client key item (version 2), absent for tokens (``kindField(_:)``): its type tag, and part
    /// of its name (``key``).
    var kind: String? = nil
    /// `afterFirstUnlock` or `userPresence`.
    var access: String
    /// The reuse window for `userPresence`, else `nil`.
    var reuseSeconds: Int?
    var thisDeviceOnly: Bool
    /// The tokens of an item that is not device-bound.
    var tokens: AuthTokens?
    /// The sealed tokens of a device-bound item.
    var bound: BoundTokens?
    /// A client key item's PEM key, sealed with the data key (``BoundTokens/keyAAD(service:account:deviceID:)``)
    /// so that it is opened straight into a wiped buffer, never decoded into a `String`.
    var sealedKey: BoundTokens? = nil

    var key: CredentialKey {
        CredentialKey(service: service, account: account, kind: kind == "clientKey" ? .clientKey : .tokens)
    }

    /// The `kind` field for items of `kind`.
    static func kindField(_ kind: CredentialKind) -> String? { kind == .clientKey ? "clientKey" : nil }

    var policy: AccessPolicy? {
        switch access {
        case "afterFirstUnlock": return AccessPolicy(access: .afterFirstUnlock, thisDeviceOnly: thisDeviceOnly)
        case "userPresence":
            guard let reuseSeconds else { return nil }
            return AccessPolicy(access: .userPresence(reuseSeconds: reuseSeconds), thisDeviceOnly: thisDeviceOnly)
        default: return nil
        }
    }

    static func fields(of policy: AccessPolicy) -> (access: String, reuseSeconds: Int?) {
        switch policy.access {
        case .afterFirstUnlock: return ("afterFirstUnlock", nil)
        case .userPresence(let seconds): return ("userPresence", seconds)
        }
    }
}

/// AES-256-GCM (data key) over the JSON-encoded tokens; AAD = ``deviceAAD(service:account:deviceID:)``.
struct BoundTokens: Codable, Equatable {
    var nonce: Data
    var ciphertext: Data
    var tag: Data

    /// "SKTF-key-v2" then service, account and the device id (empty unless the item is device-bound), each as a
    /// big-endian u32 length and UTF-8 bytes: a client key item's sealed key.
    static func keyAAD(service: String, account: String, deviceID: String?) -> [UInt8] {
        var out = Array("SKTF-key-v2".utf8)
        for field in [service, account, deviceID ?? ""] {
            let bytes = Array(field.utf8)
            out += bigEndian(UInt32(bytes.count)) + bytes
        }
        return out
    }

    /// "SKTF-device-v1" then service, account and device id, each as a big-endian u32 length and UTF-8 bytes.
    static func deviceAAD(service: String, account: String, deviceID: String) -> [UInt8] {
        var out = Array("SKTF-device-v1".utf8)
        for field in [service, account, deviceID] {
            let bytes = Array(field.utf8)
            out += bigEndian(UInt32(bytes.count)) + bytes
        }
        return out
    }
}

// MARK: - Byte helpers

func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
    withUnsafeBytes(of: value.bigEndian) { Array($0) }
}

func readUInt32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
    bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
}

func readUInt64(_ bytes: [UInt8], at offset: Int) -> UInt64 {
    bytes[offset..<(offset + 8)].reduce(0) { $0 << 8 | UInt64($1) }
}
