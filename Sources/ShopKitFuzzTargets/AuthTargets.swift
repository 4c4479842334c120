import ShopKitCredentials
import ShopKitOpenSSL

/// The credential layer's parsers: the encrypted token file's header and the keyring item's JSON.
enum AuthTargets {
    /// The header fields the parser reads after its checksum: bytes 0..<116 are checked, 116..<148 hold
    /// the SHA-256 (see docs/token-file-format.md).
    private static let checkedHeaderSize = 116
    private static let headerSize = 148

    /// Input: a token file as read from disk. It is parsed as it is, then once more with its header
    /// checksum made right, so the fuzzer also reaches the checks behind the checksum (KDF id, reserved
    /// byte, scrypt ranges, payload length) instead of stopping at the checksum every time.
    static func tokenFile(_ bytes: [UInt8]) {
        parseTokenFile(bytes)
        guard bytes.count >= headerSize, let checksum = try? SHA256Checksum.digest(Array(bytes[0..<checkedHeaderSize]))
        else { return }
        var fixed = bytes
        fixed.replaceSubrange(checkedHeaderSize..<headerSize, with: checksum)
        parseTokenFile(fixed)
    }

    private static func parseTokenFile(_ bytes: [UInt8]) {
        do {
            let file = try TokenFile.parse(bytes)
            FuzzCheck.require(bytes.count >= headerSize + 16, "a file shorter than header and tag was accepted")
            FuzzCheck.require(file == (try? TokenFile.parse(bytes)), "parsing is not deterministic")
        } catch {
            if error.code != .corrupt { FuzzCheck.require(false, "parse failed with \(error), not corrupt") }
            FuzzCheck.require(!error.description.isEmpty, "an error without a message")
        }
    }

    /// Input: a keyring item's secret (JSON). A body that decodes either yields a credential or a typed error.
    static func keyringItem(_ bytes: [UInt8]) {
        let body: KeyringItemBody
        do { body = try KeyringItemBody.decode(bytes) } catch {
            FuzzCheck.require(isCorrupt(error), "decode failed with \(error), not corrupt")
            return
        }
        do {
            let credential = try body.credential()
            if case .userPresence(let seconds) = credential.policy.access {
                FuzzCheck.require(seconds >= 0, "a negative presence reuse window was accepted")
            }
        } catch {
            FuzzCheck.require(isCorrupt(error), "credential() failed with \(error), not corrupt")
        }
    }

    private static func isCorrupt(_ error: CredentialError) -> Bool {
        error.code == .corrupt
    }
}
