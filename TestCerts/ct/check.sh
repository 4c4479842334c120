#!/usr/bin/env bash
# Checks every CT fixture with OpenSSL itself (no ShopKit): serves each leaf with openssl s_server on 127.0.0.1 and
# prints what openssl s_client -ct says of the SCTs it received (count, each SCT's log and validation status).
# Usage: TestCerts/ct/check.sh   (run after generate.py; no network beyond loopback)
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
cat ../intermediate-2.pem ../intermediate-1.pem > "$work/chain.pem"

# serve CERT KEY [s_server args...]: starts s_server for one connection; sets $port (waits at most 10 s).
serve() {
  local cert=$1 key=$2; shift 2
  rm -f "$work/server.log"  # never read the previous server's port
  openssl s_server -accept 127.0.0.1:0 -naccept 1 -www -cert "$cert" -key "$key" -cert_chain "$work/chain.pem" \
    "$@" > "$work/server.log" 2>&1 &
  server=$!
  for _ in $(seq 100); do
    port=$(sed -n 's/^ACCEPT .*:\([0-9]*\)$/\1/p' "$work/server.log" 2>/dev/null || true)
    [ -n "$port" ] && return 0
    sleep 0.1
  done
  echo "s_server did not start: $(cat "$work/server.log")" >&2; exit 1
}

# probe TITLE [s_client args...]: one s_client -ct connection; prints the lines that matter.
probe() {
  local title=$1; shift
  echo "== $title"
  # -ign_eof: s_client reads to the end of s_server's -www reply, so its output never depends on timing.
  printf 'GET / HTTP/1.0\r\n\r\n' | timeout 10 openssl s_client -ign_eof -connect "127.0.0.1:$port" \
    -servername localhost -CAfile ../root.pem -ct -ctlogfile test-logs.cnf -verify_return_error "$@" \
    > "$work/client.log" 2>&1 && echo "s_client exit 0" || echo "s_client exit $?"
  local lines='^(SCTs present|SCT validation status|    Log       :|Verification|New, |OCSP response:|    Cert Status:)'
  grep -E -e "$lines" -e 'CT routines' "$work/client.log" \
    | sed -e 's/^    //' -e 's/^[0-9A-F]*:error:/error:/' -e 's/ *$//' | uniq || true
  wait "$server" 2>/dev/null || true
  server=
}

for name in compliant one-sct two-logs forged other-cert; do
  serve "leaf-ct-$name.pem" "leaf-ct-$name.key"
  probe "leaf-ct-$name (embedded)"
done

for version in -tls1_2 -tls1_3; do
  for info in scts other-cert; do
    serve ../leaf-localhost-ecdsa.pem ../leaf-localhost-ecdsa.key -serverinfo "leaf-localhost-ecdsa.$info.serverinfo"
    probe "leaf-localhost-ecdsa + leaf-localhost-ecdsa.$info.serverinfo, $version" "$version"
  done
done

for version in -tls1_2 -tls1_3; do
  serve ../leaf-localhost-ecdsa.pem ../leaf-localhost-ecdsa.key -status_file leaf-localhost-ecdsa.scts.ocsp.der
  probe "leaf-localhost-ecdsa + stapled leaf-localhost-ecdsa.scts.ocsp.der, $version" -status "$version"
done
