#!/usr/bin/env python3
"""Adversarial CT fixtures for Tests/ShopKitTLSTests/CTAdversarialProbes.swift (security review, branch ct-attack).

Writes TestCerts/ct/adversarial/: SERVERINFOV2 files (SCTs in the TLS extension for TestCerts/leaf-localhost-ecdsa
unless said otherwise), a garbage OCSP response, and leaves with odd embedded SCT lists. Reuses generate.py's
deterministic test logs. Run after generate.py; no network.
"""
import base64
import datetime
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import generate as g  # noqa: E402
from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import serialization  # noqa: E402

OUT = os.path.join(HERE, "adversarial")
UTC = datetime.timezone.utc
TEST_NOW = datetime.datetime(2026, 12, 1, 0, 0, 0, tzinfo=UTC)  # CertificateTransparencyTests.now


def ms(moment):
    return int(moment.timestamp()) * 1000


def sct(log, entry, timestamp_ms=g.SCT_TIMESTAMP_MS, version=0, signer=None, extensions=b"", corrupt=False):
    """An SCT in TLS encoding. `signer` signs instead of `log` (log id stays `log`'s); `corrupt` flips a byte of the
    signed data (an invalid signature from a known log)."""
    signed = bytes([version]) + b"\x00" + g.u64(timestamp_ms) + entry + g.u16(len(extensions)) + extensions
    if corrupt:
        signed = signed[:-3] + bytes([signed[-3] ^ 1]) + signed[-2:]
    signature = (signer or log).sign(signed)
    return (bytes([version]) + log.log_id + g.u64(timestamp_ms) + g.u16(len(extensions)) + extensions
            + b"\x04\x03" + g.u16(len(signature)) + signature)


def serverinfo(extension_data, name="adv"):
    extension = g.u16(g.TLSEXT_SCT) + g.u16(len(extension_data)) + extension_data
    context = struct.pack(">I", g.SSL_EXT_CLIENT_HELLO | g.SSL_EXT_TLS1_2_SERVER_HELLO | g.SSL_EXT_TLS1_3_CERTIFICATE)
    b64 = base64.encodebytes(context + extension).decode()
    return f"-----BEGIN SERVERINFOV2 FOR {name}-----\n{b64}-----END SERVERINFOV2 FOR {name}-----\n"


def write(name, data):
    mode = "w" if isinstance(data, str) else "wb"
    with open(os.path.join(OUT, name), mode) as f:
        f.write(data)


def leaf_with_embedded(name, serial, make_list):
    """A leaf under intermediate-2 whose embedded SCT list is make_list(precert_entry) (raw extension bytes)."""
    issuer = g.load_testcert("intermediate-2")
    issuer_key = g.load_testkey("intermediate-2")
    key = g.derived_key("adv-" + name)
    builder = g.leaf_builder(serial, key, issuer)
    tbs = g.sign_cert(builder, issuer_key).tbs_certificate_bytes
    entry = g.precert_entry(issuer, tbs)
    final = g.sign_cert(builder.add_extension(
        x509.UnrecognizedExtension(g.OID_SCT_LIST, g.der_octet_string(make_list(entry))), critical=False), issuer_key)
    write(f"{name}.pem", final.public_bytes(serialization.Encoding.PEM).decode())
    write(f"{name}.key", key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return final


def main():
    os.makedirs(OUT, exist_ok=True)
    logs = {n: g.Log(n) for n in g.LOGS}
    a, b, c, d = logs["a"], logs["b"], logs["c"], logs["d"]
    ecdsa = g.x509_entry(g.load_testcert("leaf-localhost-ecdsa"))

    # Baseline: a + c (two logs, two operators): compliant.
    write("baseline.serverinfo", serverinfo(g.sct_list([sct(a, ecdsa), sct(c, ecdsa)])))
    # The same SCT from log a three times: one log.
    write("dup-a-x3.serverinfo", serverinfo(g.sct_list([sct(a, ecdsa)] * 3)))
    # Log a three times and log b (same operator): two logs, one operator.
    write("dup-a-x3-b.serverinfo", serverinfo(g.sct_list([sct(a, ecdsa)] * 3 + [sct(b, ecdsa)])))
    # a valid, c timestamped one day after the test's clock.
    write("future-c.serverinfo", serverinfo(g.sct_list([
        sct(a, ecdsa), sct(c, ecdsa, timestamp_ms=ms(TEST_NOW + datetime.timedelta(days=1)))])))
    # a valid, c far in the future (year 2^63 ms-ish): no crash in date handling.
    write("far-future-c.serverinfo", serverinfo(g.sct_list([
        sct(a, ecdsa), sct(c, ecdsa, timestamp_ms=(1 << 64) - 1)])))
    # a valid; a second SCT with log c's id signed by log d's key.
    write("c-id-signed-by-d.serverinfo", serverinfo(g.sct_list([sct(a, ecdsa), sct(c, ecdsa, signer=d)])))
    # a valid; c as a v2 SCT (version byte 1), otherwise well formed and signed.
    write("v2-c.serverinfo", serverinfo(g.sct_list([sct(a, ecdsa), sct(c, ecdsa, version=1)])))
    # a and c valid, then trailing garbage after the list.
    good = g.sct_list([sct(a, ecdsa), sct(c, ecdsa)])
    write("trailing-garbage.serverinfo", serverinfo(good + b"\xde\xad\xbe\xef"))
    # a and c valid, the list length claims 100 bytes more than present.
    body = good[2:]
    write("list-length-overflow.serverinfo", serverinfo(g.u16(len(body) + 100) + body))
    # a valid, then an SCT whose own length runs past the list.
    s1, s2 = sct(a, ecdsa), sct(c, ecdsa)
    inner = g.u16(len(s1)) + s1 + g.u16(len(s2) + 50) + s2
    write("sct-length-overflow.serverinfo", serverinfo(g.u16(len(inner)) + inner))
    # An empty extension and an empty list.
    write("empty-extension.serverinfo", serverinfo(b""))
    write("empty-list.serverinfo", serverinfo(g.u16(0)))
    # a and c valid, plus an SCT of zero length inside the list.
    inner = g.u16(len(s1)) + s1 + g.u16(0) + g.u16(len(s2)) + s2
    write("zero-length-sct.serverinfo", serverinfo(g.u16(len(inner)) + inner))
    # Huge: as many copies as fit of a valid a and a valid c (count once each), and of a corrupt a (each fully checked).
    per = len(s1) + 2
    n = (65535 - 2 - 8) // per
    write("huge-valid.serverinfo", serverinfo(g.sct_list([s1, s2] * (n // 2))))
    bad = sct(a, ecdsa, corrupt=True)
    write("huge-invalid.serverinfo", serverinfo(g.sct_list([bad] * n)))
    # a and c valid, each with a large extensions field (SCT extensions are opaque).
    write("big-extensions.serverinfo", serverinfo(g.sct_list([sct(a, ecdsa, extensions=b"\x00" * 30000),
                                                              sct(c, ecdsa, extensions=b"\x00" * 30000)])))
    # Mixing: leaf-ct-two-logs embeds a and c (too few for its ten years); log d's SCT for it in the TLS extension.
    two_logs = g.x509_entry(x509.load_pem_x509_certificate(open(os.path.join(HERE, "leaf-ct-two-logs.pem"), "rb").read()))
    write("two-logs-plus-tls-d.serverinfo", serverinfo(g.sct_list([sct(d, two_logs)])))
    # leaf-ct-one-sct embeds a; TLS extension: c for it. (one embedded + one delivered)
    one = g.x509_entry(x509.load_pem_x509_certificate(open(os.path.join(HERE, "leaf-ct-one-sct.pem"), "rb").read()))
    write("one-sct-plus-tls-c.serverinfo", serverinfo(g.sct_list([sct(c, one)])))
    # Valid a + c SCTs for leaf-self-signed (a one-certificate chain when that leaf is trusted as a root).
    self_signed = g.x509_entry(g.load_testcert("leaf-self-signed"))
    write("self-signed-a-c.serverinfo", serverinfo(g.sct_list([sct(a, self_signed), sct(c, self_signed)])))
    # Garbage stapled OCSP response.
    write("garbage.ocsp.der", b"\x30\x03\x0a\x01\x00" + b"\xff" * 64)

    # Embedded: a huge list of corrupt log-a SCTs (each a full precertificate rebuild and verify), in a leaf.
    def huge_embedded(entry):
        s = sct(a, entry, corrupt=True)
        count = (60000) // (len(s) + 2)
        return g.sct_list([s] * count)
    leaf_with_embedded("leaf-adv-huge-embedded", 0xADF001, huge_embedded)

    # Embedded a, c, d valid but timestamped before the logs became usable (2024-01-01): Chrome does not care.
    def early(entry):
        t = ms(datetime.datetime(2024, 1, 1, tzinfo=UTC))
        return g.sct_list([sct(a, entry, timestamp_ms=t), sct(c, entry, timestamp_ms=t), sct(d, entry, timestamp_ms=t)])
    leaf_with_embedded("leaf-adv-early-scts", 0xADF002, early)

    # Embedded: a, c, d where the list has trailing garbage inside the OCTET STRING.
    def trailing(entry):
        return g.sct_list([sct(a, entry), sct(c, entry), sct(d, entry)]) + b"\x00\x01garbage"
    leaf_with_embedded("leaf-adv-embedded-trailing", 0xADF003, trailing)

    # Embedded: a three times, c, (two logs, need three) -> not compliant.
    def dup(entry):
        return g.sct_list([sct(a, entry)] * 3 + [sct(c, entry)])
    leaf_with_embedded("leaf-adv-embedded-dup", 0xADF004, dup)

    # A leaf for the IDN probe: SAN xn--bcher-kva.example (bücher.example), no SCTs, under intermediate-2.
    issuer = g.load_testcert("intermediate-2")
    key = g.derived_key("adv-idn")
    builder = (x509.CertificateBuilder().serial_number(0xADF010).issuer_name(issuer.subject)
               .subject_name(x509.Name([x509.NameAttribute(g.NameOID.COMMON_NAME, "xn--bcher-kva.example")]))
               .not_valid_before(g.NOT_BEFORE).not_valid_after(g.NOT_AFTER).public_key(key.public_key())
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([g.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
               .add_extension(x509.SubjectAlternativeName([x509.DNSName("xn--bcher-kva.example")]), critical=False))
    write("leaf-adv-idn.pem", g.sign_cert(builder, g.load_testkey("intermediate-2")).public_bytes(
        serialization.Encoding.PEM).decode())
    write("leaf-adv-idn.key", key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                serialization.NoEncryption()))


if __name__ == "__main__":
    main()
