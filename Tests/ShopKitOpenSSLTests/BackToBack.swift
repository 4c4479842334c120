import ShopKitOpenSSL
import TestSupport

/// A client and a server connection wired back to back over their memory BIOs (no sockets).
struct BackToBack {
    let client: OpenSSLConnection
    let server: OpenSSLConnection

    init(
        serverChain: [String], serverKey: String, trust: [String] = ["root"], host: String = "localhost",
        serverSecurityLevel: Int? = nil
    ) throws {
        let serverContext = try OpenSSLContext.server(
            certificateChainPEM: TestCertificates.chain(serverChain),
            privateKeyPEM: TestCertificates.privateKey(serverKey), securityLevel: serverSecurityLevel)
        let clientContext = try OpenSSLContext.client(
            trust: .pem(TestCertificates.chain(trust), addingToSystem: false), minimumVersion: .tls12)
        client = try OpenSSLConnection.client(context: clientContext, host: host)
        server = try OpenSSLConnection.server(context: serverContext)
    }

    /// Runs both handshakes, moving ciphertext both ways, until neither side makes progress.
    /// Returns the client's last result.
    @discardableResult
    func handshake() -> TLSStepResult {
        var clientResult = client.handshake()
        var serverResult = TLSStepResult.wantRead
        for _ in 0..<20 {
            var moved = false
            if let bytes = client.takeCiphertext() { server.feedCiphertext(bytes); moved = true }
            if serverResult != .complete, !isFailure(serverResult) { serverResult = server.handshake() }
            if let bytes = server.takeCiphertext() { client.feedCiphertext(bytes); moved = true }
            if clientResult != .complete, !isFailure(clientResult) { clientResult = client.handshake() }
            if !moved { break }
        }
        return clientResult
    }

    /// Sends `text` from `from` to `to` and returns what `to` decrypted.
    func send(_ text: String, from: OpenSSLConnection, to: OpenSSLConnection) -> String {
        _ = Array(text.utf8).withUnsafeBytes { from.writePlaintext($0) }
        if let bytes = from.takeCiphertext() { to.feedCiphertext(bytes) }
        var plaintext: [UInt8] = []
        _ = to.readPlaintext(into: &plaintext)
        if let bytes = to.takeCiphertext() { from.feedCiphertext(bytes) }
        return String(decoding: plaintext, as: UTF8.self)
    }

    private func isFailure(_ result: TLSStepResult) -> Bool {
        if case .failed = result { return true }
        return false
    }
}
