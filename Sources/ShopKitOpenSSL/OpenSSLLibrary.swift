import COpenSSL

/// OpenSSL's process-wide initialisation, done once by ShopKit before its first OpenSSL call
/// (``OpenSSLError/clearQueue()`` starts every call that can fail, and asks for it first).
///
/// By default OpenSSL 3 frees its global state (providers, the default library context, algorithm tables) in an
/// `atexit` handler. ShopKit's event-loop threads outlive `main`: a connection that is still closing when the
/// process exits (`SSL_shutdown`, `SSL_free`, a last record) would run on freed state, and crash the process
/// after its work is done, with a status that hides the real one. `OPENSSL_INIT_NO_ATEXIT` leaves that memory to
/// the kernel, like every other resource of an exiting process.
///
/// It takes effect only if ShopKit is the first to initialise OpenSSL in the process; a library that initialised
/// it earlier has already decided.
package enum OpenSSLLibrary {
    private static let initialized: Bool = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1

    /// Initialises OpenSSL the first time; after that, one check of a flag.
    package static func initialize() {
        _ = initialized
    }
}
