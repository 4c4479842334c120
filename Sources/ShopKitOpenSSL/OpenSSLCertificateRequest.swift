import COpenSSL

/// A PKCS#10 certificate signing request (`X509_REQ`), owned: built for a key and a host, signed by the key.
///
/// Why a class: it is the single owner of a C object, freed in `deinit`.
package final class OpenSSLCertificateRequest {
    private let pointer: OpaquePointer

    /// A request for `key` naming `commonName` in the subject and `subjectAlternativeNames` (`DNS:…` or `IP:…`
    /// entries) in a requested subjectAltName extension, signed with `key` (SHA-256; Ed25519 signs as it must).
    ///
    /// - Parameter subjectAlternativeNames: entries already validated by the caller (a host name or an IP
    ///   address each): OpenSSL reads them as a config value, so a comma would start another entry.
    /// - Throws: `OpenSSLError` with OpenSSL's drained error queue.
    package init(key: OpenSSLKey, commonName: String, subjectAlternativeNames: [String]) throws(OpenSSLError) {
        OpenSSLError.clearQueue()
        guard let request = X509_REQ_new() else { throw OpenSSLError.drain("X509_REQ_new") }
        pointer = request
        guard X509_REQ_set_version(request, 0) == 1 else { throw OpenSSLError.drain("X509_REQ_set_version") }
        guard let subject = X509_REQ_get_subject_name(request),
            X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, commonName, -1, -1, 0) == 1
        else { throw OpenSSLError.drain("X509_NAME_add_entry_by_txt(CN)") }
        if !subjectAlternativeNames.isEmpty {
            try Self.addSubjectAltName(subjectAlternativeNames.joined(separator: ","), to: request)
        }
        try key.withKey { pkey throws(OpenSSLError) in
            guard X509_REQ_set_pubkey(request, pkey) == 1 else { throw OpenSSLError.drain("X509_REQ_set_pubkey") }
            // Ed25519 has its own digest: OpenSSL wants none given.
            let digest = EVP_PKEY_get_base_id(pkey) == EVP_PKEY_ED25519 ? nil : EVP_sha256()
            guard X509_REQ_sign(request, pkey, digest) > 0 else { throw OpenSSLError.drain("X509_REQ_sign") }
        }
    }

    deinit { X509_REQ_free(pointer) }

    /// The request as a PEM `CERTIFICATE REQUEST` block (public: it holds the public key and the names).
    package var pem: String {
        withWritableBIO { bio in _ = PEM_write_bio_X509_REQ(bio, pointer) }
    }

    private static func addSubjectAltName(_ value: String, to request: OpaquePointer) throws(OpenSSLError) {
        guard let extensionValue = X509V3_EXT_conf_nid(nil, nil, NID_subject_alt_name, value) else {
            throw OpenSSLError.drain("X509V3_EXT_conf_nid(subjectAltName)")
        }
        defer { X509_EXTENSION_free(extensionValue) }
        guard let stack = OPENSSL_sk_new_null() else { throw OpenSSLError.drain("OPENSSL_sk_new_null") }
        defer { OPENSSL_sk_free(stack) }
        guard OPENSSL_sk_push(stack, UnsafeRawPointer(extensionValue)) > 0,
            X509_REQ_add_extensions(request, stack) == 1
        else { throw OpenSSLError.drain("X509_REQ_add_extensions") }
    }
}
