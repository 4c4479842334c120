import Foundation
import Logging
import NIOCore
import ShopKitOpenSSL
import ShopKitPinning

/// A NIO channel handler running one OpenSSL connection over custom BIOs, in client or server role: OpenSSL reads
/// the peer's ciphertext straight from NIO's inbound buffer and writes its records straight into the outbound
/// `ByteBuffer`, with no memory BIO (and its copy) in between.
///
/// Client role: runs the handshake (OpenSSL checks the chain and the hostname, then the pin policy runs on the
/// verified chain inside OpenSSL's verification, before the client's certificate can be sent; a resumed session's
/// cached chain is checked after the handshake); only when all passed does it fire `TLSHandshakeCompleted`. On failure it fires a `TLSError`
/// through `errorCaught` and closes the channel. Writes made before the handshake completes are buffered.
/// Closing sends close_notify. Make one with `TLSClientContext.makeClientHandler(host:port:)` (public callers get
/// it as an `any ChannelHandler` from `makeHandler(host:port:)`) or `TLSServerContext.makeHandler()`; it must be
/// the first handler in the pipeline (nearest the socket).
///
/// Package access: an app never names this class. It adds the handler `makeHandler(host:port:)` returns and
/// observes the events (`TLSHandshakeCompleted`, `TLSUncleanShutdown`, `TLSError`), which stay public.
///
/// - Warning: Nothing but ciphertext passes below this handler; never put a handler that reads plaintext
///   before it.
package final class TLSHandler: ChannelDuplexHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer
    package typealias OutboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    enum Role {
        /// `host` is the server name's canonical text (``ServerName``): what OpenSSL checks, the pins are looked
        /// up under, the session is cached under and reports name. `name` is nil when the host given is no
        /// server name: the handshake then fails before anything is sent.
        case client(TLSClientContext, name: Result<ServerName, ServerNameError>, host: String, port: Int, key: TLSSessionCache.Key)
        case server(TLSServerContext)
    }

    typealias PendingWrite = (buffer: ByteBuffer, promise: EventLoopPromise<Void>?)

    let role: Role
    /// The pinning policy this connection is checked against (client role): the context's policy in force when
    /// the handler was made, for the whole handshake, whatever replaces it meanwhile.
    let pinning: PinningSnapshot
    var machine = TLSHandlerStateMachine<PendingWrite>()
    var connection: OpenSSLConnection?

    /// Whether bytes from the peer wait in the TLS layer, not yet passed on as plaintext (part of a record): the
    /// connection is not quiet. On the channel's event loop.
    package var holdsUnreadInput: Bool { connection?.hasUnreadInput ?? false }
    /// The cached session offered to the server, with its verified chain (client role).
    var offered: TLSSessionCache.Entry?
    /// Sessions that arrived before the pin check finished (TLS 1.2 hands them out during the handshake).
    var pendingSessions: [OpenSSLSession] = []
    /// What the handshake established, stored with every new session (client role): the verified chain, the pin
    /// verdict, and when that chain was verified (now, or the resumed session's full handshake).
    var established: (chain: VerifiedChain, verdict: PinVerdict, verifiedAt: Date, scts: [SignedCertificateTimestamp])?
    /// What the pin check inside OpenSSL's verification refused (client role), reported when the handshake fails.
    var refusedDuringVerification: VerificationRefusal?
    /// The Certificate Transparency policy and log store this connection is checked against (client role, CT not
    /// disabled for its host): the context's when the handshake started.
    var certificateTransparency: CertificateTransparencyState?
    /// The chain OpenSSL verified, as the pin check inside verification saw it (client role, full handshakes).
    var chainVerifiedDuringHandshake: VerifiedChain?
    /// The CT evaluation made inside the handshake (OpenSSL's SCT callback), once it ran.
    var ctEvaluationDuringHandshake: CTEvaluation?
    /// The storage of the last plaintext read, kept for the next one (see `readPlaintext`).
    var plaintextBuffer: ByteBuffer?
    /// Whether ``plaintextBuffer`` may be kept between reads (decided once the protocol is known).
    private var plaintextStorageReusable: Bool?
    /// Ciphertext OpenSSL wrote for the peer and not yet passed on: its sink appends each record here, in the
    /// order written; `takeCiphertext` hands the buffer to the next handler.
    var outboundCiphertext: ByteBuffer?
    /// The channel's allocator, for `outboundCiphertext`.
    var allocator = ByteBufferAllocator()

    init(client: TLSClientContext, host: String, port: Int) {
        let name = Result { () throws(ServerNameError) in try ServerName(host) }
        let canonical = (try? name.get())?.text ?? host
        let pinning = client.pinningSnapshot
        self.pinning = pinning
        // The CT policy and log list of the whole handshake, and the session key naming that list.
        let ct = client.ctSnapshot
        if ct.policy.mode(for: canonical) != .disabled { certificateTransparency = ct }
        role = .client(
            client, name: name, host: canonical, port: port,
            key: client.sessionKey(host: canonical, port: port, pinning: pinning.policy, ctList: ct.listID))
    }

    init(server: TLSServerContext) {
        role = .server(server)
        pinning = PinningSnapshot(policy: PinningPolicy(), generation: 0)
    }

    var logger: Logger {
        switch role {
        case .client(let context, _, let host, let port, _):
            var logger = context.configuration.logger
            logger[metadataKey: "tls.host"] = "\(host):\(port)"
            return logger
        case .server: return Logger(label: "ShopKitTLS.server")
        }
    }

    // MARK: Lifecycle

    package func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    package func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        switch machine.channelInactive() {
        case .handshakeInterrupted(let writes):
            fail(writes, TLSError.connectionClosed)
            context.fireErrorCaught(
                TLSError.handshakeFailed(reason: "the peer closed the connection during the TLS handshake"))
        case .uncleanShutdown(let writes):
            fail(writes, TLSError.connectionClosed)
            context.fireUserInboundEventTriggered(TLSUncleanShutdown())
        case .closed(let writes):
            fail(writes, TLSError.connectionClosed)
        }
        context.fireChannelInactive()
    }

    private func start(context: ChannelHandlerContext) {
        guard case .startHandshake = machine.start() else { return }
        allocator = context.channel.allocator
        do {
            switch role {
            case .client(let client, let name, _, _, let key):
                let name = try name.get()
                let resumption = client.configuration.sessionResumption
                offered =
                    resumption
                    ? client.sessionCache.take(key, now: client.now(), maximumAge: client.configuration.maximumSessionAge)
                    : nil
                let connection = try OpenSSLConnection.client(context: client.openSSL, name: name, session: offered?.session)
                if resumption {
                    connection.onNewSession = { [unowned self] session in self.sessionArrived(session) }
                }
                connection.chainCheck = { [unowned self] chain in self.checkDuringVerification(chain) }
                try requestCertificateTransparency(connection, client: client)
                self.connection = connection
            case .server(let server):
                connection = try OpenSSLConnection.server(context: server.openSSL)
            }
            connection?.setCiphertextSink { [unowned self] record in self.appendCiphertext(record) }
        } catch {
            fail(context: context, TLSError.handshakeFailed(reason: "\(error)"))
            return
        }
        runHandshake(context: context)
    }

    // MARK: Inbound

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        guard let connection, machine.acceptsCiphertext else { return }
        // OpenSSL reads the ciphertext straight from NIO's buffer while the steps run (no copy into a BIO).
        buffer.withUnsafeReadableBytes { ciphertext in
            connection.withCiphertext(ciphertext) {
                if machine.isHandshaking { runHandshake(context: context) }
                if machine.carriesData { readPlaintext(context: context) }
            }
        }
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        context.fireChannelReadComplete()
    }

    /// Handshake step. BIO order: ciphertext was fed by `channelRead`; step; send what OpenSSL wrote.
    private func runHandshake(context: ChannelHandlerContext) {
        guard let connection else { return }
        let result = connection.handshake()
        sendCiphertext(context: context)
        switch result {
        case .complete:
            handshakeCompleted(context: context)
        case .wantRead, .wantWrite:
            break
        case .closed:
            fail(context: context, TLSError.handshakeFailed(reason: "the peer closed TLS during the handshake"))
        case .failed(let error):
            fail(context: context, handshakeError(error))
        }
    }

    /// Read step: decrypt everything fed so far, pass it on, send any ciphertext OpenSSL produced.
    ///
    /// OpenSSL decrypts straight into one `ByteBuffer` sized by the ciphertext it came from (plaintext is never
    /// larger), which is then passed on as is: no intermediate arrays, no zero-filling.
    /// Whether the layer above is done with each read before the next (HTTP/1.1's decoder is; HTTP/2's frame
    /// decoder keeps what it is given), so that its storage may be reused. Asked once the protocol is known.
    private func reusesPlaintextStorage(_ connection: OpenSSLConnection) -> Bool {
        if let known = plaintextStorageReusable { return known }
        guard machine.carriesData else { return true }
        let reusable = connection.alpnProtocol != "h2"
        plaintextStorageReusable = reusable
        return reusable
    }

    private func readPlaintext(context: ChannelHandlerContext) {
        guard let connection else { return }
        // Reuse the last read's storage when nothing downstream kept it (the HTTP decoder drops a buffer it
        // consumed entirely): big buffers allocated per read and freed on another thread make malloc trim and
        // re-fault its heap on every read of a large body.
        var plaintext = plaintextBuffer ?? context.channel.allocator.buffer(capacity: 0)
        plaintextBuffer = nil
        plaintext.clear(minimumCapacity: max(connection.unreadCiphertextCount, 1_024))
        var result = TLSStepResult.complete
        while result == .complete {
            plaintext.writeWithUnsafeMutableBytes(minimumWritableBytes: 1_024) { destination in
                let (count, step) = connection.readPlaintext(into: destination)
                result = step
                return count
            }
        }
        sendCiphertext(context: context)
        if plaintext.readableBytes > 0 {
            context.fireChannelRead(wrapInboundOut(plaintext))
        }
        // Kept only up to a bound, so an idle connection never pins a huge buffer; and never under HTTP/2, whose frame
        // decoder keeps the buffer it is given: sharing its storage made the decoder copy its whole buffer on its
        // next append.
        if reusesPlaintextStorage(connection), plaintext.capacity <= 1 << 18 { plaintextBuffer = plaintext }
        switch result {
        case .closed:
            machine.closeNotifyReceived()
            closeWithNotify(context: context, mode: .all, promise: nil)
        case .failed(let error):
            fail(
                context: context,
                clientCertificateError(error) ?? .handshakeFailed(reason: "TLS error after the handshake: \(error)"))
        case .complete, .wantRead, .wantWrite:
            break
        }
    }

    // MARK: Outbound

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let buffer = unwrapOutboundIn(data)
        switch machine.write((buffer, promise)) {
        case .buffered: break
        case .encrypt: encrypt(context: context, buffer, promise: promise)
        case .reject: promise?.fail(TLSError.connectionClosed)
        }
    }

    package func flush(context: ChannelHandlerContext) {
        switch machine.flush() {
        case .flush: context.flush()
        case .deferUntilActive: break
        }
    }

    package func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        closeWithNotify(context: context, mode: mode, promise: promise)
    }

    /// Sends close_notify (if the handshake completed) and closes. BIO order: shutdown step, send ciphertext.
    private func closeWithNotify(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .all || mode == .output else {
            context.close(mode: mode, promise: promise)
            return
        }
        switch machine.close(all: mode == .all) {
        case .sendCloseNotifyAndClose(let writes):
            if let connection {
                _ = connection.shutdown()
                sendCiphertext(context: context)
            }
            fail(writes, TLSError.connectionClosed)
        case .close(let writes):
            fail(writes, TLSError.connectionClosed)
        }
        context.close(mode: mode, promise: promise)
    }

    /// Write step: encrypt, then hand the ciphertext on with the caller's promise.
    private func encrypt(context: ChannelHandlerContext, _ buffer: ByteBuffer, promise: EventLoopPromise<Void>?) {
        guard let connection else { promise?.fail(TLSError.connectionClosed); return }
        // Room for the records up front, so the sink's appends never grow (copy) the buffer.
        reserveCiphertext(Self.ciphertextSize(plaintext: buffer.readableBytes))
        let result = buffer.withUnsafeReadableBytes { connection.writePlaintext($0) }
        guard result == .complete else {
            // Plaintext OpenSSL did not take whole leaves the stream in doubt: the connection is closed, so that a
            // write sent without a promise still ends what it belonged to.
            promise?.fail(TLSError.connectionClosed)
            let reason: String
            if case .failed(let error) = result { reason = "\(error)" } else { reason = "\(result)" }
            fail(context: context, TLSError.handshakeFailed(reason: "TLS error while writing: \(reason)"))
            return
        }
        if let ciphertext = takeCiphertext(context: context) {
            context.write(wrapOutboundOut(ciphertext), promise: promise)
        } else {
            promise?.succeed()
        }
    }

    /// Sends whatever ciphertext OpenSSL wrote to the output BIO (handshake records, alerts, tickets).
    private func sendCiphertext(context: ChannelHandlerContext) {
        guard let ciphertext = takeCiphertext(context: context) else { return }
        context.writeAndFlush(wrapOutboundOut(ciphertext), promise: nil)
    }

    /// The ciphertext OpenSSL wrote since the last call, in one `ByteBuffer`, or nil if there is none.
    private func takeCiphertext(context: ChannelHandlerContext) -> ByteBuffer? {
        guard let ciphertext = outboundCiphertext else { return nil }
        outboundCiphertext = nil
        return ciphertext.readableBytes > 0 ? ciphertext : nil
    }

    /// The connection's ciphertext sink: OpenSSL wrote `record` for the peer (valid only during this call).
    private func appendCiphertext(_ record: UnsafeRawBufferPointer) {
        if outboundCiphertext == nil {
            outboundCiphertext = allocator.buffer(capacity: max(record.count, 1_024))
        }
        outboundCiphertext!.writeBytes(record)
    }

    /// Makes room for `count` more ciphertext bytes.
    private func reserveCiphertext(_ count: Int) {
        if outboundCiphertext == nil {
            outboundCiphertext = allocator.buffer(capacity: count)
        } else {
            outboundCiphertext!.reserveCapacity(minimumWritableBytes: count)
        }
    }

    /// Room for the ciphertext of `plaintext` bytes: records of at most 16 KiB, each with up to 64 bytes of
    /// header, nonce, content type and tag (29 for TLS 1.2 AES-GCM, 22 for TLS 1.3). A suite with more overhead
    /// (CBC, opt-in only) just makes the buffer grow.
    static func ciphertextSize(plaintext: Int) -> Int {
        plaintext + (plaintext / 16_384 + 1) * 64
    }

    /// After a successful handshake and checks: send the buffered writes.
    func becomeActive(context: ChannelHandlerContext) {
        switch machine.handshakeSucceeded() {
        case .none:
            break
        case .encrypt(let writes):
            for write in writes { encrypt(context: context, write.buffer, promise: write.promise) }
        case .encryptAndFlush(let writes):
            for write in writes { encrypt(context: context, write.buffer, promise: write.promise) }
            context.flush()
        }
    }

    /// Fails the connection once: fails buffered writes, fires `TLSHandshakeFailureDetails` (client role, during
    /// the handshake), then `error`, and closes the channel.
    func fail(context: ChannelHandlerContext, _ error: TLSError) {
        let handshaking = machine.isHandshaking
        guard case .fail(let writes) = machine.fail() else { return }
        fail(writes, error)
        if handshaking, case .server(let server) = role, connection?.peerSentCertificate == true {
            server.statistics.recordClientCertificate()
        }
        if handshaking, case .client = role, let connection {
            // Diagnostics only: a `PresentedChain` can never reach the pin check.
            var details = TLSHandshakeFailureDetails(
                presentedChain: (try? connection.presentedChain()) ?? nil, verifyResult: connection.verifyResult,
                clientCertificateRequest: connection.clientCertificateRequest)
            let cipher = connection.cipherSuite
            if !cipher.isEmpty { details.cipherSuite = cipher }
            if let chain = refusedDuringVerification?.refusedChain {
                // The pins (or strict hosts) refused a chain OpenSSL had verified: past the ServerHello, so what was negotiated is known.
                details.pinRefusal = .init(
                    verifiedChain: chain, protocolVersion: connection.protocolVersion,
                    cipherSuite: connection.cipherSuite, alpnProtocol: connection.alpnProtocol)
            }
            context.fireUserInboundEventTriggered(details)
        }
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }

    private func fail(_ writes: [PendingWrite], _ error: TLSError) {
        for write in writes { write.promise?.fail(error) }
    }
}

@available(*, unavailable)
extension TLSHandler: Sendable {}
