import Foundation
import Logging

/// Which credential backend to use: chosen from what answers (`auto`) or forced.
public enum BackendPreference: Sendable {
    /// The keyring when a Secret Service answers; the encrypted file only when none does and no keyring was ever
    /// used for these tokens (see ``BackendSelection``).
    case auto
    /// The keyring, or an error when it is locked or absent.
    case keyring
    /// The encrypted file with this configuration, without asking the keyring.
    case file(EncryptedFileStore.Configuration)
}

/// The backend a selection settled on.
public enum SelectedBackend: String, Sendable, Equatable {
    /// The Secret Service keyring.
    case keyring
    /// The encrypted token file.
    case file
}

/// What the passphrase is asked for: opening the token file that exists, or one that does not exist yet and
/// would be created by a write (ask twice on a terminal; the new-file length rule applies).
public enum PassphraseRequest: Sendable, Equatable {
    /// The file at this location exists.
    case existingFile(URL)
    /// There is no file at this location yet.
    case newFile(URL)
}

/// The store a selection built, and how it got there.
public struct BackendChoice: Sendable {
    /// The store.
    public let backend: any CredentialBackend
    /// Which backend it is.
    public let selected: SelectedBackend
    /// The file's location when the file was chosen.
    public let fileURL: URL?
    /// When `.auto` fell back to the file because no Secret Service answered: the probe's reason.
    public let fallbackReason: String?

    /// One line for the user saying which backend is used and why, e.g. `backend: keyring` or
    /// `backend: file /home/u/.local/share/shopkit/tokens.skt (no keyring: …)`.
    public var summary: String {
        guard selected == .file, let fileURL else { return "backend: keyring" }
        return "backend: file \(fileURL.path) (" + (fallbackReason.map { "no keyring: \($0)" } ?? "chosen explicitly") + ")"
    }
}

/// Picks the default credential backend.
///
/// The rules: a forced choice is honoured; otherwise the
/// keyring is used whenever a Secret Service answers, and the encrypted file only when there is none (no session
/// bus, or nothing owns the Secret Service name) **and no keyring was ever used for these tokens**. A keyring that
/// is there but locked (with prompting not allowed) or failing (a D-Bus error, no answer in time) is an error,
/// never a silent downgrade to the file: the file would then hold tokens the user expects in the keyring, and a
/// second copy would outlive a sign-out in the keyring.
///
/// "Used" is recorded by a marker file keyed to the user, not to one environment (`userKeyringMarkerURL()`:
/// `~/.local/share/shopkit/keyring-uid-<uid>` in the home the password database gives, never `$HOME` or
/// `$XDG_DATA_HOME`), and beside the token file as earlier versions did (`keyringMarkerURL(for:)`:
/// `tokens.skt.keyring`), both written (and `fsync`ed) the first time `.auto` or `.keyring` selects an answering
/// keyring. Once either exists, a keyring that does not answer (its daemon gone, a non-activatable Secret Service
/// down, no or a dead bus address under ssh, cron, `sudo -u` or a systemd unit, whatever their `XDG_DATA_HOME`) is
/// ``CredentialError/unavailable(_:)`` for `.auto` too. Delete the markers only when you stop using the keyring
/// for good.
public enum BackendSelection {
    /// Decides from a probe result alone (pure; the rules of the type's overview). Package access: the rules are
    /// documented on the type, and `defaultStore` and `choose` apply them; the tests check them through this.
    ///
    /// - Parameters:
    ///   - preference: `.auto`, or a forced backend (`.file` wins whatever the probe says).
    ///   - probe: what ``KeyringStore/probe()`` answered; `nil` when the keyring was not probed.
    ///   - unlockPromptAllowed: whether a locked keyring may ask the user to unlock it; when `false`, a locked
    ///     keyring is an error rather than a prompt.
    ///   - keyringMarker: the marker file when it exists (a keyring was used for these tokens).
    /// - Returns: The backend to use.
    /// - Throws: ``CredentialError/locked(_:)`` for a locked keyring without prompting,
    ///   ``CredentialError/unavailable(_:)`` for a failing keyring (unless the file is forced), when `.keyring`
    ///   is forced and none answers, and for `.auto` when none answers but the marker says one was used.
    package static func decide(
        _ preference: BackendPreference, probe: KeyringProbe?, unlockPromptAllowed: Bool = false,
        keyringMarker: URL? = nil
    ) throws(CredentialError) -> SelectedBackend {
        switch (preference, probe) {
        case (.file, _):
            return .file
        case (_, .available(locked: true)?) where !unlockPromptAllowed:
            throw .locked("the Secret Service answered but its default collection is locked; unlock the keyring "
                + "(or allow the unlock prompt), or choose the file backend explicitly")
        case (_, .available?):
            return .keyring
        case (_, .failing(let why)?):
            throw .unavailable("a Secret Service is on the session bus but failing (\(why)); not falling back to "
                + "the token file: fix or restart the keyring, or choose the file backend explicitly")
        case (.keyring, .unavailable(let why)?):
            throw .unavailable(why)
        case (.keyring, nil):
            throw .unavailable("the keyring was not probed")
        case (.auto, .unavailable(let why)?) where keyringMarker != nil:
            throw .unavailable("\(why); these tokens were kept in the keyring before (\(keyringMarker!.path) says "
                + "so), so not falling back to the token file: run where the keyring is reachable (start it, or set "
                + "DBUS_SESSION_BUS_ADDRESS), or choose the file backend explicitly (delete that marker only if "
                + "you stopped using the keyring for good)")
        case (.auto, .unavailable?), (.auto, nil):
            return .file
        }
    }

    /// The marker that records that a keyring was used for the tokens that would otherwise go to the file at
    /// `fileURL`: `<file>.keyring` beside it (e.g. `~/.local/share/shopkit/tokens.skt.keyring`).
    package static func keyringMarkerURL(for fileURL: URL) -> URL {
        URL(fileURLWithPath: fileURL.standardizedFileURL.path + ".keyring")
    }

    /// Builds the default store: probes the keyring (unless the file is forced), decides, logs the choice, and
    /// asks for the file passphrase only when the file is chosen.
    ///
    /// - Parameters:
    ///   - preference: `.auto`, or a forced backend.
    ///   - keyring: the keyring store to probe and return (its timeout bounds the probe).
    ///   - fileConfiguration: where the file lives when `.auto` picks it (and where the keyring marker lives).
    ///   - passphrase: asked only when the file is chosen.
    ///   - logger: logs the backend chosen and why (info), and a selection that fails (error).
    /// - Returns: The keyring store or the opened encrypted file store.
    /// - Throws: ``CredentialError/locked(_:)`` or ``CredentialError/unavailable(_:)`` by the rules of the
    ///   type's overview, and whatever the passphrase provider or opening the file throws.
    /// - Warning: The passphrase provider must read from the terminal or a descriptor the user controls, never
    ///   argv or the environment.
    public static func defaultStore(
        _ preference: BackendPreference = .auto,
        keyring: KeyringStore = KeyringStore(),
        fileConfiguration: EncryptedFileStore.Configuration = EncryptedFileStore.Configuration(),
        passphrase: @Sendable () async throws(CredentialError) -> Passphrase,
        logger: Logger = Logger(label: "ShopKitCredentials.BackendSelection")
    ) async throws(CredentialError) -> any CredentialBackend {
        try await choose(
            preference, keyring: keyring, fileConfiguration: fileConfiguration,
            passphrase: { (_) throws(CredentialError) -> Passphrase in try await passphrase() }, logger: logger
        ).backend
    }

    /// `defaultStore(_:keyring:fileConfiguration:passphrase:logger:)` that also says what it chose and why, and
    /// tells the passphrase provider whether the file exists yet (so a new file's passphrase can be asked twice).
    ///
    /// - Parameters:
    ///   - preference: `.auto`, or a forced backend.
    ///   - keyring: the keyring store to probe and return (its timeout bounds the probe).
    ///   - fileConfiguration: where the file lives when `.auto` picks it (and where the keyring marker lives).
    ///   - requireFileOnFallback: for a read or a delete. When `.auto` falls back to the file and there is no
    ///     file, throw ``CredentialError/unavailable(_:)`` (before asking the passphrase) instead of returning a
    ///     store that would say "no token" or report a sign-out as done: the token may be in a keyring that
    ///     cannot be reached from here (ssh, cron, `sudo -u`, a systemd unit).
    ///   - passphrase: asked only when the file is chosen, with a ``PassphraseRequest`` that says whether the
    ///     file exists yet.
    ///   - logger: logs the backend chosen and why (info), and a selection that fails (error).
    /// - Returns: The store, which backend it is, the file's location and the reason for a fallback.
    /// - Throws: ``CredentialError/locked(_:)`` or ``CredentialError/unavailable(_:)`` by the rules of the
    ///   type's overview, and whatever the passphrase provider or opening the file throws.
    /// - Warning: The passphrase provider must read from the terminal or a descriptor the user controls, never
    ///   argv or the environment.
    public static func choose(
        _ preference: BackendPreference = .auto,
        keyring: KeyringStore = KeyringStore(),
        fileConfiguration: EncryptedFileStore.Configuration = EncryptedFileStore.Configuration(),
        requireFileOnFallback: Bool = false,
        passphrase: @Sendable (PassphraseRequest) async throws(CredentialError) -> Passphrase,
        logger: Logger = Logger(label: "ShopKitCredentials.BackendSelection")
    ) async throws(CredentialError) -> BackendChoice {
        try await choose(
            preference, keyring: keyring, fileConfiguration: fileConfiguration,
            requireFileOnFallback: requireFileOnFallback, userMarker: userKeyringMarkerURL(), passphrase: passphrase,
            logger: logger)
    }

    /// `choose(_:keyring:fileConfiguration:requireFileOnFallback:passphrase:logger:)` with the user's keyring
    /// marker injected (`userKeyringMarkerURL()` in production; `nil` for none): tests keep it in a temporary
    /// directory.
    package static func choose(
        _ preference: BackendPreference = .auto,
        keyring: KeyringStore = KeyringStore(),
        fileConfiguration: EncryptedFileStore.Configuration = EncryptedFileStore.Configuration(),
        requireFileOnFallback: Bool = false,
        userMarker: URL?,
        passphrase: @Sendable (PassphraseRequest) async throws(CredentialError) -> Passphrase,
        logger: Logger = Logger(label: "ShopKitCredentials.BackendSelection")
    ) async throws(CredentialError) -> BackendChoice {
        var probe: KeyringProbe?
        if case .file = preference {
            probe = nil
        } else {
            probe = await keyring.probe()
        }
        return try await makeChoice(
            preference, probe: probe, keyring: keyring, fileConfiguration: fileConfiguration,
            requireFileOnFallback: requireFileOnFallback, userMarker: userMarker, passphrase: passphrase,
            logger: logger)
    }

    /// Carries out the decision for a given probe result (tests inject the probe).
    static func makeStore(
        _ preference: BackendPreference, probe: KeyringProbe?, keyring: KeyringStore,
        fileConfiguration: EncryptedFileStore.Configuration, userMarker: URL? = userKeyringMarkerURL(),
        passphrase: @Sendable () async throws(CredentialError) -> Passphrase,
        logger: Logger = Logger(label: "ShopKitCredentials.BackendSelection")
    ) async throws(CredentialError) -> any CredentialBackend {
        try await makeChoice(
            preference, probe: probe, keyring: keyring, fileConfiguration: fileConfiguration, userMarker: userMarker,
            passphrase: { (_) throws(CredentialError) -> Passphrase in try await passphrase() }, logger: logger
        ).backend
    }

    /// Carries out the decision for a given probe result: reads and writes the keyring markers (the user's and the
    /// one beside the file), asks the passphrase.
    static func makeChoice(
        _ preference: BackendPreference, probe: KeyringProbe?, keyring: KeyringStore,
        fileConfiguration: EncryptedFileStore.Configuration, requireFileOnFallback: Bool = false,
        userMarker: URL? = userKeyringMarkerURL(),
        passphrase: @Sendable (PassphraseRequest) async throws(CredentialError) -> Passphrase,
        logger: Logger = Logger(label: "ShopKitCredentials.BackendSelection")
    ) async throws(CredentialError) -> BackendChoice {
        let markers = [userMarker, keyringMarkerURL(for: fileConfiguration.url)].compactMap { $0 }
        var found: URL?
        if case .auto = preference, case .unavailable? = probe {
            found = try await TerminalIO.offPool { () throws(CredentialError) in KeyringMarker.existing(markers) }
        }
        let selected: SelectedBackend
        do throws(CredentialError) {
            selected = try decide(
                preference, probe: probe, unlockPromptAllowed: keyring.allowUnlockPrompt, keyringMarker: found)
        } catch {
            logger.error("no credential backend selected", metadata: ["reason": "\(error)"])
            throw error
        }
        switch selected {
        case .keyring:
            logger.info("credential backend: keyring", metadata: ["probe": "\(probe.map { "\($0)" } ?? "-")"])
            for marker in markers {
                do throws(CredentialError) {
                    try await TerminalIO.offPool { () throws(CredentialError) in try KeyringMarker.record(marker) }
                } catch {
                    // The keyring works; only a guard against a later silent fallback could not be recorded.
                    logger.warning("cannot record that the keyring is in use", metadata: ["reason": "\(error)"])
                }
            }
            return BackendChoice(backend: keyring, selected: .keyring, fileURL: nil, fallbackReason: nil)
        case .file:
            var configuration = fileConfiguration
            var fallbackReason: String?
            if case .file(let forced) = preference {
                configuration = forced
            } else if case .unavailable(let why)? = probe {
                fallbackReason = why
            } else {
                fallbackReason = "the keyring was not probed"
            }
            let url = configuration.url
            logger.info("credential backend: encrypted file", metadata: [
                "path": "\(url.path)",
                "why": "\(probe.map { "keyring probe: \($0)" } ?? "forced")",
            ])
            let exists = try await TerminalIO.offPool { () throws(CredentialError) in
                FileManager.default.fileExists(atPath: url.path)
            }
            if requireFileOnFallback, let fallbackReason, !exists {
                throw .unavailable("\(fallbackReason); there is no token file at \(url.path) either, so nothing was "
                    + "read or deleted: run where the keyring is reachable (a desktop session, "
                    + "DBUS_SESSION_BUS_ADDRESS set), or choose the file backend explicitly")
            }
            let store = EncryptedFileStore(
                configuration: configuration,
                passphrase: try await passphrase(exists ? .existingFile(url) : .newFile(url)))
            return BackendChoice(backend: store, selected: .file, fileURL: url, fallbackReason: fallbackReason)
        }
    }
}
