import Foundation
import HTTPTypes
import OpenAPIRuntime
import ShopKitHTTPS
import ShopKitOpenSSL
import ShopKitTLS
import TestSupport
import Testing

/// Client certificates against a real nginx with `ssl_verify_client on` (client CA: TestCerts' `client-ca`).
///
/// nginx itself completes every handshake and answers a bad or missing certificate with HTTP 400; ShopKit stops
/// before sending a request: without an identity it fails with the CA names nginx asked for, and it does not send
/// an identity nginx would refuse (expired, wrong CA).
@Suite(.timeLimit(.minutes(3))) struct MutualTLSNginxTests {
    static let clientCA = MutualTLSFixtures.clientCA
    static let passphrase = MutualTLSFixtures.passphrase

    static func path(_ file: String) -> String { MutualTLSFixtures.path(file) }

    static func startNginx() throws -> NginxServer { try MutualTLSFixtures.startNginx() }

    /// Trust the test root; present `identity`.
    static func context(
        _ identity: ClientIdentity?, policy: TLSClientConfiguration.CertificateRequestPolicy = .fail,
        cache: TLSSessionCache = TLSSessionCache()
    ) throws -> TLSClientContext {
        var configuration = try Probe.configuration()
        configuration.clientIdentity = identity
        configuration.certificateRequestWithoutIdentity = policy
        return try TLSClientContext(configuration: configuration, sessionCache: cache)
    }

    static func pemIdentity(_ name: String) throws -> ClientIdentity { try MutualTLSFixtures.pemIdentity(name) }

    static let identities: [(String, @Sendable () throws -> ClientIdentity)] = [
        ("O=ShopKit Test,CN=shopkit-client-ecdsa", { try pemIdentity("client-ecdsa") }),
        ("O=ShopKit Test,CN=shopkit-client-rsa", { try pemIdentity("client-rsa") }),
        ("O=ShopKit Test,CN=shopkit-client-ed25519", { try pemIdentity("client-ed25519") }),
        ("O=ShopKit Test,CN=shopkit-client-ecdsa", {
            try ClientIdentity.pemFiles(
                certificateChain: path("client-ecdsa-chain.pem"), privateKey: path("client-ecdsa-encrypted.key"),
                passphrase: passphrase)
        }),
        ("O=ShopKit Test,CN=shopkit-client-ecdsa", { try ClientIdentity.pkcs12File(path("client-ecdsa.p12"), passphrase: passphrase) }),
    ]

    @Test(arguments: 0..<identities.count)
    func theRightIdentityIsAcceptedByNginx(index: Int) async throws {
        let (subject, make) = Self.identities[index]
        let nginx = try Self.startNginx()
        defer { nginx.stop() }
        let identity = try make()
        let result = try await Probe.get(context: Self.context(identity), port: nginx.port, path: "/client")
        // nginx's own verdict on the certificate it received, and whose it was.
        #expect(result.body == "SUCCESS \(subject)", "\(nginx.errorLog)")
        #expect(result.info.clientCertificateRequest?.acceptedIssuers == [Self.clientCA])
        #expect(result.info.clientCertificateRequest?.answer == .sent(subject: subject))
    }

    @Test func noIdentityFailsNamingTheCAsNginxAccepts() async throws {
        let nginx = try Self.startNginx()
        defer { nginx.stop() }
        await #expect(throws: TLSError.clientCertificateRequired(acceptedIssuers: [Self.clientCA])) {
            try await Probe.get(context: Self.context(nil), port: nginx.port, path: "/client")
        }
        let error = TLSError.clientCertificateRequired(acceptedIssuers: [Self.clientCA])
        #expect(!error.isRetryable)
        #expect(error.description.contains(Self.clientCA) && error.description.contains("clientIdentity"))
    }

    @Test func withoutIdentityTheOptionalPolicyGoesOnAndNginxRefusesTheRequest() async throws {
        let nginx = try Self.startNginx()
        defer { nginx.stop() }
        var tls = try Probe.configuration()
        tls.certificateRequestWithoutIdentity = .continueWithoutCertificate
        let (status, text) = try await Self.get("/client", tls: tls, port: nginx.port)
        #expect(status == .badRequest)
        #expect(text.contains("No required SSL certificate was sent"))
    }

    @Test func anIdentityFromTheWrongCAIsNotSent() async throws {
        let nginx = try Self.startNginx()
        defer { nginx.stop() }
        let identity = try Self.pemIdentity("client-wrong-ca")
        await #expect {
            try await Probe.get(context: Self.context(identity), port: nginx.port, path: "/client")
        } throws: { error in
            guard let tls = error as? TLSError, tls.code == .clientCertificateRejected, let reason = tls.reason else { return false }
            return reason.contains(Self.clientCA) && reason.contains("CN=shopkit-client-wrong-ca")
                && !(error as! TLSError).isRetryable
        }
    }

    @Test func anExpiredIdentityIsNotSent() async throws {
        let nginx = try Self.startNginx()
        defer { nginx.stop() }
        let identity = try Self.pemIdentity("client-expired")
        await #expect {
            try await Probe.get(context: Self.context(identity), port: nginx.port, path: "/client")
        } throws: { error in
            guard let tls = error as? TLSError, tls.code == .clientCertificateRejected, let reason = tls.reason else { return false }
            return reason.contains("expired on 2021-01-01")
        }
    }

    /// A session made with one identity is never resumed with another, or with none: nginx reports whose
    /// certificate each connection carried, and a connection without identity gets the server's request again.
    @Test func sessionsAreBoundToTheClientIdentity() async throws {
        let nginx = try Self.startNginx()
        defer { nginx.stop() }
        let shared = TLSSessionCache()
        let ecdsa = try Self.context(Self.pemIdentity("client-ecdsa"), cache: shared)
        let rsa = try Self.context(Self.pemIdentity("client-rsa"), cache: shared)
        let none = try Self.context(nil, cache: shared)

        let first = try await Probe.get(context: ecdsa, port: nginx.port, path: "/client")
        #expect(!first.info.resumed)
        #expect(shared.count == 1)
        let other = try await Probe.get(context: rsa, port: nginx.port, path: "/client")
        #expect(!other.info.resumed)
        #expect(other.body == "SUCCESS O=ShopKit Test,CN=shopkit-client-rsa")
        await #expect(throws: TLSError.clientCertificateRequired(acceptedIssuers: [Self.clientCA])) {
            try await Probe.get(context: none, port: nginx.port, path: "/client")
        }
        // The identity that made a session resumes it.
        let again = try await Probe.get(context: ecdsa, port: nginx.port, path: "/client")
        #expect(again.info.resumed)
        #expect(again.body == "SUCCESS O=ShopKit Test,CN=shopkit-client-ecdsa")
    }

    @Test func anHTTPSTransportWithAnIdentityReachesTheMutualTLSServer() async throws {
        let nginx = try Self.startNginx()
        defer { nginx.stop() }
        var tls = try Probe.configuration()
        tls.clientIdentity = try Self.pemIdentity("client-ecdsa")
        let (status, text) = try await Self.get("/client", tls: tls, port: nginx.port)
        #expect(status == .ok)
        #expect(text == "SUCCESS O=ShopKit Test,CN=shopkit-client-ecdsa")
    }

    /// One GET through an `HTTPSTransport` with `tls`: the status and the body as text.
    static func get(_ path: String, tls: TLSClientConfiguration, port: Int) async throws -> (HTTPResponse.Status, String) {
        let transport = try HTTPSTransport(configuration: .init(tls: tls, timeouts: .wide()))
        defer { Task { await transport.shutdown() } }
        let (response, body) = try await transport.send(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: path), body: nil,
            baseURL: URL(string: "https://localhost:\(port)")!, operationID: "mtls")
        let text = try await String(collecting: #require(body), upTo: 4096)
        return (response.status, text)
    }
}
