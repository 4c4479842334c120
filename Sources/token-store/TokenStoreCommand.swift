import ArgumentParser
import Foundation
import Logging
import NIOConcurrencyHelpers
import ShopKitAPI
import ShopKitCredentials
import ShopKitCore

/// Gets, sets and deletes a token in the keyring or the encrypted file from the shell.
///
/// Exit codes (``Exit``): 0 ok, 1 not found, 2 locked, 3 unavailable, 4 wrong passphrase, 5 corrupt file,
/// 6 access denied, 7 insecure permissions, 8 other I/O, 9 passphrase refused, 10 output not written,
/// 11 outcome unknown, 12 unsafe token file, 64 usage error.
struct TokenStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token-store",
        abstract: "Get, set or delete a token in the keyring or the encrypted token file.",
        discussion: """
            The token for `set` is read from standard input (one line); `get` prints it to standard output.
            get, set and delete say on standard error which backend they use (a line that cannot be written there
            is dropped; the token is still printed).
            The file passphrase is read from the terminal without echo, or from --passphrase-fd N (all of the
            descriptor's input, one trailing newline dropped, at most 4096 bytes). A new file needs a passphrase
            of at least 8 bytes; on a terminal it is asked twice.
            Exit codes: 0 ok, 1 not found, 2 locked, 3 unavailable (nothing was done), 4 wrong passphrase,
            5 corrupt file, 6 access denied, 7 insecure permissions, 8 other I/O error, 9 passphrase refused,
            10 standard output could not be written, 11 outcome unknown (a keyring set or delete timed
            out after it started: it may or may not have been made; read back or repeat it),
            12 unsafe token file (a symbolic link, a second name or not a regular file: nothing was read or
            written), 64 usage error.
            """,
        version: ShopKitVersion.current,
        subcommands: [Get.self, Set.self, Delete.self, Probe.self])
}

/// Options every subcommand takes.
struct StoreOptions: ParsableArguments {
    @Option(help: "The service the token belongs to, e.g. com.example.shop.")
    var service: String?

    @Option(help: "The account within the service.")
    var account: String?

    @Option(help: ArgumentHelp(
        "auto (the default: the keyring if a Secret Service answers, else the file unless a keyring was used before), "
            + "keyring, or file.", valueName: "backend"))
    var backend: BackendName?

    @Option(help: "The encrypted token file (default $XDG_DATA_HOME/shopkit/tokens.skt); implies --backend file.")
    var file: String?

    @Option(name: .customLong("passphrase-fd"), help: "Read the file passphrase from this file descriptor.")
    var passphraseFD: Int32?

    @Option(help: "Seconds to wait for the Secret Service before reporting it unavailable.")
    var timeout: Double = 5

    @Flag(help: "Log which backend was chosen and why (to standard error).")
    var verbose = false

    enum BackendName: String, ExpressibleByArgument, CaseIterable {
        case auto, keyring, file
    }

    func validate() throws {
        if file != nil, let backend, backend != .file {
            throw ValidationError("--file names the token file and implies --backend file; drop --backend "
                + "\(backend.rawValue) or --file")
        }
        guard timeout.isFinite, timeout > 0, timeout <= 3600 else {
            throw ValidationError("--timeout must be a number of seconds between 0 and 3600")
        }
        if let passphraseFD, passphraseFD < 0 {
            throw ValidationError("--passphrase-fd must be an open file descriptor number (0 or more)")
        }
    }

    /// The key, or a usage error when --service or --account is missing or empty.
    func key() throws -> CredentialKey {
        guard let service, !service.isEmpty else { throw ValidationError("--service is required") }
        guard let account, !account.isEmpty else { throw ValidationError("--account is required") }
        return CredentialKey(service: service, account: account)
    }

    var fileConfiguration: EncryptedFileStore.Configuration {
        EncryptedFileStore.Configuration(url: file.map { URL(fileURLWithPath: $0) } ?? EncryptedFileStore.defaultURL())
    }

    /// The backend asked for: `--backend`, or `file` when only `--file` is given, else `auto`.
    var chosenBackend: BackendName { backend ?? (file != nil ? .file : .auto) }

    var preference: BackendPreference {
        switch chosenBackend {
        case .auto: return .auto
        case .keyring: return .keyring
        case .file: return .file(fileConfiguration)
        }
    }

    /// The keyring store with the requested timeout.
    var keyring: KeyringStore {
        KeyringStore(timeout: .milliseconds(Int64((max(timeout, 0.001) * 1000).rounded())))
    }

    /// The vault over the store the options select, with the presence check token-store can offer for it, and
    /// says on standard error which backend it is; the passphrase is asked only when the file is chosen, twice on
    /// a terminal when `creating` and the file does not exist yet. Unless `creating`, an `auto` fallback to a file
    /// that does not exist is unavailable (get and delete cannot tell "nothing stored" from "out of reach").
    ///
    /// For the file, `user-presence` items are guarded by asking the file passphrase again on the controlling
    /// terminal (``TerminalPassphraseVerifier``), which fails closed where there is no terminal. For the keyring
    /// there is no presence check: token-store knows no secret of its own to ask for.
    func vault(creating: Bool = false) async throws -> CredentialVault {
        let fd = passphraseFD
        let asked = AskedPassphrase()
        var logger = Logger(label: "token-store")
        logger.logLevel = verbose ? .info : .critical
        let choice = try await Exit.map { () throws(CredentialError) in
            try await BackendSelection.choose(
                preference, keyring: keyring, fileConfiguration: fileConfiguration, requireFileOnFallback: !creating,
                passphrase: { (request) throws(CredentialError) -> Passphrase in
                    let passphrase = try await PassphraseInput.read(fd: fd, request: request, creating: creating)
                    asked.set(passphrase)
                    return passphrase
                },
                logger: logger)
        }
        Output.diagnostic("token-store: \(choice.summary)\n")
        let verifier = asked.value.map { TerminalPassphraseVerifier(check: .passphrase($0)) }
        return CredentialVault(backend: choice.backend, presenceVerifier: verifier, logger: logger)
    }
}

/// The file passphrase the backend selection asked for, kept for the presence check.
final class AskedPassphrase: Sendable {
    private let passphrase = NIOLockedValueBox<Passphrase?>(nil)

    func set(_ passphrase: Passphrase) { self.passphrase.withLockedValue { $0 = passphrase } }
    var value: Passphrase? { passphrase.withLockedValue { $0 } }
}

/// Why `user-presence` cannot work for a store, or `nil` when it can.
enum PresenceSupport {
    static let keyring = "token-store has no presence check for keyring items: it knows no secret of its own to "
        + "ask for (the keyring's unlock is the only gate), so it would never read such an item back; use "
        + "--policy after-first-unlock, or --backend file (which asks the file passphrase again on the terminal)"
    static let noTerminal = "user-presence asks the file passphrase again on the terminal (/dev/tty) at every "
        + "read, and there is no terminal here; run token-store from a terminal, or use --policy after-first-unlock"

    /// The reason `vault` cannot store or read `user-presence` items here.
    static func problem(_ vault: CredentialVault) -> String? {
        if vault.backend is KeyringStore { return keyring }
        return TerminalPassphraseVerifier.terminalIsAvailable() ? nil : noTerminal
    }
}

extension TokenStoreCommand {
    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the stored access token.")

        @OptionGroup var options: StoreOptions

        @Flag(help: "Print all tokens as JSON (accessToken, refreshToken, expiresAt in ISO 8601).")
        var json = false

        @Flag(help: ArgumentHelp(
            "Print the client key item of this service and account (or a token item holding a private key): "
                + "only after yes is typed on the terminal."))
        var exportPrivateKey = false

        func run() async throws {
            let key = try options.key()
            let vault = try await options.vault()
            let tokens = try await Exit.map { () throws(CredentialError) -> AuthTokens? in
                do throws(CredentialError) {
                    // --export-private-key: the client key item of that name (its own kind), else the token item.
                    if exportPrivateKey, let item = try await vault.clientKeyItem(key) { return item }
                    return try await vault.read(key)
                } catch where error.code == .accessDenied {
                    // A user-presence item that cannot be checked here: fail closed, saying why.
                    let why = error.reason ?? error.description
                    throw .accessDenied(PresenceSupport.problem(vault).map { "\(why); \($0)" } ?? why)
                }
            }
            guard let tokens else { throw Exit(.notFound, "no token stored for \(key)") }
            if PrivateKeyItem.holdsPrivateKey(tokens) {
                try await confirmExport(exportPrivateKey ? key.of(.clientKey) : key)
            }
            if json {
                let encoder = JSONEncoder()
                encoder.dateEncodingStrategy = .iso8601
                encoder.outputFormatting = [.sortedKeys]
                var data = try encoder.encode(tokens)
                data.append(0x0A)
                try Output.standardOutput(Array(data))
            } else {
                try Output.standardOutput(tokens.accessToken + "\n")
            }
        }
    }
}

extension TokenStoreCommand.Get {
    /// An item holding a private key is printed only with `--export-private-key` and `yes` typed on the terminal.
    func confirmExport(_ key: CredentialKey) async throws(Exit) {
        guard exportPrivateKey else {
            throw Exit(.accessDenied, "\(key) holds a private key (a client certificate's), which get never prints "
                + "by default; to print it, add --export-private-key and confirm on the terminal")
        }
        let confirmed: Bool
        do throws(CredentialError) {
            confirmed = try await TerminalConfirmation.ask(
                "token-store: \(key) holds a private key. Type yes to print it: ")
        } catch {
            throw Exit(.accessDenied, "\(key) holds a private key, and printing it must be confirmed on a terminal: "
                + "there is none here (\(error))")
        }
        guard confirmed else { throw Exit(.accessDenied, "the private key of \(key) was not printed: yes was not typed") }
    }
}

extension TokenStoreCommand {
    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store the token read from standard input (one line).")

        @OptionGroup var options: StoreOptions

        @Option(help: "after-first-unlock, or user-presence[:SECONDS] (reuse window, default 0).")
        var policy: PolicyArgument = PolicyArgument(access: .afterFirstUnlock)

        @Flag(help: "Bind the token to this machine.")
        var thisDeviceOnly = false

        @Flag(help: "Read one JSON object (accessToken, refreshToken?, expiresAt? in ISO 8601) instead of a token.")
        var json = false

        func run() async throws {
            let key = try options.key()
            let line = try await StandardInput.readOneLine()
            let tokens: AuthTokens
            if json {
                let decoder = JSONDecoder()
                decoder.dateDecodingStrategy = .iso8601
                guard let decoded = try? decoder.decode(AuthTokens.self, from: Data(line.utf8)),
                    !decoded.accessToken.isEmpty
                else { throw ValidationError("standard input is not a JSON object with a non-empty accessToken") }
                tokens = decoded
            } else {
                tokens = AuthTokens(accessToken: line)
            }
            let accessPolicy = AccessPolicy(access: policy.access, thisDeviceOnly: thisDeviceOnly)
            let vault = try await options.vault(creating: true)
            try await Exit.map { () throws(CredentialError) in
                if case .userPresence = accessPolicy.access, let problem = PresenceSupport.problem(vault) {
                    throw .policyUnsupported(problem)
                }
                try await vault.write(tokens, for: key, policy: accessPolicy)
            }
        }

        func validate() throws {
            if options.passphraseFD == 0 {
                throw ValidationError("--passphrase-fd 0 is standard input, which carries the token for set; "
                    + "give the passphrase on another descriptor, e.g. --passphrase-fd 3 3<passphrase-file")
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete the stored token (succeeds when absent, but not when auto finds neither keyring nor file).")

        @OptionGroup var options: StoreOptions

        func run() async throws {
            let key = try options.key()
            let vault = try await options.vault()
            try await Exit.map { () throws(CredentialError) in
                try await vault.delete(key)
            }
        }
    }

    struct Probe: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print which backend would be used, the keyring's state and what the store can do, never prompting.",
            discussion: "Exits 0 when the keyring answers unlocked, 2 when it is locked, 3 when there is none or it is failing.")

        @OptionGroup var options: StoreOptions

        func run() async throws {
            let keyring = options.keyring
            let probe = await keyring.probe()
            let marker = await BackendSelection.existingKeyringMarker(for: options.fileConfiguration.url)
            let selected: SelectedBackend?
            let backend: String
            do throws(CredentialError) {
                selected = try BackendSelection.decide(options.preference, probe: probe, keyringMarker: marker)
                backend = selected?.rawValue ?? "none"
            } catch {
                selected = nil
                backend = "none (\(error))"
            }
            let state: String
            switch probe {
            case .available(locked: false): state = "available, unlocked"
            case .available(locked: true): state = "available, locked"
            case .unavailable(let why): state = "unavailable: \(why)"
            case .failing(let why): state = "failing: \(why)"
            }
            let canBind = selected == .file ? EncryptedFileStore.machineID() != nil : keyring.canBindToDevice
            let presence: String
            if selected == .file {
                presence = TerminalPassphraseVerifier.terminalIsAvailable()
                    ? "available (the file passphrase is asked again on the terminal)"
                    : "unavailable (no terminal): user-presence items cannot be stored or read here"
            } else {
                presence = "unavailable for keyring items in token-store"
            }
            let binding = canBind ? "available (machine id readable)" : "unavailable (no machine id)"
            let unlock = keyring.allowUnlockPrompt ? "allowed" : "not allowed (never prompts)"
            let lines: [String] = [
                "backend: \(backend)", "keyring: \(state)", "device binding: \(binding)", "unlock prompt: \(unlock)",
                "presence check: \(presence)",
            ]
            try Output.standardOutput(lines.joined(separator: "\n") + "\n")
            switch probe {
            case .available(locked: false): return
            case .available(locked: true): throw ExitCode(Exit.Code.locked.rawValue)
            case .unavailable, .failing: throw ExitCode(Exit.Code.unavailable.rawValue)
            }
        }
    }
}

/// `after-first-unlock` or `user-presence[:SECONDS]`.
struct PolicyArgument: ExpressibleByArgument {
    var access: AccessPolicy.Access

    init(access: AccessPolicy.Access) { self.access = access }

    init?(argument: String) {
        if argument == "after-first-unlock" {
            access = .afterFirstUnlock
        } else if argument == "user-presence" {
            access = .userPresence(reuseSeconds: 0)
        } else if argument.hasPrefix("user-presence:"), let seconds = Int(argument.dropFirst("user-presence:".count)),
            seconds >= 0
        {
            access = .userPresence(reuseSeconds: seconds)
        } else {
            return nil
        }
    }
}
