import ShopKitCredentials

/// A failure with its documented exit code; the message never holds a token or a passphrase.
struct Exit: Error {
    /// The documented exit codes.
    enum Code: Int32 {
        case ok = 0
        case notFound = 1
        case locked = 2
        case unavailable = 3
        case wrongPassphrase = 4
        case corrupt = 5
        case accessDenied = 6
        case insecurePermissions = 7
        case io = 8
        /// A passphrase was refused: too short (under 8 bytes) or empty for a new file, the two typed differ, or
        /// it is longer than 4096 bytes.
        case passphraseRejected = 9
        /// Standard output could not be written (a full disk, a closed pipe, `/dev/full`). Standard error that
        /// cannot be written never changes the result or the exit code (``Output/diagnostic(_:)``).
        case output = 10
        /// A keyring change (set or delete) was cut off by its timeout after it had started: it may or may not
        /// have been made. Unlike ``unavailable`` (nothing was done), read back or repeat it.
        case outcomeUnknown = 11
        /// The token file is a symbolic link, has a second name (a hard link) or is not a regular file: a security
        /// refusal (someone may be redirecting the store), unlike ``io``. Nothing was read or written.
        case unsafeFile = 12
        case usage = 64
    }

    let code: Code
    let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The exit code for a store failure (a wrong device and an unsupported policy are access refusals).
    init(_ error: CredentialError) {
        let code: Code
        switch error.code {
        case .locked: code = .locked
        case .unavailable: code = .unavailable
        case .outcomeUnknown: code = .outcomeUnknown
        case .wrongPassphrase: code = .wrongPassphrase
        case .corrupt: code = .corrupt
        case .accessDenied, .wrongDevice, .policyUnsupported: code = .accessDenied
        case .insecurePermissions: code = .insecurePermissions
        case .unsafeFile: code = .unsafeFile
        case .io, .tooLarge, .invalidConfiguration: code = .io
        case .passphraseRejected: code = .passphraseRejected
        case .passphraseProviderFailed: code = .io
        default: code = .io  // a kind added later: a store failure without an exit code of its own
        }
        self.init(code, error.description)
    }

    /// Runs `body`, turning a store failure into its exit code.
    static func map<T>(_ body: () async throws(CredentialError) -> T) async throws(Exit) -> T {
        do throws(CredentialError) {
            return try await body()
        } catch {
            throw Exit(error)
        }
    }
}
