import COpenSSL
import Foundation
import NIOConcurrencyHelpers
import ShopKitCore
import ShopKitPinning

/// Computes each certificate's `CertificateInfo` (SPKI pin, names, dates, key) once and caches it.
///
/// The key is the SHA-256 of the certificate's DER encoding, never a pointer (pointers are reused after a
/// free) and never SHA-1 (a colliding certificate must not inherit another one's pin). The cache is bounded:
/// when full the oldest entry goes, which costs only a recomputation.
final class CertificateInfoCache: Sendable {
    static let shared = CertificateInfoCache(capacity: 512)

    private let entries: NIOLockedValueBox<BoundedCache<[UInt8], CertificateInfo>>

    init(capacity: Int) { entries = NIOLockedValueBox(BoundedCache(capacity: capacity)) }

    /// The cached info for `certificate`, computing it on first sight.
    func info(for certificate: OpenSSLCertificate) throws(OpenSSLError) -> CertificateInfo {
        let key = try sha256(certificate.derBytes)
        if let hit = entries.withLockedValue({ $0[key] }) { return hit }
        let info = try certificate.withX509 { x509 throws(OpenSSLError) in try Self.makeInfo(x509) }
        entries.withLockedValue { $0.insert(info, for: key) }
        return info
    }

    /// How many certificates are cached (for tests).
    var count: Int { entries.withLockedValue { $0.count } }

    static func makeInfo(_ x509: OpaquePointer) throws(OpenSSLError) -> CertificateInfo {
        guard let key = X509_get0_pubkey(x509) else { throw OpenSSLError.drain("X509_get0_pubkey") }
        return CertificateInfo(
            spkiPin: try spkiPin(of: key),
            subject: rfc2253(X509_get_subject_name(x509)),
            issuer: rfc2253(X509_get_issuer_name(x509)),
            subjectAlternativeNames: subjectAlternativeNames(x509),
            notBefore: date(X509_get0_notBefore(x509)),
            notAfter: date(X509_get0_notAfter(x509)),
            keyDescription: keyDescription(key),
            signatureAlgorithm: String(cString: OBJ_nid2ln(X509_get_signature_nid(x509))))
    }

    /// SHA-256 over the DER `SubjectPublicKeyInfo` (`i2d_PUBKEY`) of a borrowed key.
    static func spkiPin(of key: OpaquePointer) throws(OpenSSLError) -> SPKIPin {
        let length = i2d_PUBKEY(key, nil)
        guard length > 0 else { throw OpenSSLError.drain("i2d_PUBKEY") }
        var der = [UInt8](repeating: 0, count: Int(length))
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_PUBKEY(key, &cursor)
        }
        do { return try SPKIPin(sha256: try sha256(der)) } catch {
            throw OpenSSLError(operation: "SPKI digest", queue: ["\(error)"])
        }
    }

    static func rfc2253(_ name: OpaquePointer?) -> String {
        guard let name else { return "" }
        return withWritableBIO { bio in _ = X509_NAME_print_ex(bio, name, 0, shopkit_XN_FLAG_RFC2253()) }
    }

    /// The subjectAltName entries, for display: DNS names and IP addresses as they are, the other kinds with
    /// a prefix (`email:`, `URI:`, `DirName:`, `RID:`, `othername:`, `X400Name`, `EdiPartyName`).
    ///
    /// The entry's type is checked before its value is read: only DNS, IP, email and URI values are
    /// ASN1 strings; the others are structures of their own and must never be read as one.
    static func subjectAlternativeNames(_ x509: OpaquePointer) -> [String] {
        guard let raw = X509_get_ext_d2i(x509, NID_subject_alt_name, nil, nil) else { return [] }
        let names = OpaquePointer(raw)
        defer { shopkit_GENERAL_NAMES_free(names) }
        var result: [String] = []
        for index in 0..<shopkit_sk_GENERAL_NAME_num(names) {
            guard let name = shopkit_sk_GENERAL_NAME_value(names, index) else { continue }
            var type: Int32 = -1
            guard let value = GENERAL_NAME_get0_value(name, &type) else { continue }
            switch type {
            case GEN_DNS: result.append(printable(stringBytes(value)))
            case GEN_IPADD: result.append(ipAddressText(stringBytes(value)))
            case GEN_EMAIL: result.append("email:" + printable(stringBytes(value)))
            case GEN_URI: result.append("URI:" + printable(stringBytes(value)))
            case GEN_DIRNAME: result.append("DirName:" + rfc2253(OpaquePointer(value)))
            case GEN_RID: result.append("RID:" + objectText(OpaquePointer(value)))
            case GEN_OTHERNAME:
                let typeID = value.assumingMemoryBound(to: OTHERNAME.self).pointee.type_id
                result.append("othername:" + objectText(typeID))
            case GEN_X400: result.append("X400Name")
            case GEN_EDIPARTY: result.append("EdiPartyName")
            default: continue
            }
        }
        return result
    }

    /// The bytes of a GENERAL_NAME value that is an ASN1 string (DNS, IP, email, URI only).
    private static func stringBytes(_ value: UnsafeMutableRawPointer) -> [UInt8] {
        let string = value.assumingMemoryBound(to: ASN1_STRING.self)
        let length = Int(ASN1_STRING_length(string))
        guard let data = ASN1_STRING_get0_data(string), length > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: length))
    }

    /// Text for display: printable ASCII as is, every other byte as `\xNN` (a certificate is attacker input).
    static func printable(_ bytes: [UInt8]) -> String {
        var text = ""
        for byte in bytes {
            if byte >= 0x20 && byte < 0x7f {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                text += "\\x" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16)
            }
        }
        return text
    }

    /// An ASN.1 object identifier in dotted form (`OBJ_obj2txt` with numeric output).
    private static func objectText(_ object: OpaquePointer?) -> String {
        guard let object else { return "" }
        var buffer = [CChar](repeating: 0, count: 128)
        let length = OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1)
        guard length > 0 else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func ipAddressText(_ bytes: [UInt8]) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        if bytes.count == 16 {
            var buffer = [CChar](repeating: 0, count: 64)
            let ok = bytes.withUnsafeBytes { inet_ntop(AF_INET6, $0.baseAddress, &buffer, 64) }
            if ok != nil { return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        }
        return bytes.map { String($0, radix: 16) }.joined(separator: ":")
    }

    static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date {
        var parts = tm()
        guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else { return .distantPast }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    static func keyDescription(_ key: OpaquePointer) -> String {
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA: return "RSA \(EVP_PKEY_get_bits(key))"
        case EVP_PKEY_ED25519: return "Ed25519"
        case EVP_PKEY_ED448: return "Ed448"
        case EVP_PKEY_EC:
            var buffer = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_group_name(key, &buffer, buffer.count, &length) == 1 else { return "ECDSA" }
            let group = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let curves = ["prime256v1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"]
            return "ECDSA " + (curves[group] ?? group)
        default: return "key type \(EVP_PKEY_get_base_id(key)) (\(EVP_PKEY_get_bits(key)) bits)"
        }
    }
}

/// SHA-256 of `bytes` via OpenSSL's EVP.
func sha256(_ bytes: [UInt8]) throws(OpenSSLError) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: 32)
    var length: UInt32 = 0
    OpenSSLError.clearQueue()
    let ok = bytes.withUnsafeBytes { input in
        EVP_Digest(input.baseAddress, input.count, &digest, &length, EVP_sha256(), nil)
    }
    guard ok == 1, length == 32 else { throw OpenSSLError.drain("EVP_Digest(SHA-256)") }
    return digest
}
