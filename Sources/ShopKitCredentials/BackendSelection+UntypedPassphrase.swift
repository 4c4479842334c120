import Foundation
import Logging

/// The selection entry points for a passphrase provider written with an ordinary `throws`.
///
/// A closure literal whose body calls throwing code infers `throws(any Error)`, which the typed
/// `throws(CredentialError)` parameter refuses; these overloads take it and map what it throws
/// (``CredentialError/init(passphraseProviderError:)``). They are disfavoured, so a closure spelled
/// `throws(CredentialError)` (or one that does not throw) still picks the typed entry point, unchanged.
extension BackendSelection {
    /// `defaultStore(_:keyring:fileConfiguration:passphrase:logger:)` for a provider that throws any error.
    ///
    /// ```swift
    /// let store = try await BackendSelection.defaultStore { try await askUser() }
    /// ```
    ///
    /// - Throws: as the typed entry point; what the provider throws is mapped by
    ///   ``CredentialError/init(passphraseProviderError:)``.
    /// - Warning: The passphrase provider must read from the terminal or a descriptor the user controls, never
    ///   argv or the environment.
    @_disfavoredOverload
    public static func defaultStore(
        _ preference: BackendPreference = .auto,
        keyring: KeyringStore = KeyringStore(),
        fileConfiguration: EncryptedFileStore.Configuration = EncryptedFileStore.Configuration(),
        passphrase: @Sendable () async throws -> Passphrase,
        logger: Logger = Logger(label: "ShopKitCredentials.BackendSelection")
    ) async throws(CredentialError) -> any CredentialBackend {
        try await defaultStore(
            preference, keyring: keyring, fileConfiguration: fileConfiguration,
            passphrase: { () throws(CredentialError) -> Passphrase in
                do {
                    return try await passphrase()
                } catch {
                    throw CredentialError(passphraseProviderError: error)
                }
            },
            logger: logger)
    }

    /// `choose(_:keyring:fileConfiguration:requireFileOnFallback:passphrase:logger:)` for a provider that
    /// throws any error.
    ///
    /// - Throws: as the typed entry point; what the provider throws is mapped by
    ///   ``CredentialError/init(passphraseProviderError:)``.
    /// - Warning: The passphrase provider must read from the terminal or a descriptor the user controls, never
    ///   argv or the environment.
    @_disfavoredOverload
    public static func choose(
        _ preference: BackendPreference = .auto,
        keyring: KeyringStore = KeyringStore(),
        fileConfiguration: EncryptedFileStore.Configuration = EncryptedFileStore.Configuration(),
        requireFileOnFallback: Bool = false,
        passphrase: @Sendable (PassphraseRequest) async throws -> Passphrase,
        logger: Logger = Logger(label: "ShopKitCredentials.BackendSelection")
    ) async throws(CredentialError) -> BackendChoice {
        try await choose(
            preference, keyring: keyring, fileConfiguration: fileConfiguration,
            requireFileOnFallback: requireFileOnFallback,
            passphrase: { (request) throws(CredentialError) -> Passphrase in
                do {
                    return try await passphrase(request)
                } catch {
                    throw CredentialError(passphraseProviderError: error)
                }
            },
            logger: logger)
    }
}

extension CredentialError {
    /// What an untyped passphrase provider threw, as a store failure:
    ///
    /// - a `CredentialError` passes through unchanged (e.g. ``passphraseRejected(_:)`` from
    ///   ``Passphrase/read(fromFileDescriptor:)``);
    /// - a `CancellationError` is ``accessDenied(_:)``: no passphrase was given, as when the user ends a prompt;
    /// - anything else is ``passphraseProviderFailed(_:)``, naming the error's type only: its description could
    ///   hold whatever the provider read, so it never reaches a message or a log.
    public init(passphraseProviderError error: any Error) {
        switch error {
        case let error as CredentialError:
            self = error
        case is CancellationError:
            self = .accessDenied("the passphrase provider was cancelled; no passphrase was given, nothing was opened")
        default:
            self = .passphraseProviderFailed(
                "it threw \(String(reflecting: type(of: error))) (its message is not shown: it could hold the "
                    + "passphrase); nothing was opened, fix the provider")
        }
    }
}
