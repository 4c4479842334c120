#!/usr/bin/env python3
"""The pet store the generated-client example talks to: HTTPS/1.1 on 127.0.0.1, a port the kernel chooses.

    pet_store_server.py CERTS_DIR

Serves leaf-localhost-ecdsa (with intermediate-2 and intermediate-1) from CERTS_DIR, prints its port on the first
line of stdout, and exits when its stdin closes (so it never outlives the test process that started it).

  POST /login     ada/secret -> 200 {"accessToken":"stale","refreshToken":"r1"}; any other -> 401;
                  a request that carries a token -> 400 (login is public: the client must send none)
  POST /refresh   {"refreshToken":"r1"} -> 200 {"accessToken":"fresh","refreshToken":"r2"}, once (r1 is then
                  used up); any other -> 401; a request that carries a token -> 400
  GET  /pets/1    Bearer fresh -> 200 Rex; any other token -> 401
  GET  /pets/N    Bearer fresh -> 404
  GET  /_seen     what the server saw so far (method, path, authorization), as JSON; not itself recorded
"""
import json
import os
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

seen = []
used_refresh_tokens = set()
seen_lock = threading.Lock()


class PetStore(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def record(self):
        with seen_lock:
            seen.append({"method": self.command, "path": self.path, "authorization": self.headers.get("Authorization")})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.record()
        if self.path not in ("/login", "/refresh"):
            return self.reply(404)
        if self.headers.get("Authorization") is not None:
            return self.reply(400)
        try:
            fields = json.loads(body)
        except ValueError:
            return self.reply(400)
        if self.path == "/refresh":
            with seen_lock:
                if fields != {"refreshToken": "r1"} or "r1" in used_refresh_tokens:
                    return self.reply(401)
                used_refresh_tokens.add("r1")
            return self.reply(200, {"accessToken": "fresh", "refreshToken": "r2"})
        if fields != {"username": "ada", "password": "secret"}:
            return self.reply(401)
        self.reply(200, {"accessToken": "stale", "refreshToken": "r1"})

    def do_GET(self):
        if self.path == "/_seen":
            with seen_lock:
                return self.reply(200, list(seen))
        self.record()
        if not self.path.startswith("/pets/"):
            return self.reply(404)
        if self.headers.get("Authorization") != "Bearer fresh":
            return self.reply(401)
        if self.path != "/pets/1":
            return self.reply(404)
        self.reply(200, {"id": "1", "name": "Rex"})


def main():
    certs = sys.argv[1]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    chain = os.path.join(os.environ.get("TMPDIR", "/tmp"), "pet-store-chain-%d.pem" % os.getpid())
    with open(chain, "w") as out:
        for name in ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"]:
            with open(os.path.join(certs, name + ".pem")) as part:
                out.write(part.read())
    try:
        context.load_cert_chain(chain, os.path.join(certs, "leaf-localhost-ecdsa.key"))
    finally:
        os.unlink(chain)
    context.set_alpn_protocols(["http/1.1"])
    server = ThreadingHTTPServer(("127.0.0.1", 0), PetStore)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
