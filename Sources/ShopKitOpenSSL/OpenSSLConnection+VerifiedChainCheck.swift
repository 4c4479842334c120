import COpenSSL
import ShopKitPinning

extension OpenSSLConnection {
    /// Runs the connection's ``chainCheck`` on the chain OpenSSL just verified; called from OpenSSL's verify
    /// callback at depth 0 once its own checks passed. Returns whether verification may go on. The check runs once
    /// per connection: OpenSSL can call the callback at depth 0 again (e.g. for a later check that fails), and the
    /// first answer stands.
    fileprivate func checkVerifiedChain(_ storeContext: OpaquePointer) -> Bool {
        if let chainCheckPassed { return chainCheckPassed }
        guard let chainCheck else { return true }
        let passed: Bool
        do {
            guard let stack = X509_STORE_CTX_get0_chain(storeContext) else {
                throw OpenSSLError.drain("X509_STORE_CTX_get0_chain")
            }
            var certificates: [OpenSSLCertificate] = []
            var infos: [CertificateInfo] = []
            for index in 0..<shopkit_sk_X509_num(stack) {
                guard let x509 = shopkit_sk_X509_value(stack, index) else { continue }
                let certificate = OpenSSLCertificate(borrowing: x509)
                certificates.append(certificate)
                infos.append(try certificate.info)
            }
            passed = !infos.isEmpty && chainCheck(VerifiedChain(verifiedCertificates: infos))
            // PEM only for the failure report: a passing handshake does not pay for it.
            if !passed { refusedChainPEM = certificates.map(\.pem) }
        } catch {
            // A chain whose certificates cannot be described cannot be checked against pins: refuse it.
            passed = false
        }
        chainCheckPassed = passed
        return passed
    }
}

/// OpenSSL's verify callback for client contexts (`SSL_CTX_set_verify`): at depth 0, once OpenSSL's own checks of
/// the chain and the name passed (`preverifyOK == 1`), runs the connection's ``OpenSSLConnection/chainCheck`` on
/// the chain OpenSSL built (`X509_STORE_CTX_get0_chain`). A refusal sets `X509_V_ERR_APPLICATION_VERIFICATION` and
/// returns 0, which ends the handshake at the server's Certificate message: before the client builds its own
/// Certificate message or signs anything.
///
/// - Warning: Never returns 1 when `preverifyOK` is 0: it only ever narrows OpenSSL's verdict.
let openSSLVerifyCallback: @convention(c) (Int32, OpaquePointer?) -> Int32 = { preverifyOK, storeContext in
    guard preverifyOK == 1 else { return preverifyOK == 0 ? 0 : preverifyOK }
    guard let storeContext, X509_STORE_CTX_get_error_depth(storeContext) == 0 else { return preverifyOK }
    guard let rawSSL = X509_STORE_CTX_get_ex_data(storeContext, SSL_get_ex_data_X509_STORE_CTX_idx()),
        let raw = SSL_get_ex_data(OpaquePointer(rawSSL), connectionIndex)
    else { return preverifyOK }
    // The callback only runs inside a handshake step the connection itself called, so it is alive.
    let connection = Unmanaged<OpenSSLConnection>.fromOpaque(raw).takeUnretainedValue()
    guard connection.checkVerifiedChain(storeContext) else {
        X509_STORE_CTX_set_error(storeContext, X509_V_ERR_APPLICATION_VERIFICATION)
        return 0
    }
    return 1
}
