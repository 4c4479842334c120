#!/usr/bin/env bash
# Regenerates every test certificate and key in this folder with the openssl CLI only (no network).
# Test-only material: these keys are public and must never protect anything real.
# Usage: TestCerts/generate.sh   (rewrites *.pem, *.key and pins.txt beside this script)
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

VALID_FROM=20250101000000Z
VALID_TO=20451231235959Z

cat > "$work/ca.cnf" <<CNF
[ ca ]
default_ca = testca
[ testca ]
dir = $work
database = $work/index.txt
new_certs_dir = $work
serial = $work/serial
policy = policy_any
unique_subject = no
copy_extensions = none
preserve = yes
email_in_dn = no
default_md = sha256
[ policy_any ]
commonName = supplied
organizationName = optional
CNF
: > "$work/index.txt"
echo 1000 > "$work/serial"

# key NAME TYPE   (TYPE: rsa2048 rsa1024 p256 p384 ed25519)
key() {
  case "$2" in
    rsa2048) openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1.key" 2>/dev/null ;;
    rsa1024) openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out "$1.key" 2>/dev/null ;;
    p256) openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" ;;
    p384) openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out "$1.key" ;;
    ed25519) openssl genpkey -algorithm ED25519 -out "$1.key" ;;
  esac
}

# cert NAME ISSUER(or self) SUBJECT EXTENSIONS [START END MD]
cert() {
  local name=$1 issuer=$2 subject=$3 ext=$4 start=${5:-$VALID_FROM} end=${6:-$VALID_TO} md=${7:-sha256}
  printf '[ ext ]\n%b\n' "$ext" > "$work/$name.ext"
  openssl req -new -key "$name.key" -subj "$subject" -out "$work/$name.csr"
  if [ "$issuer" = self ]; then
    openssl ca -batch -config "$work/ca.cnf" -selfsign -keyfile "$name.key" -in "$work/$name.csr" \
      -out "$name.pem" -startdate "$start" -enddate "$end" -md "$md" -notext \
      -extfile "$work/$name.ext" -extensions ext 2>/dev/null
  else
    openssl ca -batch -config "$work/ca.cnf" -cert "$issuer.pem" -keyfile "$issuer.key" -in "$work/$name.csr" \
      -out "$name.pem" -startdate "$start" -enddate "$end" -md "$md" -notext \
      -extfile "$work/$name.ext" -extensions ext 2>/dev/null
  fi
}

CA='basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash'
SUB_CA="$CA\nauthorityKeyIdentifier=keyid"
LEAF='basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid'
LOCAL='subjectAltName=DNS:localhost,IP:127.0.0.1'
# A leaf whose key only signs: no keyEncipherment (RFC 8410 forbids it for Ed25519 keys).
SIGN_LEAF='basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectKeyIdentifier=hash'

# The trusted hierarchy: root -> intermediate-1 -> intermediate-2 -> leaves; root -> backup-intermediate.
key root rsa2048;                 cert root self "/O=ShopKit Test/CN=ShopKit Test Root CA" "$CA"
key intermediate-1 p256;          cert intermediate-1 root "/O=ShopKit Test/CN=ShopKit Test Intermediate 1" "$SUB_CA"
key intermediate-2 p256;          cert intermediate-2 intermediate-1 "/O=ShopKit Test/CN=ShopKit Test Intermediate 2" "$SUB_CA"
key backup-intermediate p256;     cert backup-intermediate root "/O=ShopKit Test/CN=ShopKit Test Backup Intermediate" "$SUB_CA"

key leaf-localhost-rsa rsa2048;   cert leaf-localhost-rsa intermediate-2 "/CN=localhost" "$LEAF\n$LOCAL"
key leaf-localhost-ecdsa p256;    cert leaf-localhost-ecdsa intermediate-2 "/CN=localhost" "$LEAF\n$LOCAL"
key leaf-backup-localhost p256;   cert leaf-backup-localhost backup-intermediate "/CN=localhost" "$LEAF\n$LOCAL"
key leaf-expired p256;            cert leaf-expired intermediate-2 "/CN=localhost" "$LEAF\n$LOCAL" 20200101000000Z 20210101000000Z
key leaf-not-yet-valid p256;      cert leaf-not-yet-valid intermediate-2 "/CN=localhost" "$LEAF\n$LOCAL" 20440101000000Z 20451231235959Z

# The unrelated hierarchy: other-root -> other-intermediate -> other-leaf-localhost.
key other-root p256;              cert other-root self "/O=ShopKit Other/CN=ShopKit Unrelated Root CA" "$CA"
key other-intermediate p256;      cert other-intermediate other-root "/O=ShopKit Other/CN=ShopKit Unrelated Intermediate" "$SUB_CA"
key other-leaf-localhost p256;    cert other-leaf-localhost other-intermediate "/CN=localhost" "$LEAF\n$LOCAL"

# Security-review vectors (all under intermediate-2 unless said).
key leaf-other-host p256;         cert leaf-other-host intermediate-2 "/CN=api.other.test" "$LEAF\nsubjectAltName=DNS:api.other.test"
key leaf-wildcard p256;           cert leaf-wildcard intermediate-2 "/CN=*.example.test" "$LEAF\nsubjectAltName=DNS:*.example.test"
key leaf-cn-only p256;            cert leaf-cn-only intermediate-2 "/CN=localhost" "$LEAF"
key leaf-rsa1024 rsa1024;         cert leaf-rsa1024 intermediate-2 "/CN=localhost" "$LEAF\n$LOCAL"
key leaf-sha1 p256;               cert leaf-sha1 intermediate-2 "/CN=localhost" "$LEAF\n$LOCAL" "$VALID_FROM" "$VALID_TO" sha1
key intermediate-not-ca p256;     cert intermediate-not-ca intermediate-2 "/O=ShopKit Test/CN=ShopKit Test Not A CA" \
  'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyCertSign\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid'
key leaf-under-not-ca p256;       cert leaf-under-not-ca intermediate-not-ca "/CN=localhost" "$LEAF\n$LOCAL"
key leaf-client-auth p256;        cert leaf-client-auth intermediate-2 "/CN=localhost" \
  "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n$LOCAL"
key leaf-p384 p384;               cert leaf-p384 intermediate-2 "/CN=localhost" "$LEAF\n$LOCAL"
key leaf-ed25519 ed25519;         cert leaf-ed25519 intermediate-2 "/CN=localhost" "$SIGN_LEAF\nauthorityKeyIdentifier=keyid\n$LOCAL"
# A self-signed server leaf (CA:FALSE, serverAuth, localhost SANs): trusted by nobody, whatever is pinned.
key leaf-self-signed p256;        cert leaf-self-signed self "/CN=localhost" "$SIGN_LEAF\n$LOCAL"
# Re-issued leaf: a new certificate (other serial and dates) for the SAME key as leaf-localhost-ecdsa.
cp leaf-localhost-ecdsa.key leaf-reissued.key
cert leaf-reissued intermediate-2 "/CN=localhost" "$LEAF\n$LOCAL" 20250601000000Z 20441231235959Z

# Every subjectAltName kind beside DNS:localhost and IP:127.0.0.1 (email, URI, otherName, dirName, RID): SAN
# entries are read by their kind, never as a string blindly. One trusted under intermediate-2, one self-signed.
SAN_KINDS='subjectAltName=DNS:localhost,IP:127.0.0.1,email:ops@example.test,URI:https://shop.example.test/,otherName:1.3.6.1.4.1.311.20.2.3;UTF8:ops@example.test,dirName:san_dir,RID:1.2.3.4\n[ san_dir ]\nO=ShopKit Test\nCN=ShopKit Directory Name'
key leaf-san-kinds p256;          cert leaf-san-kinds intermediate-2 "/CN=localhost" "$LEAF\n$SAN_KINDS"
key self-signed-san-kinds p256;   cert self-signed-san-kinds self "/CN=localhost" "$LEAF\n$SAN_KINDS"

# SPKI pins (SHA-256 of the DER SubjectPublicKeyInfo), computed independently of ShopKit for its tests.
: > pins.txt
for k in *.key; do
  pin=$(openssl pkey -in "$k" -pubout -outform DER | openssl dgst -sha256 -binary | openssl base64 -A)
  printf '%s sha256/%s\n' "${k%.key}" "$pin" >> pins.txt
done
echo "generated $(ls *.pem | wc -l) certificates in $(pwd)"
