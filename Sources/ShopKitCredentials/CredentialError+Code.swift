extension CredentialError {
    /// What kind of failure a ``CredentialError`` is, without its reason: switch on it.
    ///
    /// A struct with a static member per kind rather than an enum, so that a new kind is not a breaking change:
    /// a `switch` over it always has a `default`. `case .locked:` matches by `==`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case locked, unavailable, wrongPassphrase, corrupt, insecurePermissions, wrongDevice, accessDenied
            case policyUnsupported, io, tooLarge, unsafeFile, invalidConfiguration, outcomeUnknown, passphraseRejected,
                passphraseProviderFailed
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// ``CredentialError/locked(_:)``.
        public static let locked = Self(.locked)
        /// ``CredentialError/unavailable(_:)``.
        public static let unavailable = Self(.unavailable)
        /// ``CredentialError/wrongPassphrase``.
        public static let wrongPassphrase = Self(.wrongPassphrase)
        /// ``CredentialError/corrupt(_:)``.
        public static let corrupt = Self(.corrupt)
        /// ``CredentialError/insecurePermissions(_:)``.
        public static let insecurePermissions = Self(.insecurePermissions)
        /// ``CredentialError/wrongDevice``.
        public static let wrongDevice = Self(.wrongDevice)
        /// ``CredentialError/accessDenied(_:)``.
        public static let accessDenied = Self(.accessDenied)
        /// ``CredentialError/policyUnsupported(_:)``.
        public static let policyUnsupported = Self(.policyUnsupported)
        /// ``CredentialError/io(_:)``.
        public static let io = Self(.io)
        /// ``CredentialError/tooLarge(_:)``.
        public static let tooLarge = Self(.tooLarge)
        /// ``CredentialError/unsafeFile(_:)``.
        public static let unsafeFile = Self(.unsafeFile)
        /// ``CredentialError/invalidConfiguration(_:)``.
        public static let invalidConfiguration = Self(.invalidConfiguration)
        /// ``CredentialError/outcomeUnknown(_:)``.
        public static let outcomeUnknown = Self(.outcomeUnknown)
        /// ``CredentialError/passphraseRejected(_:)``.
        public static let passphraseRejected = Self(.passphraseRejected)
        /// ``CredentialError/passphraseProviderFailed(_:)``.
        public static let passphraseProviderFailed = Self(.passphraseProviderFailed)

        /// The kind's name, as its static member spells it (`wrongPassphrase`).
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is; switch on it, with a `default`, to handle some kinds alike.
    public var code: Code {
        switch storage {
        case .locked: return .locked
        case .unavailable: return .unavailable
        case .wrongPassphrase: return .wrongPassphrase
        case .corrupt: return .corrupt
        case .insecurePermissions: return .insecurePermissions
        case .wrongDevice: return .wrongDevice
        case .accessDenied: return .accessDenied
        case .policyUnsupported: return .policyUnsupported
        case .io: return .io
        case .tooLarge: return .tooLarge
        case .unsafeFile: return .unsafeFile
        case .invalidConfiguration: return .invalidConfiguration
        case .outcomeUnknown: return .outcomeUnknown
        case .passphraseRejected: return .passphraseRejected
        case .passphraseProviderFailed: return .passphraseProviderFailed
        }
    }
}
