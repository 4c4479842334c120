import COpenSSL
import Foundation

/// What a server's CertificateRequest asked for, and how the client answered it (client role).
package struct ClientCertificateRequest: Sendable, Equatable {
    /// How the client answered.
    package enum Answer: Sendable, Equatable {
        /// The configured identity was sent; `subject` is its leaf's subject (RFC 2253).
        case sent(subject: String)
        /// No identity is configured: the handshake was ended here, or continued without a certificate when the
        /// context allows that.
        case noIdentity
        /// The configured identity was not sent and the handshake ended: `reason` says why (expired, not yet
        /// valid, or issued by none of the CAs the server accepts).
        case refused(reason: String)
    }

    /// The CA names the server accepts client certificates from (RFC 2253), in its order; empty when it named none.
    package let acceptedIssuers: [String]
    /// How the client answered.
    package let answer: Answer
}

extension OpenSSLContext {
    /// The answer to a CertificateRequest whose CA names are `names` (borrowed `X509_NAME`s), and whether the
    /// handshake goes on.
    func answerCertificateRequest(names: [OpaquePointer]) -> (ClientCertificateRequest, proceed: Bool) {
        let issuers = names.map(Self.rfc2253)
        guard let identity = clientIdentity else {
            return (ClientCertificateRequest(acceptedIssuers: issuers, answer: .noIdentity), !requiresIdentityWhenAsked)
        }
        if let problem = Self.problem(with: identity, acceptedNames: names, issuers: issuers) {
            return (ClientCertificateRequest(acceptedIssuers: issuers, answer: .refused(reason: problem)), false)
        }
        let subject = (try? identity.chain[0].info.subject) ?? ""
        return (ClientCertificateRequest(acceptedIssuers: issuers, answer: .sent(subject: subject)), true)
    }

    /// Why the server would refuse `identity`, found before sending it: the leaf is outside its validity dates,
    /// or (when the server names CAs) no certificate of the chain is issued by, or is, one of them.
    private static func problem(
        with identity: OpenSSLClientIdentity, acceptedNames: [OpaquePointer], issuers: [String]
    ) -> String? {
        let leaf = identity.chain[0]
        let subject = (try? leaf.info.subject) ?? "the client certificate"
        let (expired, notYetValid) = leaf.withX509 { x509 in
            (X509_cmp_current_time(X509_get0_notAfter(x509)) < 0, X509_cmp_current_time(X509_get0_notBefore(x509)) > 0)
        }
        if expired {
            let end = (try? leaf.info.notAfter.ISO8601Format()) ?? "?"
            return "the client certificate \(subject) expired on \(end): renew it"
        }
        if notYetValid {
            let start = (try? leaf.info.notBefore.ISO8601Format()) ?? "?"
            return "the client certificate \(subject) is not valid before \(start): check the clock or the certificate"
        }
        guard !acceptedNames.isEmpty else { return nil }
        let accepted = identity.chain.contains { certificate in
            certificate.withX509 { x509 in
                acceptedNames.contains { name in
                    X509_NAME_cmp(X509_get_issuer_name(x509), name) == 0
                        || X509_NAME_cmp(X509_get_subject_name(x509), name) == 0
                }
            }
        }
        guard !accepted else { return nil }
        let issuer = (try? leaf.info.issuer) ?? "?"
        return "the server accepts client certificates issued by \(issuers.joined(separator: "; ")) only, and the "
            + "client certificate \(subject) (issued by \(issuer)) chains to none of them: use an identity from one "
            + "of those CAs"
    }

    private static func rfc2253(_ name: OpaquePointer) -> String {
        withWritableBIO { bio in _ = X509_NAME_print_ex(bio, name, 0, shopkit_XN_FLAG_RFC2253()) }
    }
}

/// OpenSSL's certificate callback (`SSL_CTX_set_cert_cb`), which a client runs when the server sends a
/// CertificateRequest: records the request and the answer on the connection; returning 0 ends the handshake.
let openSSLCertificateRequestCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = { ssl, _ in
    guard let ssl, let raw = SSL_get_ex_data(ssl, connectionIndex) else { return 0 }
    // The callback only runs inside a step the connection itself called, so it is alive.
    let connection = Unmanaged<OpenSSLConnection>.fromOpaque(raw).takeUnretainedValue()
    var names: [OpaquePointer] = []
    if let stack = SSL_get_client_CA_list(ssl) {
        for index in 0..<shopkit_sk_X509_NAME_num(stack) {
            if let name = shopkit_sk_X509_NAME_value(stack, index) { names.append(name) }
        }
    }
    let (request, proceed) = connection.context.answerCertificateRequest(names: names)
    connection.clientCertificateRequest = request
    return proceed ? 1 : 0
}
