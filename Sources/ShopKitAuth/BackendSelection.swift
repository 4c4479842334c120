import Foundation
import Logging

/// Which credential backend to use: chosen from what answers (`auto`) or forced.
public enum BackendPreference: Sendable {
    /// The keyring when a Secret Service answers; the encrypted file only when none does.
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

/// Picks the default credential backend.
///
/// The rules (``decide(_:probe:unlockPromptAllowed:)``): a forced choice is honoured; otherwise the keyring is used
/// whenever a Secret Service answers, and the encrypted file only when there is none (no session bus, or nothing
/// owns the Secret Service name). A keyring that is there but locked (with prompting not allowed) or failing (a
/// D-Bus error, no answer in time) is an error, never a silent downgrade to the file: the file would then hold
/// tokens the user expects in the keyring, and a second copy would outlive a sign-out in the keyring.
public enum BackendSelection {
    /// Decides from a probe result alone (pure; the rules of the type's overview).
    ///
    /// - Throws: ``CredentialError/locked(_:)`` for a locked keyring without prompting,
    ///   ``CredentialError/unavailable(_:)`` for a failing keyring (unless the file is forced) and when `.keyring`
    ///   is forced and none answers.
    public static func decide(_ preference: BackendPreference, probe: KeyringProbe?, unlockPromptAllowed: Bool = false)
        throws(CredentialError) -> SelectedBackend
    {
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
        case (.auto, .unavailable?), (.auto, nil):
            return .file
        }
    }

    /// Builds the default store: probes the keyring (unless the file is forced), decides, logs the choice, and
    /// asks for the file passphrase only when the file is chosen.
    ///
    /// - Parameters:
    ///   - preference: `.auto`, or a forced backend.
    ///   - keyring: the keyring store to probe and return (its timeout bounds the probe).
    ///   - fileConfiguration: where the file lives when `.auto` picks it.
    ///   - passphrase: asked only when the file is chosen.
    /// - Warning: The passphrase provider must read from the terminal or a descriptor the user controls, never
    ///   argv or the environment.
    public static func defaultStore(
        _ preference: BackendPreference = .auto,
        keyring: KeyringStore = KeyringStore(),
        fileConfiguration: EncryptedFileStore.Configuration = EncryptedFileStore.Configuration(),
        passphrase: @Sendable () async throws(CredentialError) -> Passphrase,
        logger: Logger = Logger(label: "ShopKitAuth.BackendSelection")
    ) async throws(CredentialError) -> any CredentialBackend {
        var probe: KeyringProbe?
        if case .file = preference {
            probe = nil
        } else {
            probe = await keyring.probe()
        }
        return try await makeStore(
            preference, probe: probe, keyring: keyring, fileConfiguration: fileConfiguration,
            passphrase: passphrase, logger: logger)
    }

    /// Carries out the decision for a given probe result (tests inject the probe).
    static func makeStore(
        _ preference: BackendPreference, probe: KeyringProbe?, keyring: KeyringStore,
        fileConfiguration: EncryptedFileStore.Configuration,
        passphrase: @Sendable () async throws(CredentialError) -> Passphrase,
        logger: Logger = Logger(label: "ShopKitAuth.BackendSelection")
    ) async throws(CredentialError) -> any CredentialBackend {
        let selected: SelectedBackend
        do throws(CredentialError) {
            selected = try decide(preference, probe: probe, unlockPromptAllowed: keyring.allowUnlockPrompt)
        } catch {
            logger.error("no credential backend selected", metadata: ["reason": "\(error)"])
            throw error
        }
        switch selected {
        case .keyring:
            logger.info("credential backend: keyring", metadata: ["probe": "\(probe.map { "\($0)" } ?? "-")"])
            return keyring
        case .file:
            var configuration = fileConfiguration
            if case .file(let forced) = preference { configuration = forced }
            logger.info("credential backend: encrypted file", metadata: [
                "path": "\(configuration.url.path)",
                "why": "\(probe.map { "keyring probe: \($0)" } ?? "forced")",
            ])
            return EncryptedFileStore(configuration: configuration, passphrase: try await passphrase())
        }
    }
}
