#!/usr/bin/env python3
"""Regenerates the Certificate Transparency test fixtures in TestCerts/ct/ (see TestCerts/README.md).

Test-only material: four test CT logs of our own (ECDSA P-256), leaves under TestCerts/intermediate-2 carrying
embedded SCTs (RFC 6962 precertificate flow), the same logs as a v3 log list and as an OpenSSL CT log file, and
`openssl s_server -serverinfo` files carrying SCTs in the TLS extension for TestCerts/leaf-localhost-ecdsa.pem.

Every key is derived from a fixed label (so the keys, log ids and pins never change when this runs again) and every
ECDSA signature is deterministic (RFC 6979), so a run rewrites byte-identical files. Needs Python 3 and the
`cryptography` package (44 or later, for deterministic ECDSA). No network.

Usage: TestCerts/ct/generate.py   (rewrites the fixture files beside this script)
"""

import base64
import datetime
import hashlib
import ipaddress
import json
import os
import struct

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

HERE = os.path.dirname(os.path.abspath(__file__))
TESTCERTS = os.path.dirname(HERE)

UTC = datetime.timezone.utc
NOT_BEFORE = datetime.datetime(2026, 11, 1, 0, 0, 0, tzinfo=UTC)
NOT_AFTER = datetime.datetime(2036, 11, 1, 0, 0, 0, tzinfo=UTC)
SCT_TIME = datetime.datetime(2026, 11, 1, 1, 0, 0, tzinfo=UTC)
SCT_TIMESTAMP_MS = int(SCT_TIME.timestamp()) * 1000
LOGS_USABLE_SINCE = "2025-01-01T00:00:00Z"
LOG_LIST_TIMESTAMP = "2026-11-01T00:00:00Z"

OID_SCT_LIST = ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")  # embedded SCT list (RFC 6962 3.3)
TLSEXT_SCT = 18  # signed_certificate_timestamp TLS extension

# OpenSSL's extension contexts (openssl/ssl.h), for SERVERINFOV2 blocks.
SSL_EXT_CLIENT_HELLO = 0x0080
SSL_EXT_TLS1_2_SERVER_HELLO = 0x0100
SSL_EXT_TLS1_3_CERTIFICATE = 0x1000

LOGS = {  # name: (description, operator)
    "a": ("ShopKit Test Log A", "ShopKit Test Operator One"),
    "b": ("ShopKit Test Log B", "ShopKit Test Operator One"),
    "c": ("ShopKit Test Log C", "ShopKit Test Operator Two"),
    "d": ("ShopKit Test Log D", "ShopKit Test Operator Three"),
}
OPERATORS = ["ShopKit Test Operator One", "ShopKit Test Operator Two", "ShopKit Test Operator Three"]

# Each leaf: a fixed serial and the logs whose SCTs it embeds.
LEAVES = {
    "compliant": (0xC7001, ["a", "c", "d"]),
    "one-sct": (0xC7002, ["a"]),
    "two-logs": (0xC7003, ["a", "c"]),
    "forged": (0xC7004, ["a", "c", "d"]),
    "other-cert": (0xC7005, None),  # embeds compliant's SCT list
}


# --- keys -----------------------------------------------------------------------------------------------------------

P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


def derived_key(label):
    """A P-256 key derived from a fixed label: public test material, stable across runs."""
    scalar = int.from_bytes(hashlib.sha256(b"ShopKit CT test key: " + label.encode()).digest(), "big")
    return ec.derive_private_key(scalar % (P256_ORDER - 1) + 1, ec.SECP256R1())


def write(name, data):
    mode = "w" if isinstance(data, str) else "wb"
    with open(os.path.join(HERE, name), mode) as f:
        f.write(data)


def write_key(name, key):
    write(name, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))


def spki_der(public_key):
    return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def load_testcert(name):
    with open(os.path.join(TESTCERTS, name + ".pem"), "rb") as f:
        return x509.load_pem_x509_certificate(f.read())


def load_testkey(name):
    with open(os.path.join(TESTCERTS, name + ".key"), "rb") as f:
        return serialization.load_pem_private_key(f.read(), None)


# --- SCTs (RFC 6962 3.2) ---------------------------------------------------------------------------------------------

def u16(n):
    return struct.pack(">H", n)


def u24(n):
    return struct.pack(">I", n)[1:]


def u64(n):
    return struct.pack(">Q", n)


class Log:
    def __init__(self, name):
        self.name = name
        self.description, self.operator = LOGS[name]
        self.key = derived_key("log-" + name)
        self.spki = spki_der(self.key.public_key())
        self.log_id = hashlib.sha256(self.spki).digest()

    def sign(self, data):
        return self.key.sign(data, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))

    def sct(self, signed_entry, signed_over=None):
        """The TLS encoding of an SCT v1 over `signed_entry` (entry_type and the entry's fields).

        `signed_over` replaces the entry in the signature only: a forged SCT whose signature covers other bytes."""
        extensions = b""

        def digitally_signed(entry):
            # sct_version v1(0) | signature_type certificate_timestamp(0) | timestamp | entry | extensions
            return b"\x00" + b"\x00" + u64(SCT_TIMESTAMP_MS) + entry + u16(len(extensions)) + extensions

        signature = self.sign(digitally_signed(signed_over if signed_over is not None else signed_entry))
        return (b"\x00" + self.log_id + u64(SCT_TIMESTAMP_MS) + u16(len(extensions)) + extensions
                + b"\x04\x03" + u16(len(signature)) + signature)  # hash sha256(4), signature ecdsa(3)


def precert_entry(issuer, tbs_precertificate):
    # entry_type precert_entry(1) | issuer_key_hash | uint24 length + TBSCertificate without the poison
    return u16(1) + hashlib.sha256(spki_der(issuer.public_key())).digest() + u24(len(tbs_precertificate)) \
        + tbs_precertificate


def x509_entry(certificate):
    # entry_type x509_entry(0) | uint24 length + the certificate's DER
    der = certificate.public_bytes(serialization.Encoding.DER)
    return u16(0) + u24(len(der)) + der


def sct_list(scts):
    """SignedCertificateTimestampList: uint16 total length, each SCT as uint16 length + SCT."""
    body = b"".join(u16(len(s)) + s for s in scts)
    return u16(len(body)) + body


def der(tag, content):
    """One DER TLV (definite length)."""
    n = len(content)
    if n < 0x80:
        length = bytes([n])
    else:
        octets = n.to_bytes((n.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(octets)]) + octets
    return bytes([tag]) + length + content


def der_octet_string(data):
    return der(0x04, data)


# --- certificates ---------------------------------------------------------------------------------------------------

def leaf_builder(serial, key, issuer):
    """The same TBS fields, in the same order, for a precertificate and its final certificate (as generate.sh's
    LEAF + LOCAL extensions)."""
    return (x509.CertificateBuilder()
            .serial_number(serial)
            .issuer_name(issuer.subject)
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .not_valid_before(NOT_BEFORE)
            .not_valid_after(NOT_AFTER)
            .public_key(key.public_key())
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=True,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(
                issuer.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value), critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False))


def sign_cert(builder, issuer_key):
    return builder.sign(issuer_key, hashes.SHA256(), ecdsa_deterministic=True)


# --- OCSP (RFC 6960) with an SCT list single extension (RFC 6962 3.3) -----------------------------------------------

OID_OCSP_BASIC = "1.3.6.1.5.5.7.48.1.1"
OID_OCSP_SCT_LIST = "1.3.6.1.4.1.11129.2.4.5"
OID_SHA1 = "1.3.14.3.2.26"
OID_ECDSA_SHA256 = "1.2.840.10045.4.3.2"


def der_oid(dotted):
    parts = [int(p) for p in dotted.split(".")]
    body = bytes([40 * parts[0] + parts[1]])
    for p in parts[2:]:
        chunk = [p & 0x7F]
        p >>= 7
        while p:
            chunk.insert(0, 0x80 | (p & 0x7F))
            p >>= 7
        body += bytes(chunk)
    return der(0x06, body)


def der_integer(n):
    return der(0x02, n.to_bytes(n.bit_length() // 8 + 1, "big"))


def der_time(moment):
    return der(0x18, moment.strftime("%Y%m%d%H%M%SZ").encode())


def ocsp_response(certificate, issuer, issuer_key, scts_tls):
    """A successful OCSP response (status good) for `certificate`, signed by its issuer, whose SingleResponse carries
    the SCT list extension: the format `openssl s_server -status_file` staples."""
    sequence = lambda *items: der(0x30, b"".join(items))
    issuer_spki = issuer.public_key().public_bytes(serialization.Encoding.DER,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo)
    # issuerKeyHash is over the subjectPublicKey BIT STRING's value (RFC 6960 4.1.1); for P-256 the last 65 bytes.
    public_key_bits = issuer.public_key().public_bytes(serialization.Encoding.X962,
                                                       serialization.PublicFormat.UncompressedPoint)
    assert issuer_spki.endswith(public_key_bits)
    cert_id = sequence(sequence(der_oid(OID_SHA1), b"\x05\x00"),
                       der_octet_string(hashlib.sha1(issuer.subject.public_bytes()).digest()),
                       der_octet_string(hashlib.sha1(public_key_bits).digest()),
                       der_integer(certificate.serial_number))
    sct_extension = sequence(der_oid(OID_OCSP_SCT_LIST), der_octet_string(der_octet_string(scts_tls)))
    single = sequence(cert_id, b"\x80\x00",  # certStatus good [0] IMPLICIT NULL
                      der_time(NOT_BEFORE), der(0xA0, der_time(NOT_AFTER)),
                      der(0xA1, sequence(sct_extension)))
    tbs = sequence(der(0xA2, der_octet_string(hashlib.sha1(public_key_bits).digest())),  # responderID byKey
                   der_time(NOT_BEFORE), sequence(single))
    signature = issuer_key.sign(tbs, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
    basic = sequence(tbs, sequence(der_oid(OID_ECDSA_SHA256)), der(0x03, b"\x00" + signature))
    return sequence(der(0x0A, b"\x00"),  # responseStatus successful
                    der(0xA0, sequence(der_oid(OID_OCSP_BASIC), der_octet_string(basic))))


def main():
    logs = {name: Log(name) for name in LOGS}
    for log in logs.values():
        write_key(f"log-{log.name}.key", log.key)

    issuer = load_testcert("intermediate-2")
    issuer_key = load_testkey("intermediate-2")

    made = {}  # name -> (precertificate, SCT list bytes)
    for name, (serial, log_names) in LEAVES.items():
        key = derived_key("leaf-ct-" + name)
        builder = leaf_builder(serial, key, issuer)
        precert = sign_cert(builder.add_extension(x509.PrecertPoison(), critical=True), issuer_key)
        # The precertificate's TBS without the poison (the poison is its last extension): the same builder's TBS
        # without it. (cryptography's tbs_precertificate_bytes reads only certificates with an SCT list.)
        tbs_precertificate = sign_cert(builder, issuer_key).tbs_certificate_bytes
        entry = precert_entry(issuer, tbs_precertificate)
        if log_names is None:
            scts_tls = made["compliant"][1]  # an SCT list made for another certificate
        else:
            scts = []
            for log_name in log_names:
                signed_over = None
                if name == "forged" and log_name == "d":
                    # Log d's signature covers the precertificate's TBS with its last byte changed.
                    signed_over = entry[:-1] + bytes([entry[-1] ^ 0x01])
                scts.append(logs[log_name].sct(entry, signed_over))
            scts_tls = sct_list(scts)
        made[name] = (precert, scts_tls)
        final = sign_cert(builder.add_extension(
            x509.UnrecognizedExtension(OID_SCT_LIST, der_octet_string(scts_tls)), critical=False), issuer_key)
        # What a verifier rebuilds from the final certificate must be what the logs signed.
        assert final.tbs_precertificate_bytes == tbs_precertificate, name
        write_key(f"leaf-ct-{name}.key", key)
        write(f"leaf-ct-{name}.pem", final.public_bytes(serialization.Encoding.PEM).decode())
        write(f"leaf-ct-{name}.precert.pem", precert.public_bytes(serialization.Encoding.PEM).decode())

    # SCTs in the TLS extension (x509_entry) for the existing leaf-localhost-ecdsa.pem, from logs a and c; and SCTs
    # from the same logs made for another certificate (leaf-localhost-rsa.pem).
    def serverinfo(certificate_name, for_name):
        entry = x509_entry(load_testcert(certificate_name))
        extension_data = sct_list([logs["a"].sct(entry), logs["c"].sct(entry)])
        extension = u16(TLSEXT_SCT) + u16(len(extension_data)) + extension_data
        # SERVERINFOV2: a 4-byte context before each extension; this context sends it in the TLS 1.2 ServerHello
        # and in the TLS 1.3 Certificate message (the v1 "SERVERINFO FOR" format is TLS 1.2 only).
        context = struct.pack(">I", SSL_EXT_CLIENT_HELLO | SSL_EXT_TLS1_2_SERVER_HELLO | SSL_EXT_TLS1_3_CERTIFICATE)
        b64 = base64.encodebytes(context + extension).decode()
        return f"-----BEGIN SERVERINFOV2 FOR {for_name}-----\n{b64}-----END SERVERINFOV2 FOR {for_name}-----\n"

    write("leaf-localhost-ecdsa.scts.serverinfo", serverinfo("leaf-localhost-ecdsa", "leaf-localhost-ecdsa"))
    write("leaf-localhost-ecdsa.other-cert.serverinfo", serverinfo("leaf-localhost-rsa", "leaf-localhost-rsa"))

    # The same two SCTs (logs a and c, x509_entry for leaf-localhost-ecdsa.pem) stapled in an OCSP response.
    ecdsa_leaf = load_testcert("leaf-localhost-ecdsa")
    entry = x509_entry(ecdsa_leaf)
    write("leaf-localhost-ecdsa.scts.ocsp.der",
          ocsp_response(ecdsa_leaf, issuer, issuer_key, sct_list([logs["a"].sct(entry), logs["c"].sct(entry)])))

    # The logs as Chrome's log list v3 schema and as OpenSSL's CT log file (CTLOG_STORE_load_file).
    operators = []
    for operator in OPERATORS:
        operator_logs = [{
            "description": log.description,
            "log_id": base64.b64encode(log.log_id).decode(),
            "key": base64.b64encode(log.spki).decode(),
            "url": f"https://ct.shopkit.test/log-{log.name}/",
            "mmd": 86400,
            "state": {"usable": {"timestamp": LOGS_USABLE_SINCE}},
        } for log in logs.values() if log.operator == operator]
        operators.append({"name": operator, "email": ["ct-test@shopkit.test"], "logs": operator_logs,
                          "tiled_logs": []})
    log_list = {"version": "1.0", "log_list_timestamp": LOG_LIST_TIMESTAMP, "operators": operators}
    write("test-log-list.json", json.dumps(log_list, indent=2) + "\n")

    cnf = ["# The ShopKit test CT logs (TestCerts/ct/generate.py) for openssl s_client -ct -ctlogfile.",
           "enabled_logs = " + ",".join(f"log-{n}" for n in logs), ""]
    for log in logs.values():
        cnf += [f"[log-{log.name}]", f"description = {log.description}",
                f"key = {base64.b64encode(log.spki).decode()}", ""]
    write("test-logs.cnf", "\n".join(cnf))

    print(f"generated CT fixtures in {HERE}")


if __name__ == "__main__":
    main()
