import Foundation
import ShopKitAPI

/// Tells an item that holds a client certificate's private key (``CredentialVault/storeClientIdentity(certificateChainPEM:privateKeyPEM:as:policy:)``
/// stores the PEM text as the item's access token) from one that holds tokens, so that a tool never prints a key
/// where it would print a token.
///
/// Package access: for ShopKit's `token-store`.
package enum PrivateKeyItem {
    /// Whether `tokens` holds a PEM private key: a `-----BEGIN … PRIVATE KEY-----` line (PKCS#8, RSA, EC,
    /// encrypted or not) in the access or refresh token.
    package static func holdsPrivateKey(_ tokens: AuthTokens) -> Bool {
        [tokens.accessToken, tokens.refreshToken ?? ""].contains { text in
            guard let begin = text.range(of: "-----BEGIN ") else { return false }
            return text[begin.upperBound...].range(of: "PRIVATE KEY-----") != nil
        }
    }
}

/// A yes-or-no question asked on the controlling terminal, for an action that must not happen by accident or
/// from a script (printing a private key).
///
/// Package access: for ShopKit's `token-store`.
package enum TerminalConfirmation {
    /// Asks `question` on the controlling terminal (`/dev/tty`, never standard input) and reads one line: `true`
    /// only when it is exactly `expected` (surrounding spaces ignored). Input typed before the question is shown
    /// is discarded, so it cannot answer it.
    ///
    /// - Throws: `.io` when there is no terminal (cron, CI, a pipe-only environment): nothing can be confirmed.
    package static func ask(_ question: String, expected: String = "yes", terminalPath: String = "/dev/tty")
        async throws(CredentialError) -> Bool
    {
        try await TerminalIO.offPool { () throws(CredentialError) -> Bool in
            let fd = open(terminalPath, O_RDWR | O_NOCTTY | O_CLOEXEC)
            guard fd >= 0 else { throw .io("cannot open the terminal \(terminalPath)") }
            defer { close(fd) }
            guard isatty(fd) == 1 else { throw .io("\(terminalPath) is not a terminal") }
            _ = tcflush(fd, TCIFLUSH)
            TerminalIO.writeAll(fd, question)
            var line = [UInt8](repeating: 0, count: 256)
            let read = line.withUnsafeMutableBytes { TerminalIO.readBounded(fd, into: $0, untilNewline: true) }
            guard case .bytes(let count) = read else { return false }
            let answer = String(decoding: line[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return answer == expected
        }
    }
}
