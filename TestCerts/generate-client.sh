#!/usr/bin/env bash
# Generates the client (mutual TLS) certificates beside this script with the openssl CLI only (no network).
# Separate from generate.sh, which regenerates the server hierarchy with new keys: this script only writes the
# client-* files and appends nothing to pins.txt, so running it leaves every other file byte-identical.
# Test-only material: these keys and the passphrase are public and must never protect anything real.
# Usage: TestCerts/generate-client.sh
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

VALID_FROM=20250101000000Z
VALID_TO=20451231235959Z
# The passphrase of client-ecdsa-encrypted.key and client-ecdsa.p12 (tests read it from here too).
PASSPHRASE=shopkit-test-passphrase

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
echo 2000 > "$work/serial"

key() {
  case "$2" in
    rsa2048) openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1.key" 2>/dev/null ;;
    p256) openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" ;;
    ed25519) openssl genpkey -algorithm ED25519 -out "$1.key" ;;
  esac
}

# cert NAME ISSUER(or self) SUBJECT EXTENSIONS [START END]
cert() {
  local name=$1 issuer=$2 subject=$3 ext=$4 start=${5:-$VALID_FROM} end=${6:-$VALID_TO}
  printf '[ ext ]\n%b\n' "$ext" > "$work/$name.ext"
  openssl req -new -key "$name.key" -subj "$subject" -out "$work/$name.csr"
  if [ "$issuer" = self ]; then
    openssl ca -batch -config "$work/ca.cnf" -selfsign -keyfile "$name.key" -in "$work/$name.csr" \
      -out "$name.pem" -startdate "$start" -enddate "$end" -notext \
      -extfile "$work/$name.ext" -extensions ext 2>/dev/null
  else
    openssl ca -batch -config "$work/ca.cnf" -cert "$issuer.pem" -keyfile "$issuer.key" -in "$work/$name.csr" \
      -out "$name.pem" -startdate "$start" -enddate "$end" -notext \
      -extfile "$work/$name.ext" -extensions ext 2>/dev/null
  fi
}

CA='basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash'
SUB_CA="$CA\nauthorityKeyIdentifier=keyid"
CLIENT='basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid'

# The client hierarchy, separate from the server one: client-ca -> client-intermediate -> client leaves.
key client-ca p256;               cert client-ca self "/O=ShopKit Test/CN=ShopKit Test Client CA" "$CA"
key client-intermediate p256;     cert client-intermediate client-ca "/O=ShopKit Test/CN=ShopKit Test Client Intermediate" "$SUB_CA"
key client-ecdsa p256;            cert client-ecdsa client-intermediate "/O=ShopKit Test/CN=shopkit-client-ecdsa" "$CLIENT"
key client-rsa rsa2048;           cert client-rsa client-intermediate "/O=ShopKit Test/CN=shopkit-client-rsa" "$CLIENT"
key client-ed25519 ed25519;       cert client-ed25519 client-intermediate "/O=ShopKit Test/CN=shopkit-client-ed25519" "$CLIENT"
key client-expired p256;          cert client-expired client-intermediate "/O=ShopKit Test/CN=shopkit-client-expired" "$CLIENT" \
  20200101000000Z 20210101000000Z
# A client certificate from the wrong CA: issued by the *server* hierarchy's intermediate-2, which the mTLS server
# does not accept for clients.
key client-wrong-ca p256;         cert client-wrong-ca intermediate-2 "/O=ShopKit Test/CN=shopkit-client-wrong-ca" "$CLIENT"

# Chains as a client sends them: leaf first, then the intermediate (the CA itself stays with the server).
for leaf in client-ecdsa client-rsa client-ed25519 client-expired; do
  cat "$leaf.pem" client-intermediate.pem > "$leaf-chain.pem"
done
cat client-wrong-ca.pem intermediate-2.pem intermediate-1.pem > client-wrong-ca-chain.pem

# client-ecdsa's key, encrypted (PKCS#8, AES-256-CBC, PBKDF2), and client-ecdsa as a PKCS#12 bundle (leaf, key and
# intermediate; OpenSSL 3's default AES-256-CBC/PBKDF2 protection).
openssl pkcs8 -topk8 -v2 aes-256-cbc -in client-ecdsa.key -out client-ecdsa-encrypted.key -passout "pass:$PASSPHRASE"
openssl pkcs12 -export -in client-ecdsa.pem -inkey client-ecdsa.key -certfile client-intermediate.pem \
  -name shopkit-client-ecdsa -out client-ecdsa.p12 -passout "pass:$PASSPHRASE"
echo "generated client certificates in $(pwd)"
