import Foundation
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKitTLS

/// The log store remembers SCTs it found valid, per certificate and issuer, so repeated full handshakes with one
/// server skip OpenSSL's costly per-SCT set-up; what it remembers never makes another certificate's SCT count.
@Suite(.timeLimit(.minutes(3))) struct CTValidationCacheTests {
    typealias T = CertificateTransparencyTests

    @Test func aSecondFullHandshakeIsJudgedTheSameWithTheSignaturesRemembered() async throws {
        let server = try await OpenSSLSServer.start(
            leafFiles: TestCertificates.ctLeafFiles("leaf-ct-compliant"), connections: 2, ["-tls1_3"])
        defer { server.stop() }
        let context = try T.context()  // resumption off: two full handshakes
        let first = try #require(T.evaluation(await T.connect(context, to: server), log: server.log))
        #expect(context.ctSnapshot.logs.validatedCount == 3)
        let second = try #require(T.evaluation(await T.connect(context, to: server), log: server.log))
        #expect(first == second)
        #expect(second.verdict == .compliant)
        #expect(context.ctSnapshot.logs.validatedCount == 3)
    }

    /// `leaf-ct-other-cert` carries, byte for byte, the SCTs made for `leaf-ct-compliant`: remembered as valid for
    /// that certificate, they are checked again for this one, and are invalid.
    @Test func anSCTRememberedForOneCertificateIsNeverValidForAnother() async throws {
        let compliant = try await OpenSSLSServer.start(
            leafFiles: TestCertificates.ctLeafFiles("leaf-ct-compliant"), connections: 1, ["-tls1_3"])
        defer { compliant.stop() }
        let other = try await OpenSSLSServer.start(
            leafFiles: TestCertificates.ctLeafFiles("leaf-ct-other-cert"), connections: 1, ["-tls1_3"])
        defer { other.stop() }
        let context = try T.context()
        _ = try #require(T.evaluation(await T.connect(context, to: compliant), log: compliant.log))
        let refused = try #require(T.refusal(await T.connect(context, to: other), log: other.log))
        #expect(refused.assessments.count == 3)
        #expect(refused.assessments.allSatisfy { $0.sct.status == .invalid && !$0.counted })
    }

    /// A forged signature is never remembered: refused each time.
    @Test func anInvalidSignatureIsNeverRemembered() async throws {
        let server = try await OpenSSLSServer.start(
            leafFiles: TestCertificates.ctLeafFiles("leaf-ct-forged"), connections: 2, ["-tls1_3"])
        defer { server.stop() }
        let context = try T.context()
        for _ in 0..<2 {
            let refused = try #require(T.refusal(await T.connect(context, to: server), log: server.log))
            #expect(refused.assessments.filter { $0.sct.status == .invalid }.count == 1)
        }
        #expect(context.ctSnapshot.logs.validatedCount == 2)
    }
}
