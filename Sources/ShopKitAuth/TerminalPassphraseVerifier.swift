import Dispatch
import Foundation
import ShopKitOpenSSL

/// Proves presence by asking for a passphrase on the controlling terminal, without echo.
///
/// Design: the typed passphrase is checked either against a ``Passphrase`` the program already holds (typically
/// the token file's own passphrase, so the user types what they already know) or against a stored
/// ``PassphraseHash`` (scrypt), so a separate presence passphrase can be configured without keeping it in memory.
/// The terminal is opened directly (`/dev/tty` by default), never standard input, so piped input cannot answer
/// the prompt. Echo is turned off with termios and restored afterwards, pending input is flushed first.
///
/// The blocking terminal read runs on a dedicated dispatch queue, never on the cooperative pool. It cannot be
/// cancelled: a prompt nobody answers keeps waiting.
///
/// - Warning: This proves that someone at the terminal knows the passphrase, not who they are; anything that can
///   write to the user's terminal can also answer it.
public struct TerminalPassphraseVerifier: PresenceVerifier {
    /// What the typed passphrase must match.
    public enum Check: Sendable {
        /// The same bytes as this passphrase (compared in constant time).
        case passphrase(Passphrase)
        /// A stored scrypt hash.
        case hash(PassphraseHash)
    }

    /// What the typed passphrase must match.
    public let check: Check
    /// The terminal device; `/dev/tty` is the controlling terminal.
    public let terminalPath: String
    /// How many tries before the read is denied.
    public let attempts: Int

    /// A verifier reading `terminalPath`, allowing `attempts` tries.
    public init(check: Check, terminalPath: String = "/dev/tty", attempts: Int = 3) {
        self.check = check
        self.terminalPath = terminalPath
        self.attempts = max(1, attempts)
    }

    /// Whether the terminal can be opened and is a terminal (false under cron, CI, systemd, or with no tty).
    public var canVerify: Bool {
        let fd = open(terminalPath, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return isatty(fd) == 1
    }

    /// Prompts (showing `reason`) and reads a passphrase without echo; throws `.accessDenied` after the last
    /// wrong try or when the terminal cannot be used.
    public func verifyPresence(reason: String) async throws(CredentialError) {
        try await TerminalIO.offPool { () throws(CredentialError) in try self.promptBlocking(reason) }
    }

    private func promptBlocking(_ reason: String) throws(CredentialError) {
        do {
            try TerminalIO.withSilentTerminal(terminalPath) { (fd) throws(CredentialError) in
                for attempt in 1...attempts {
                    TerminalIO.writeAll(fd, "ShopKit wants to \(reason).\nPassphrase to confirm it is you: ")
                    guard let typed = TerminalIO.readLine(fd) else { throw .accessDenied("no passphrase was entered") }
                    TerminalIO.writeAll(fd, "\n")
                    if try matches(typed) { return }
                    if attempt < attempts { TerminalIO.writeAll(fd, "Wrong passphrase, try again.\n") }
                }
                throw .accessDenied("the passphrase did not match after \(attempts) tries")
            }
        } catch {
            if case .io(let why) = error { throw .accessDenied(why) }
            throw error
        }
    }

    private func matches(_ typed: Passphrase) throws(CredentialError) -> Bool {
        switch check {
        case .passphrase(let expected):
            let a = expected.withBytes { SecureBytes(copying: $0) }
            let b = typed.withBytes { SecureBytes(copying: $0) }
            return a.constantTimeEquals(b)
        case .hash(let hash):
            return try hash.matchesBlocking(typed)
        }
    }
}

/// A scrypt hash of a passphrase, storable as text: `scrypt$logN$r$p$SALT$HASH` (base64).
///
/// For ``TerminalPassphraseVerifier`` when the presence passphrase is not the file passphrase.
public struct PassphraseHash: Sendable, Hashable, CustomStringConvertible {
    /// The cost parameters (the same accepted ranges as the token file).
    public let parameters: EncryptedFileStore.ScryptParameters
    /// The random salt.
    public let salt: [UInt8]
    /// The 32-byte scrypt output.
    public let hash: [UInt8]

    /// Hashes `passphrase` with a fresh salt, on a background queue (scrypt is slow by design).
    public static func make(_ passphrase: Passphrase, parameters: EncryptedFileStore.ScryptParameters = .default)
        async throws(CredentialError) -> PassphraseHash
    {
        if let problem = TokenFile.rangeProblem(parameters) { throw .io("scrypt parameters out of range: \(problem)") }
        let result: Result<PassphraseHash, CredentialError> = await withCheckedContinuation { continuation in
            DispatchQueue(label: "ShopKitAuth.PassphraseHash").async {
                continuation.resume(returning: Result { () throws(CredentialError) in
                    let salt: [UInt8]
                    do { salt = try SecureRandom.bytes(count: 16) } catch { throw .io("\(error)") }
                    let digest = try derive(passphrase, parameters: parameters, salt: salt)
                    return PassphraseHash(parameters: parameters, salt: salt, hash: digest)
                })
            }
        }
        return try result.get()
    }

    /// Parses the text form, range-checking the parameters; throws `.corrupt` when it is malformed.
    public init(encoded: String) throws(CredentialError) {
        let parts = encoded.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 6, parts[0] == "scrypt", let logN = UInt8(parts[1]), let r = UInt32(parts[2]),
            let p = UInt32(parts[3]), let salt = Data(base64Encoded: parts[4]), let hash = Data(base64Encoded: parts[5]),
            salt.count >= 16, hash.count == 32
        else { throw .corrupt("not a ShopKit passphrase hash (expected scrypt$logN$r$p$SALT$HASH)") }
        let parameters = EncryptedFileStore.ScryptParameters(logN: logN, r: r, p: p)
        if let problem = TokenFile.rangeProblem(parameters) { throw .corrupt("passphrase hash: \(problem)") }
        self.init(parameters: parameters, salt: Array(salt), hash: Array(hash))
    }

    private init(parameters: EncryptedFileStore.ScryptParameters, salt: [UInt8], hash: [UInt8]) {
        self.parameters = parameters
        self.salt = salt
        self.hash = hash
    }

    /// The text form, `scrypt$logN$r$p$SALT$HASH`.
    public var encoded: String {
        "scrypt$\(parameters.logN)$\(parameters.r)$\(parameters.p)$\(Data(salt).base64EncodedString())$"
            + Data(hash).base64EncodedString()
    }

    /// Redacted: the hash is not a secret, but it is an offline-guessing target, so it stays out of logs.
    public var description: String { "PassphraseHash(scrypt, logN: \(parameters.logN), <redacted>)" }

    /// Whether `passphrase` hashes to this hash. Blocking (runs scrypt): call off the cooperative pool.
    func matchesBlocking(_ passphrase: Passphrase) throws(CredentialError) -> Bool {
        let candidate = try Self.derive(passphrase, parameters: parameters, salt: salt)
        return SecureBytes(copying: candidate).constantTimeEquals(SecureBytes(copying: hash))
    }

    private static func derive(_ passphrase: Passphrase, parameters: EncryptedFileStore.ScryptParameters, salt: [UInt8])
        throws(CredentialError) -> [UInt8]
    {
        let result = passphrase.withBytes { bytes in
            Result { () throws(OpenSSLError) in
                try Scrypt.deriveKey(password: UnsafeRawBufferPointer(bytes), salt: salt, logN: parameters.logN,
                                     r: parameters.r, p: parameters.p, length: 32)
            }
        }
        do { return try result.get().withUnsafeBytes { Array($0) } } catch { throw .io("scrypt failed: \(error)") }
    }
}
