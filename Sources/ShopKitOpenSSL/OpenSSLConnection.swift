import COpenSSL
import Foundation
import ShopKitPinning

/// The outcome of one TLS step over the connection's BIOs: OpenSSL's tri-state results, translated.
package enum TLSStepResult: Sendable, Equatable {
    /// The step finished (handshake done, plaintext written, close_notify exchanged).
    case complete
    /// OpenSSL needs more ciphertext from the peer: feed it with `feedCiphertext`, then repeat the step.
    case wantRead
    /// OpenSSL has ciphertext to send first: drain `takeCiphertext`, then repeat the step.
    case wantWrite
    /// The peer sent close_notify: no more plaintext will arrive.
    case closed
    /// The connection failed; the error holds OpenSSL's drained queue.
    case failed(OpenSSLError)
}

/// One TLS connection over custom BIOs (ciphertext in: lent or copied buffers; out: the caller's sink, or kept):
/// no sockets, the caller moves the bytes.
///
/// BIO order for every step: first hand over whatever arrived from the network (`withCiphertext`, which lends
/// the caller's buffer to OpenSSL while the steps run, or `feedCiphertext`, which copies), then run the step
/// (`handshake`, `readPlaintext`, `writePlaintext`, `shutdown`), then send what the step wrote: what the
/// ``setCiphertextSink(_:)`` received during the step, or, without a sink, whatever `takeCiphertext` returns.
/// Not thread-safe: one connection belongs to one event loop.
package final class OpenSSLConnection {
    private let ssl: OpaquePointer
    /// Read side: ciphertext from the peer, lent or fed by the caller, read by OpenSSL through a custom BIO
    /// (owned by `ssl`) that points at it unretained; `deinit` frees `ssl` before this is released.
    private let inbound = InboundCiphertext()
    /// Write side: ciphertext for the peer, written by OpenSSL through a custom BIO (owned by `ssl`) that points
    /// at it unretained, to ``setCiphertextSink(_:)`` or kept for `takeCiphertext`; `deinit` frees `ssl` before this
    /// is released.
    private let outbound = OutboundCiphertext()
    /// Keeps the SSL_CTX alive as long as the SSL uses it.
    package let context: OpenSSLContext
    /// Called (on this connection's thread, inside a step) with each session OpenSSL hands out, e.g. a TLS 1.3
    /// ticket that arrived with the first records after the handshake. Client role only.
    package var onNewSession: ((OpenSSLSession) -> Void)?
    /// The server's CertificateRequest and the client's answer, once one arrived (client role; nil otherwise).
    package internal(set) var clientCertificateRequest: ClientCertificateRequest?
    /// Checks the chain OpenSSL has just verified, inside its verification (client role, full handshakes only:
    /// a resumed session runs no verification). Called on this connection's thread, inside a step, at depth 0 and
    /// only after OpenSSL's own chain and name checks passed; returning false ends the handshake before the client
    /// sends its certificate. Nil: OpenSSL's verdict alone.
    package var chainCheck: ((VerifiedChain) -> Bool)?
    /// The verified chain as PEM blocks, leaf first, when ``chainCheck`` refused it (for the failure report:
    /// `SSL_get0_verified_chain` is not set after a refusal).
    package internal(set) var refusedChainPEM: [String] = []
    /// ``chainCheck``'s answer, once it ran (it runs once per connection).
    var chainCheckPassed: Bool?
    /// The SCT check (see ``requestCertificateTransparency(_:)``), if the connection asked for SCTs.
    var certificateTransparency: CertificateTransparencyCheck?
    /// The SCT check's answer and the SCTs it judged, once it ran (it runs once per connection).
    var ctJudgement: (passed: Bool, timestamps: [SignedCertificateTimestamp])?

    private init(context: OpenSSLContext) throws(OpenSSLError) {
        OpenSSLError.clearQueue()
        guard let ssl = context.withContext({ SSL_new($0) }) else { throw OpenSSLError.drain("SSL_new") }
        guard let input = inbound.makeBIO() else {
            SSL_free(ssl)
            throw OpenSSLError.drain("BIO_new")
        }
        guard let output = outbound.makeBIO() else {
            BIO_free(input)
            SSL_free(ssl)
            throw OpenSSLError.drain("BIO_new")
        }
        SSL_set_bio(ssl, input, output)  // the SSL now owns both BIOs
        self.ssl = ssl
        self.context = context
        SSL_set_ex_data(ssl, connectionIndex, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        SSL_set_ex_data(ssl, connectionIndex, nil)
        SSL_free(ssl)
    }

    /// A client connection to `host`, parsed as a ``ServerName`` (see
    /// ``client(context:name:session:)``).
    ///
    /// - Throws: `OpenSSLError` (operation "client host name") when `host` is not a ``ServerName``: empty, a NUL
    ///   byte (OpenSSL would check no name, or a name cut short), or anything else no host name has.
    package static func client(context: OpenSSLContext, host: String, session: OpenSSLSession? = nil) throws(OpenSSLError)
        -> OpenSSLConnection
    {
        let name: ServerName
        do {
            name = try ServerName(host)
        } catch {
            throw OpenSSLError(
                operation: "client host name",
                queue: ["\(error); give the DNS name or IP address the certificate must name"])
        }
        return try client(context: context, name: name, session: session)
    }

    /// A client connection to the server `name`: SNI (not for IP addresses) and OpenSSL's hostname check against
    /// SANs only (`X509_CHECK_FLAG_NEVER_CHECK_SUBJECT`, no partial wildcards); IP addresses are checked against
    /// IP SANs. OpenSSL gets `name`'s canonical text, the same value the pins are looked up under.
    ///
    /// - Warning: `name` is what the certificate must name; pass the host the user asked for, never one the
    ///   server suggested.
    package static func client(context: OpenSSLContext, name: ServerName, session: OpenSSLSession? = nil)
        throws(OpenSSLError) -> OpenSSLConnection
    {
        precondition(context.role == .client, "a client connection needs a client context")
        let connection = try OpenSSLConnection(context: context)
        try connection.withSSL { ssl throws(OpenSSLError) in
            SSL_set_connect_state(ssl)
            SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            if name.isIPAddress {
                try check(X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.text), "X509_VERIFY_PARAM_set1_ip_asc")
            } else {
                try check(SSL_set1_host(ssl, name.text), "SSL_set1_host")
                try check(shopkit_SSL_set_tlsext_host_name(ssl, name.text), "SSL_set_tlsext_host_name")
            }
            if let session {
                try session.withSession { pointer throws(OpenSSLError) in
                    try check(SSL_set_session(ssl, pointer), "SSL_set_session")
                }
            }
        }
        return connection
    }

    /// A server connection (tests and demo).
    package static func server(context: OpenSSLContext) throws(OpenSSLError) -> OpenSSLConnection {
        precondition(context.role == .server, "a server connection needs a server context")
        let connection = try OpenSSLConnection(context: context)
        connection.withSSL { SSL_set_accept_state($0) }
        return connection
    }

    func withSSL<T, E: Error>(_ body: (OpaquePointer) throws(E) -> T) throws(E) -> T { try body(ssl) }

    // MARK: Moving ciphertext

    /// Hands a copy of ciphertext received from the peer to OpenSSL. Run a step afterwards.
    package func feedCiphertext(_ bytes: UnsafeRawBufferPointer) {
        inbound.append(bytes)
    }

    /// Lends ciphertext received from the peer to OpenSSL while `steps` runs (`handshake`, `readPlaintext`, …):
    /// OpenSSL reads it straight from `bytes`, without the copy `feedCiphertext` makes. Whatever the steps leave
    /// unread (normally part of a record) is copied and kept for the next steps.
    ///
    /// - Warning: `bytes` must stay valid while `steps` runs (pass the pointer of `withUnsafeReadableBytes`).
    package func withCiphertext<T>(_ bytes: UnsafeRawBufferPointer, _ steps: () -> T) -> T {
        inbound.lend(bytes, steps)
    }

    /// Feeds ciphertext from an array.
    package func feedCiphertext(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { feedCiphertext($0) }
    }

    /// Where the ciphertext OpenSSL writes for the peer goes, record by record, straight from OpenSSL's record
    /// buffer (called on this connection's thread, inside a step); nil (the default) keeps it for
    /// `takeCiphertext`. Ciphertext kept before a sink is set goes to it first, so the order holds.
    ///
    /// - Warning: the buffer passed to the sink is valid only during the call: copy it there (into the
    ///   `ByteBuffer` bound for the socket). The sink must not run a step of this connection.
    package func setCiphertextSink(_ sink: ((UnsafeRawBufferPointer) -> Void)?) {
        outbound.setSink(sink)
    }

    /// Ciphertext OpenSSL produced for the peer and kept (no ``setCiphertextSink(_:)``), or nil if there is none.
    package func takeCiphertext() -> [UInt8]? {
        let pending = pendingCiphertextCount
        guard pending > 0 else { return nil }
        // Uninitialized storage: BIO_read fills it, nothing is zeroed or copied twice.
        let bytes = [UInt8](unsafeUninitializedCapacity: pending) { buffer, count in
            count = takeCiphertext(into: UnsafeMutableRawBufferPointer(buffer))
        }
        return bytes.isEmpty ? nil : bytes
    }

    /// How many ciphertext bytes OpenSSL has written for the peer and kept, not yet taken (zero while a
    /// ``setCiphertextSink(_:)`` is set: the sink got them).
    package var pendingCiphertextCount: Int { outbound.count }

    /// How many fed or lent ciphertext bytes OpenSSL has not consumed yet. The plaintext they decrypt to is
    /// never larger, so a read buffer of this size (plus what OpenSSL already buffered) fits it.
    package var unreadCiphertextCount: Int { inbound.count }

    /// Whether any input waits inside the connection: fed ciphertext OpenSSL has not read, or bytes in its record
    /// buffer (part of a record, or decrypted data not read yet; `SSL_has_pending`).
    package var hasUnreadInput: Bool { inbound.count > 0 || SSL_has_pending(ssl) == 1 }

    /// Moves pending ciphertext for the peer into `destination` (as much as fits); returns the byte count.
    /// Lets the caller read straight into its own buffer (e.g. a NIO `ByteBuffer`) without a copy in between.
    package func takeCiphertext(into destination: UnsafeMutableRawBufferPointer) -> Int {
        guard let base = destination.baseAddress, destination.count > 0 else { return 0 }
        return outbound.take(into: base, capacity: destination.count)
    }

    // MARK: Steps

    /// Runs the handshake as far as the fed ciphertext allows. Order: feed, `handshake()`, take ciphertext.
    package func handshake() -> TLSStepResult {
        OpenSSLError.clearQueue()
        let result = SSL_do_handshake(ssl)
        return result == 1 ? .complete : translate(result, "SSL_do_handshake")
    }

    /// Decrypts all plaintext available from the fed ciphertext, appending it to `plaintext`.
    /// Returns `.wantRead` when the fed ciphertext is used up. Order: feed, `readPlaintext`, take ciphertext
    /// (reading can produce ciphertext: alerts, key updates).
    package func readPlaintext(into plaintext: inout [UInt8]) -> TLSStepResult {
        // One scratch buffer for the whole loop, never zero-filled: SSL_read_ex writes into it.
        withUnsafeTemporaryAllocation(byteCount: 16_384, alignment: 1) { scratch in
            while true {
                let (read, step) = readPlaintext(into: scratch)
                guard step == .complete else { return step }
                plaintext.append(contentsOf: scratch.prefix(read))
            }
        }
    }

    /// One decryption step into `destination`: the number of plaintext bytes written there and `.complete`, or
    /// zero bytes and why nothing more can be read now (`.wantRead` once the fed ciphertext is used up,
    /// `.closed` on close_notify, `.failed`). Call it again while it returns `.complete`. Lets the caller decrypt
    /// straight into its own buffer (e.g. a NIO `ByteBuffer`) without a copy in between.
    package func readPlaintext(into destination: UnsafeMutableRawBufferPointer) -> (count: Int, result: TLSStepResult) {
        guard let base = destination.baseAddress, destination.count > 0 else { return (0, .complete) }
        OpenSSLError.clearQueue()
        var read = 0
        let result = SSL_read_ex(ssl, base, destination.count, &read)
        return result == 1 ? (read, .complete) : (0, translate(result, "SSL_read_ex"))
    }

    /// Encrypts `plaintext` entirely (the output BIO never pushes back). Order: `writePlaintext`, take ciphertext.
    package func writePlaintext(_ plaintext: UnsafeRawBufferPointer) -> TLSStepResult {
        var offset = 0
        while offset < plaintext.count {
            OpenSSLError.clearQueue()
            var written = 0
            let result = SSL_write_ex(ssl, plaintext.baseAddress! + offset, plaintext.count - offset, &written)
            guard result == 1 else { return translate(result, "SSL_write_ex") }
            offset += written
        }
        return .complete
    }

    /// Sends close_notify. `.complete` once the peer's close_notify was also seen, `.wantRead` before that.
    /// Order: `shutdown()`, take ciphertext (the close_notify alert).
    package func shutdown() -> TLSStepResult {
        OpenSSLError.clearQueue()
        let result = SSL_shutdown(ssl)
        if result == 1 { return .complete }
        if result == 0 { return .wantRead }
        return translate(result, "SSL_shutdown")
    }

    private func translate(_ result: Int32, _ operation: String) -> TLSStepResult {
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL:
            let queue = OpenSSLError.drainQueue()
            return .failed(OpenSSLError(operation: operation, queue: queue.isEmpty ? ["unexpected end of stream"] : queue))
        default: return .failed(OpenSSLError.drain(operation))
        }
    }

}

/// The SSL ex_data slot holding an unretained pointer to the owning `OpenSSLConnection`.
let connectionIndex: Int32 = shopkit_SSL_get_ex_new_index()

/// OpenSSL's new-session callback: hands the session to the connection that negotiated it.
/// Returning 1 keeps the reference OpenSSL passed in; `OpenSSLSession` releases it.
let openSSLNewSessionCallback: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32 = { ssl, session in
    guard let ssl, let session, let raw = SSL_get_ex_data(ssl, connectionIndex) else { return 0 }
    // The callback only runs inside a step the connection itself called, so it is alive.
    let connection = Unmanaged<OpenSSLConnection>.fromOpaque(raw).takeUnretainedValue()
    guard let handler = connection.onNewSession else { return 0 }
    handler(OpenSSLSession(takingOwnership: session))
    return 1
}

/// A resumable TLS session (`SSL_SESSION`), owned.
package final class OpenSSLSession: @unchecked Sendable {
    // @unchecked Sendable: ShopKit never mutates a session after OpenSSL handed it out; SSL_set_session only
    // takes a reference (OpenSSL copies a session before changing it), and reference counts are atomic.
    private let pointer: OpaquePointer

    init(takingOwnership pointer: OpaquePointer) { self.pointer = pointer }

    deinit { SSL_SESSION_free(pointer) }

    func withSession<T, E: Error>(_ body: (OpaquePointer) throws(E) -> T) throws(E) -> T { try body(pointer) }

    /// Whether OpenSSL would still offer this session (it has a ticket or id and has not timed out).
    package var isResumable: Bool { SSL_SESSION_is_resumable(pointer) == 1 }
}
