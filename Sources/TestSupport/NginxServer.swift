import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real nginx on 127.0.0.1, for interop tests and benchmarks.
///
/// The listening socket is bound here (port 0) before nginx starts and handed to it through nginx's
/// own `NGINX` inherited-socket variable, so the port is known at once and connections made before nginx
/// is ready wait in the socket's backlog: no readiness polling, no sleeps.
package final class NginxServer: Sendable {
    /// What nginx serves.
    package struct Configuration: Sendable {
        /// PEM file with the leaf first, then the intermediates nginx sends.
        package var certificateChainPath: String
        /// PEM private key of the leaf.
        package var privateKeyPath: String
        /// `ssl_protocols` value.
        package var protocols: String
        /// `ssl_ciphers` value (TLS 1.2 suites), or `nil` for nginx's default.
        package var ciphers: String?
        /// Static files to serve under `/files/NAME`.
        package var files: [String: Data]
        /// Whether nginx offers HTTP/2 (ALPN `h2`) besides HTTP/1.1.
        package var http2: Bool
        /// Mutual TLS: `ssl_verify_client on` with these client CAs; nil for none.
        package var clientVerification: ClientVerification?

        package init(
            certificateChainPath: String, privateKeyPath: String, protocols: String = "TLSv1.2 TLSv1.3",
            ciphers: String? = nil, files: [String: Data] = [:], http2: Bool = false,
            clientVerification: ClientVerification? = nil
        ) {
            self.http2 = http2
            self.certificateChainPath = certificateChainPath
            self.privateKeyPath = privateKeyPath
            self.protocols = protocols
            self.ciphers = ciphers
            self.files = files
            self.clientVerification = clientVerification
        }
    }

    /// `ssl_verify_client on` + `ssl_client_certificate`: nginx asks every client for a certificate, names the
    /// CAs of `caPath` in its CertificateRequest and accepts only chains to them (at most `depth` deep).
    ///
    /// nginx completes the handshake whatever the client sends and answers a request without an acceptable
    /// certificate with `400` ("No required SSL certificate was sent" / "The SSL certificate error").
    /// `GET /client` answers `VERIFY SUBJECT` (`$ssl_client_verify $ssl_client_s_dn`).
    package struct ClientVerification: Sendable {
        /// PEM file of the CA certificates client chains must lead to.
        package var caPath: String
        /// `ssl_verify_depth`.
        package var depth: Int

        package init(caPath: String, depth: Int = 2) {
            self.caPath = caPath
            self.depth = depth
        }
    }

    /// Why nginx could not be started.
    package struct StartError: Error, CustomStringConvertible {
        package let description: String
    }

    /// The port nginx listens on, on 127.0.0.1.
    package let port: Int
    /// The folder holding nginx's config, logs and files.
    package let directory: URL
    /// nginx's master process, under a watcher that stops it if this process dies without calling ``stop()``.
    private let process: TiedChild

    /// The body of `GET /hello`.
    package static let helloBody = "hello from nginx\n"
    /// The body of `GET /json`.
    package static let jsonBody = #"{"id":42,"name":"ShopKit","tags":["tls","pinning"]}"#

    /// Starts nginx with `configuration`; `nginxPath` defaults to Debian's `/usr/sbin/nginx`.
    package init(configuration: Configuration, nginxPath: String = "/usr/sbin/nginx") throws {
        guard FileManager.default.isExecutableFile(atPath: nginxPath) else {
            throw StartError(description: "nginx not found at \(nginxPath): run scripts/bootstrap")
        }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("shopkit-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("files"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("tmp"), withIntermediateDirectories: true)
        for (name, data) in configuration.files {
            try data.write(to: directory.appendingPathComponent("files/\(name)"))
        }

        let (socket, port) = try Self.bindLoopback()
        defer { close(socket) }
        let config = Self.config(configuration, port: port, directory: directory.path)
        try config.write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)

        var environment = ProcessInfo.processInfo.environment
        environment["NGINX"] = "3;"  // nginx adopts the listening socket it finds as fd 3
        do {
            self.process = try TiedChild(
                nginxPath, arguments: ["-p", directory.path, "-c", directory.appendingPathComponent("nginx.conf").path],
                environment: environment
            ) { actions in
                posix_spawn_file_actions_adddup2(&actions, socket, 3)
            }
        } catch {
            throw StartError(description: "\(error)")
        }
        self.port = port
        self.directory = directory
    }

    /// Stops nginx (SIGTERM: its master stops its worker) and removes its folder.
    package func stop() {
        process.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// nginx's error log so far, for failure messages.
    package var errorLog: String {
        (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
    }

    private static func config(_ configuration: Configuration, port: Int, directory: String) -> String {
        let ciphers = configuration.ciphers.map { "ssl_ciphers \($0); ssl_prefer_server_ciphers on;" } ?? ""
        let verification = configuration.clientVerification.map {
            "ssl_verify_client on; ssl_client_certificate \($0.caPath); ssl_verify_depth \($0.depth);"
        } ?? ""
        return """
            daemon off;
            worker_processes 1;
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log warn;
            events { worker_connections 1024; }
            http {
                access_log off;
                client_body_temp_path \(directory)/tmp;
                proxy_temp_path \(directory)/tmp;
                fastcgi_temp_path \(directory)/tmp;
                uwsgi_temp_path \(directory)/tmp;
                scgi_temp_path \(directory)/tmp;
                keepalive_requests 1000000;
                keepalive_timeout 60s;
                server {
                    listen 127.0.0.1:\(port) ssl\(configuration.http2 ? " http2" : "");
                    ssl_certificate \(configuration.certificateChainPath);
                    ssl_certificate_key \(configuration.privateKeyPath);
                    ssl_protocols \(configuration.protocols);
                    \(ciphers)
                    \(verification)
                    ssl_session_tickets on;
                    location = /hello { default_type text/plain; return 200 "\(helloBody.replacingOccurrences(of: "\n", with: "\\n"))"; }
                    location = /json { default_type application/json; return 200 '\(jsonBody)'; }
                    location = /unauthorized { return 401; }
                    location = /protocol { default_type text/plain; return 200 "$server_protocol"; }
                    location = /client { default_type text/plain; return 200 "$ssl_client_verify $ssl_client_s_dn"; }
                    location /files/ { alias \(directory)/files/; }
                }
            }
            """
    }

    private static func bindLoopback() throws -> (Int32, Int) {
        // Close-on-exec: only nginx gets it (as its fd 3), not another test's child spawned meanwhile.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw StartError(description: "socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 511) == 0 else {
            close(fd)
            throw StartError(description: "bind/listen on 127.0.0.1 failed: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}

extension NginxServer {
    /// nginx on 127.0.0.1 speaking TLS 1.2 only, with `ciphers` (e.g. `AES128-SHA256`, static RSA key exchange),
    /// serving the localhost RSA leaf's chain: the legacy key exchange tests of the library and of `pin-check`.
    package static func tls12RSA(ciphers: String) throws -> NginxServer {
        let chain = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-rsa-chain-\(UUID()).pem")
        try TestCertificates.standardChain(leaf: "leaf-localhost-rsa").write(to: chain, atomically: true, encoding: .utf8)
        return try NginxServer(
            configuration: .init(
                certificateChainPath: chain.path,
                privateKeyPath: TestCertificates.directory.appendingPathComponent("leaf-localhost-rsa.key").path,
                protocols: "TLSv1.2", ciphers: ciphers))
    }
}
