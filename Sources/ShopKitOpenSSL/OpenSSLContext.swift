import COpenSSL

/// One configured `SSL_CTX`, built once per configuration and shared by every connection made with it.
///
/// Building a context and loading a CA store is expensive in OpenSSL 3, so ShopKit never builds one per
/// connection. After `init` returns the context is only read (by `SSL_new`).
package final class OpenSSLContext: @unchecked Sendable {
    // @unchecked Sendable: the SSL_CTX (and the client identity fields) are fully configured inside `init` and
    // the static factories before the context is returned, and never changed afterwards;
    // OpenSSL allows concurrent SSL_new on a configured context (its reference count and the X509_STORE
    // are locked internally). The session callback reaches connections only through their own SSL's ex_data.
    private let pointer: OpaquePointer
    /// A server's ALPN preference in wire format behind a length byte, read by the select callback (its `arg`);
    /// owned here and freed after the `SSL_CTX`.
    private var serverALPN: UnsafeMutablePointer<UInt8>?
    /// Which side of the handshake this context serves.
    package let role: Role
    /// The client certificate and key sent when a server asks for one (client role; set while building).
    package private(set) var clientIdentity: OpenSSLClientIdentity?
    /// Whether a CertificateRequest ends the handshake when no identity is configured (client role).
    package private(set) var requiresIdentityWhenAsked = true

    /// Client or server.
    package enum Role: Sendable { case client, server }

    /// Where a client's trust anchors come from.
    package enum Trust: Sendable, Hashable {
        /// OpenSSL's default verify paths (Debian: `/etc/ssl/certs`).
        case system
        /// The PEM certificates given, either alone or added to the system store.
        case pem(String, addingToSystem: Bool)
    }

    /// A TLS protocol version ShopKit speaks (never below 1.2).
    package enum ProtocolVersion: Sendable, Hashable {
        /// TLS 1.0: only for test *servers* (the "server speaks only TLS 1.0" vector); a client floor is
        /// never lower than TLS 1.2.
        case tls10
        case tls12, tls13

        var openSSLValue: Int32 {
            switch self {
            case .tls10: return TLS1_VERSION
            case .tls12: return TLS1_2_VERSION
            case .tls13: return TLS1_3_VERSION
            }
        }
    }

    private init(role: Role, method: OpaquePointer?) throws(OpenSSLError) {
        OpenSSLError.clearQueue()
        guard let method, let context = SSL_CTX_new(method) else { throw OpenSSLError.drain("SSL_CTX_new") }
        self.pointer = context
        self.role = role
    }

    deinit {
        SSL_CTX_free(pointer)
        serverALPN?.deallocate()
    }

    /// ALPN protocol names in wire format (each behind its length byte); names must be 1–255 bytes.
    static func alpnWireFormat(_ protocols: [String]) throws(OpenSSLError) -> [UInt8] {
        var wire: [UInt8] = []
        for name in protocols {
            let bytes = Array(name.utf8)
            guard (1...255).contains(bytes.count) else {
                throw OpenSSLError(operation: "ALPN", queue: ["an ALPN protocol name must be 1 to 255 bytes"])
            }
            wire.append(UInt8(bytes.count))
            wire += bytes
        }
        return wire
    }

    /// Calls `body` with the borrowed `SSL_CTX`; the pointer must not escape the closure.
    func withContext<T, E: Error>(_ body: (OpaquePointer) throws(E) -> T) throws(E) -> T { try body(pointer) }

    /// A client context: peer verification on (`SSL_VERIFY_PEER`), the given trust, the protocol floor, a
    /// security level of at least ``minimumClientSecurityLevel`` (a higher system setting is kept), ALPN
    /// offering `alpn` in order (none when empty), and client-side session caching handed to each
    /// connection's `onNewSession` (OpenSSL keeps no internal client cache).
    ///
    /// With `identity`, the client sends that certificate chain when the server asks for one (mutual TLS). When a
    /// server asks, the certificate callback records its CA names on the connection
    /// (`OpenSSLConnection.clientCertificateRequest`) and ends the handshake instead of sending a certificate the
    /// server would refuse: none configured (unless `requiresIdentityWhenAsked` is false), an expired or not yet
    /// valid one, or one from a CA the server does not name.
    ///
    /// Verification runs `openSSLVerifyCallback`, which hands the chain OpenSSL verified to the connection's
    /// `chainCheck` (the pins) at depth 0, after OpenSSL's checks passed, so a refusal ends the handshake before the
    /// client's certificate is sent.
    ///
    /// - Warning: Verification cannot be switched off here: there is deliberately no option for it.
    package static func client(
        trust: Trust, minimumVersion: ProtocolVersion, alpn: [String] = ["http/1.1"],
        identity: OpenSSLClientIdentity? = nil, requiresIdentityWhenAsked: Bool = true,
        tls12CipherSuites: TLS12CipherSuites = .forwardSecretAEAD, maximumVersion: ProtocolVersion? = nil
    ) throws(OpenSSLError) -> OpenSSLContext {
        let protocols = try alpnWireFormat(alpn)
        let context = try OpenSSLContext(role: .client, method: TLS_client_method())
        context.clientIdentity = identity
        context.requiresIdentityWhenAsked = requiresIdentityWhenAsked
        try context.applyCommon(minimumVersion: minimumVersion == .tls10 ? .tls12 : minimumVersion)
        if let maximumVersion {
            try context.withContext { ctx throws(OpenSSLError) in
                try check(
                    shopkit_SSL_CTX_set_max_proto_version(ctx, maximumVersion.openSSLValue),
                    "SSL_CTX_set_max_proto_version")
            }
        }
        context.raiseSecurityLevel(to: minimumClientSecurityLevel)
        try context.withContext { ctx throws(OpenSSLError) in
            try check(SSL_CTX_set_cipher_list(ctx, tls12CipherSuites.cipherList), "SSL_CTX_set_cipher_list")
            switch trust {
            case .system:
                try check(SSL_CTX_set_default_verify_paths(ctx), "SSL_CTX_set_default_verify_paths")
            case .pem(let pem, let addingToSystem):
                if addingToSystem {
                    try check(SSL_CTX_set_default_verify_paths(ctx), "SSL_CTX_set_default_verify_paths")
                }
                let anchors = try OpenSSLCertificate.parsePEM(pem)
                guard let store = SSL_CTX_get_cert_store(ctx) else { throw OpenSSLError.drain("SSL_CTX_get_cert_store") }
                for anchor in anchors {
                    // X509_STORE_add_cert takes its own reference; `anchor` keeps ours.
                    try anchor.withX509 { x509 throws(OpenSSLError) in
                        try check(X509_STORE_add_cert(store, x509), "X509_STORE_add_cert")
                    }
                }
            }
            // The callback runs each connection's pin check after OpenSSL's own checks, and can only refuse more.
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, openSSLVerifyCallback)
            try identity?.install(in: ctx)
            SSL_CTX_set_cert_cb(ctx, openSSLCertificateRequestCallback, nil)
            _ = shopkit_SSL_CTX_set_session_cache_mode(
                ctx, Int(SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE))
            SSL_CTX_sess_set_new_cb(ctx, openSSLNewSessionCallback)
            // SSL_CTX_set_alpn_protos returns 0 on success.
            if !protocols.isEmpty, SSL_CTX_set_alpn_protos(ctx, protocols, UInt32(protocols.count)) != 0 {
                throw OpenSSLError.drain("SSL_CTX_set_alpn_protos")
            }
        }
        return context
    }

    /// A server context (tests, demo): the certificate chain as given (leaf first; extra certificates are sent
    /// exactly in the given order, so tests can send unrelated or misordered ones), the private key, ALPN
    /// choosing the first of `alpn` that the client offers (none if it offers none of them), and TLS 1.3
    /// session tickets on so clients can resume.
    ///
    /// - Parameter maximumVersion: caps the server's protocol (tests use `.tls12` to exercise TLS 1.2 clients).
    /// - Parameter securityLevel: lowers the *server's* OpenSSL security level so tests can serve deliberately
    ///   weak certificates (RSA 1024, SHA-1) and check that clients refuse them. Leave nil otherwise.
    /// - Parameter clientVerification: makes the server require a client certificate chaining to these CAs
    ///   (`SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT`): a missing or refused one ends the handshake with an
    ///   alert, as strict mutual-TLS servers do.
    /// - Warning: `securityLevel` exists for the security tests only; client contexts have no such knob.
    package static func server(
        certificateChainPEM: String, privateKeyPEM: String, minimumVersion: ProtocolVersion = .tls12,
        maximumVersion: ProtocolVersion? = nil, securityLevel: Int? = nil, alpn: [String] = ["http/1.1"],
        clientVerification: ClientVerification? = nil
    ) throws(OpenSSLError) -> OpenSSLContext {
        let context = try OpenSSLContext(role: .server, method: TLS_server_method())
        let wire = try alpnWireFormat(alpn)
        guard wire.count <= 255 else {
            throw OpenSSLError(operation: "ALPN", queue: ["the server's ALPN list is longer than 255 bytes"])
        }
        let preference = UnsafeMutablePointer<UInt8>.allocate(capacity: wire.count + 1)
        preference[0] = UInt8(truncatingIfNeeded: wire.count)
        for (index, byte) in wire.enumerated() { preference[index + 1] = byte }
        context.serverALPN = preference
        try context.applyCommon(minimumVersion: minimumVersion)
        if let maximumVersion {
            try context.withContext { ctx throws(OpenSSLError) in
                try check(
                    shopkit_SSL_CTX_set_max_proto_version(ctx, maximumVersion.openSSLValue),
                    "SSL_CTX_set_max_proto_version")
            }
        }
        if let securityLevel { context.withContext { SSL_CTX_set_security_level($0, Int32(securityLevel)) } }
        let chain = try OpenSSLCertificate.parsePEM(certificateChainPEM)
        let key = try OpenSSLKey.privateKey(pem: privateKeyPEM)
        try context.withContext { ctx throws(OpenSSLError) in
            try chain[0].withX509 { x509 throws(OpenSSLError) in
                try check(SSL_CTX_use_certificate(ctx, x509), "SSL_CTX_use_certificate")
            }
            for extra in chain.dropFirst() {
                try extra.withX509 { x509 throws(OpenSSLError) in
                    // add_extra_chain_cert takes over a reference on success: give it one of its own.
                    X509_up_ref(x509)
                    if shopkit_SSL_CTX_add_extra_chain_cert(ctx, x509) != 1 {
                        X509_free(x509)
                        throw OpenSSLError.drain("SSL_CTX_add_extra_chain_cert")
                    }
                }
            }
            try key.withKey { pkey throws(OpenSSLError) in
                try check(SSL_CTX_use_PrivateKey(ctx, pkey), "SSL_CTX_use_PrivateKey")
            }
            try check(SSL_CTX_check_private_key(ctx), "SSL_CTX_check_private_key (key does not match the certificate)")
            let sessionContext = Array("ShopKit".utf8)
            try check(
                SSL_CTX_set_session_id_context(ctx, sessionContext, UInt32(sessionContext.count)),
                "SSL_CTX_set_session_id_context")
            SSL_CTX_set_alpn_select_cb(ctx, openSSLALPNSelectCallback, UnsafeMutableRawPointer(preference))
            if let clientVerification { try clientVerification.install(in: ctx) }
        }
        return context
    }

    /// A server's demand for client certificates (test servers): the CAs they must chain to, and whether the
    /// CertificateRequest names them.
    package struct ClientVerification: Sendable {
        /// PEM certificates client chains must lead to.
        package var trustedCAsPEM: String
        /// Whether the CertificateRequest lists the CAs' names (servers may leave the list empty).
        package var namesCAs: Bool

        package init(trustedCAsPEM: String, namesCAs: Bool = true) {
            self.trustedCAsPEM = trustedCAsPEM
            self.namesCAs = namesCAs
        }

        func install(in ctx: OpaquePointer) throws(OpenSSLError) {
            guard let store = SSL_CTX_get_cert_store(ctx) else { throw OpenSSLError.drain("SSL_CTX_get_cert_store") }
            for anchor in try OpenSSLCertificate.parsePEM(trustedCAsPEM) {
                try anchor.withX509 { x509 throws(OpenSSLError) in
                    try check(X509_STORE_add_cert(store, x509), "X509_STORE_add_cert")
                    if namesCAs { try check(SSL_CTX_add_client_CA(ctx, x509), "SSL_CTX_add_client_CA") }
                }
            }
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        }
    }

    /// The TLS 1.2 cipher suites a client offers (`SSL_CTX_set_cipher_list`; TLS 1.3 suites all have forward
    /// secrecy and AEAD, and are left at OpenSSL's default).
    package enum TLS12CipherSuites: Sendable, Hashable {
        /// ECDHE key exchange with AEAD ciphers only (Mozilla "intermediate" without its DHE suites).
        case forwardSecretAEAD
        /// The above, then static RSA key exchange (`kRSA`, no forward secrecy) for legacy servers.
        case allowingStaticRSA

        static let ecdheAEAD = [
            "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
            "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
        ]
        static let staticRSA = [
            "AES128-GCM-SHA256", "AES256-GCM-SHA384", "AES128-SHA256", "AES256-SHA256", "AES128-SHA", "AES256-SHA",
        ]

        /// The OpenSSL cipher list, most preferred first.
        var cipherList: String {
            switch self {
            case .forwardSecretAEAD: return Self.ecdheAEAD.joined(separator: ":")
            case .allowingStaticRSA: return (Self.ecdheAEAD + Self.staticRSA).joined(separator: ":")
            }
        }
    }

    /// The lowest OpenSSL security level a client context runs at: 2 refuses keys under 112 bits of security
    /// (RSA below 2048) and SHA-1 signatures. Debian builds OpenSSL with 2 as its default, upstream OpenSSL 3
    /// with 1, which accepts both.
    package static let minimumClientSecurityLevel = 2

    /// The context's OpenSSL security level (`SSL_CTX_get_security_level`).
    package var securityLevel: Int { withContext { Int(SSL_CTX_get_security_level($0)) } }

    /// Raises the security level to `level` if it is lower; never lowers it.
    func raiseSecurityLevel(to level: Int) {
        withContext { ctx in
            if SSL_CTX_get_security_level(ctx) < Int32(level) { SSL_CTX_set_security_level(ctx, Int32(level)) }
        }
    }

    private func applyCommon(minimumVersion: ProtocolVersion) throws(OpenSSLError) {
        try withContext { ctx throws(OpenSSLError) in
            try check(
                shopkit_SSL_CTX_set_min_proto_version(ctx, minimumVersion.openSSLValue), "SSL_CTX_set_min_proto_version")
            _ = SSL_CTX_set_options(ctx, shopkit_SSL_OP_NO_RENEGOTIATION() | shopkit_SSL_OP_NO_COMPRESSION())
        }
    }
}

/// Throws the drained error queue unless `result` is 1.
@inline(__always)
func check(_ result: Int32, _ operation: String) throws(OpenSSLError) {
    guard result == 1 else { throw OpenSSLError.drain(operation) }
}

/// Server ALPN: the first protocol of the server's preference (`arg`: a length byte, then the list in wire
/// format) that the client offers; without one, the handshake goes on without ALPN.
private let openSSLALPNSelectCallback:
    @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
        UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
    ) -> Int32 = { _, out, outLength, input, inputLength, arg in
        guard let input, let arg else { return SSL_TLSEXT_ERR_NOACK }
        let preference = arg.assumingMemoryBound(to: UInt8.self)
        let preferenceLength = Int(preference[0])
        var serverIndex = 0
        while serverIndex < preferenceLength {
            let wantedLength = Int(preference[1 + serverIndex])
            let wanted = preference + 2 + serverIndex
            var index = 0
            let total = Int(inputLength)
            while index < total {
                let length = Int(input[index])
                let start = index + 1
                guard start + length <= total else { break }
                if length == wantedLength && (0..<length).allSatisfy({ input[start + $0] == wanted[$0] }) {
                    out?.pointee = input + start
                    outLength?.pointee = UInt8(length)
                    return SSL_TLSEXT_ERR_OK
                }
                index = start + length
            }
            serverIndex += 1 + wantedLength
        }
        return SSL_TLSEXT_ERR_NOACK
    }
