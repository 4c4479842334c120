import COpenSSL
import Foundation
import ShopKitPinning

/// What a client connection does with the server's SCTs: which logs' keys check them, at which instant, and the
/// policy that judges them.
package struct CertificateTransparencyCheck {
    /// The logs whose keys check each SCT's signature.
    package var logs: OpenSSLCTLogStore
    /// The instant SCT timestamps are compared with (an SCT from the future is invalid).
    package var now: Date
    /// Judges the SCTs (every source, each validated); false ends the handshake before the client's certificate
    /// is sent. Called once per full handshake, inside a step, on the connection's thread.
    package var judge: ([SignedCertificateTimestamp]) -> Bool

    package init(logs: OpenSSLCTLogStore, now: Date, judge: @escaping ([SignedCertificateTimestamp]) -> Bool) {
        self.logs = logs
        self.now = now
        self.judge = judge
    }
}

extension OpenSSLConnection {
    /// Asks the server for SCTs (the TLS extension, and a stapled OCSP response, which may carry them) and has
    /// `ctCheck` judge every SCT of the verified chain's leaf once OpenSSL verified the chain and the name
    /// (`SSL_set_ct_validation_callback`). On a resumed session OpenSSL checks nothing, so `ctCheck` is not called.
    ///
    /// OpenSSL skips the callback for a chain of one certificate (a leaf trusted directly, outside the Web PKI):
    /// ``certificateTransparencyJudged`` then stays false.
    package func requestCertificateTransparency(_ ctCheck: CertificateTransparencyCheck) throws(OpenSSLError) {
        certificateTransparency = ctCheck
        let arg = Unmanaged.passUnretained(self).toOpaque()
        try withSSL { ssl throws(OpenSSLError) in
            try check(SSL_set_ct_validation_callback(ssl, openSSLCTCallback, arg), "SSL_set_ct_validation_callback")
        }
    }

    /// Whether the SCT check ran (it runs once, on a full handshake whose chain OpenSSL verified).
    package var certificateTransparencyJudged: Bool { ctJudgement != nil }

    /// The SCTs the check judged (validated against its logs), once it ran.
    package var judgedSCTs: [SignedCertificateTimestamp]? { ctJudgement?.timestamps }

    /// The SCTs the server sent, each as OpenSSL left it (validated only if the CT check ran): for diagnostics and
    /// for connections whose check did not run.
    package func peerSCTs() -> [SignedCertificateTimestamp] {
        withSSL { ssl in
            guard let stack = SSL_get0_peer_scts(ssl) else { return [] }
            return Self.timestamps(in: stack)
        }
    }

    /// The connection's SCTs, validated against `check`'s logs at its instant, judged by it.
    fileprivate func judgeSCTs(_ policyContext: OpaquePointer?, _ stack: OpaquePointer?) -> Bool {
        if let ctJudgement { return ctJudgement.passed }
        guard let check = certificateTransparency else { return true }
        let timestamps = validatedSCTs(policyContext, stack, check: check)
        let passed = check.judge(timestamps)
        ctJudgement = (passed, timestamps)
        // PEM only for the failure report (the verify result is no longer OK once the SCTs are refused).
        if !passed {
            refusedChainPEM = withSSL { ssl in
                guard let chain = SSL_get0_verified_chain(ssl) else { return [] }
                return (0..<shopkit_sk_X509_num(chain)).compactMap { index in
                    shopkit_sk_X509_value(chain, index).map { OpenSSLCertificate(borrowing: $0).pem }
                }
            }
        }
        return passed
    }

    /// The SCTs of `stack`, each checked again with `check`'s log store and instant: OpenSSL's own pass used the
    /// context's store (empty), and a log list can change while the context lives. An SCT the store found valid
    /// before, for the same certificate and issuer, is not checked again (``OpenSSLCTLogStore``).
    private func validatedSCTs(_ policyContext: OpaquePointer?, _ stack: OpaquePointer?, check: CertificateTransparencyCheck)
        -> [SignedCertificateTimestamp]
    {
        guard let stack else { return [] }
        guard let policyContext, let certificate = CT_POLICY_EVAL_CTX_get0_cert(policyContext) else {
            return Self.timestamps(in: stack)
        }
        let issuer = CT_POLICY_EVAL_CTX_get0_issuer(policyContext)
        let certificateDigest = (try? sha256(OpenSSLCertificate(borrowing: certificate).derBytes)) ?? []
        let issuerDigest = issuer.flatMap { try? sha256(OpenSSLCertificate(borrowing: $0).derBytes) } ?? []
        var ours: OpaquePointer?
        defer { if let ours { CT_POLICY_EVAL_CTX_free(ours) } }
        var timestamps: [SignedCertificateTimestamp] = []
        for index in 0..<shopkit_sk_SCT_num(stack) {
            guard let sct = shopkit_sk_SCT_value(stack, index) else { continue }
            let read = SignedCertificateTimestamp(reading: sct)
            let key = OpenSSLCTLogStore.ValidatedSCT(
                certificate: certificateDigest, issuer: issuerDigest, source: read.source, sct: read.serialized)
            if !certificateDigest.isEmpty, !read.serialized.isEmpty, check.logs.wasValidated(key) {
                timestamps.append(read.with(status: .valid))
                continue
            }
            if ours == nil {
                guard let context = CT_POLICY_EVAL_CTX_new() else { continue }
                _ = CT_POLICY_EVAL_CTX_set1_cert(context, certificate)
                if let issuer { _ = CT_POLICY_EVAL_CTX_set1_issuer(context, issuer) }
                check.logs.withStore { CT_POLICY_EVAL_CTX_set_shared_CTLOG_STORE(context, $0) }
                CT_POLICY_EVAL_CTX_set_time(context, UInt64(max(0, check.now.timeIntervalSince1970 * 1000)))
                ours = context
            }
            // 1 valid, 0 not (the status says why), < 0 an internal failure (the status stays unverified).
            _ = SCT_validate(sct, ours)
            let validated = SignedCertificateTimestamp(reading: sct)
            if validated.status == .valid, !certificateDigest.isEmpty, !validated.serialized.isEmpty {
                check.logs.recordValid(key)
            }
            timestamps.append(validated)
        }
        OpenSSLError.clearQueue()
        return timestamps
    }

    /// Each SCT of `stack` with the status OpenSSL recorded.
    static func timestamps(in stack: OpaquePointer) -> [SignedCertificateTimestamp] {
        (0..<shopkit_sk_SCT_num(stack)).compactMap { index in
            shopkit_sk_SCT_value(stack, index).map(SignedCertificateTimestamp.init(reading:))
        }
    }
}

extension SignedCertificateTimestamp {
    /// The same SCT with another status.
    func with(status: Status) -> Self {
        Self(
            version: version, logID: logID, timestamp: timestamp, extensions: extensions, source: source, status: status,
            serialized: serialized)
    }

    /// What OpenSSL read of `sct` (borrowed) and the status its last validation left.
    init(reading sct: OpaquePointer) {
        var idPointer: UnsafeMutablePointer<UInt8>?
        let idLength = SCT_get0_log_id(sct, &idPointer)
        let logID = idPointer.map { Array(UnsafeBufferPointer(start: $0, count: Int(idLength))) } ?? []
        var extensionsPointer: UnsafeMutablePointer<UInt8>?
        let extensionsLength = SCT_get0_extensions(sct, &extensionsPointer)
        let extensions = extensionsPointer.map { Array(UnsafeBufferPointer(start: $0, count: Int(extensionsLength))) } ?? []
        var serialized: [UInt8] = []
        var encoded: UnsafeMutablePointer<UInt8>?
        let length = i2o_SCT(sct, &encoded)
        if length > 0, let encoded {
            serialized = Array(UnsafeBufferPointer(start: encoded, count: Int(length)))
            shopkit_OPENSSL_free(encoded)
        }
        OpenSSLError.clearQueue()
        let source: Source
        switch SCT_get_source(sct) {
        case SCT_SOURCE_TLS_EXTENSION: source = .tlsExtension
        case SCT_SOURCE_OCSP_STAPLED_RESPONSE: source = .ocsp
        default: source = .embedded
        }
        let status: Status
        switch SCT_get_validation_status(sct) {
        case SCT_VALIDATION_STATUS_VALID: status = .valid
        case SCT_VALIDATION_STATUS_INVALID: status = .invalid
        case SCT_VALIDATION_STATUS_UNKNOWN_LOG: status = .unknownLog
        case SCT_VALIDATION_STATUS_UNKNOWN_VERSION: status = .unknownVersion
        default: status = .unverified
        }
        self.init(
            version: Int(SCT_get_version(sct).rawValue), logID: logID,
            timestamp: Self.date(milliseconds: SCT_get_timestamp(sct)), extensions: extensions,
            source: source, status: status, serialized: serialized)
    }
}

/// OpenSSL's CT validation callback for client connections that asked for SCTs: hands them to the connection's
/// ``CertificateTransparencyCheck``. Returning 0 ends the handshake (`SSL_R_CALLBACK_FAILED`, verify result
/// `X509_V_ERR_NO_VALID_SCTS`) before the client's certificate is sent.
let openSSLCTCallback: @convention(c) (OpaquePointer?, OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = {
    policyContext, stack, arg in
    guard let arg else { return 0 }
    // The callback runs only inside a handshake step the connection itself called, so it is alive.
    let connection = Unmanaged<OpenSSLConnection>.fromOpaque(arg).takeUnretainedValue()
    return connection.judgeSCTs(policyContext, stack) ? 1 : 0
}

/// An SCT list in its TLS encoding (`SignedCertificateTimestampList`, as in the certificate extension and the TLS
/// extension), read by OpenSSL (`o2i_SCT_LIST`): for diagnostics and the fuzz target.
package enum SCTListParser {
    /// The SCTs of `bytes` (not validated), and the list encoded again by OpenSSL (`i2o_SCT_LIST`; nil when it
    /// cannot encode what it read: an SCT with an empty signature parses but does not encode); nil when OpenSSL
    /// refuses the bytes.
    package static func parse(_ bytes: [UInt8]) -> (timestamps: [SignedCertificateTimestamp], reencoded: [UInt8]?)? {
        OpenSSLError.clearQueue()
        defer { OpenSSLError.clearQueue() }
        return bytes.withUnsafeBufferPointer { buffer -> ([SignedCertificateTimestamp], [UInt8]?)? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let list = o2i_SCT_LIST(nil, &cursor, buffer.count) else { return nil }
            defer { SCT_LIST_free(list) }
            var encoded: UnsafeMutablePointer<UInt8>?
            let length = i2o_SCT_LIST(list, &encoded)
            var reencoded: [UInt8]?
            if length > 0, let encoded {
                reencoded = Array(UnsafeBufferPointer(start: encoded, count: Int(length)))
                shopkit_OPENSSL_free(encoded)
            }
            return (OpenSSLConnection.timestamps(in: list), reencoded)
        }
    }
}
