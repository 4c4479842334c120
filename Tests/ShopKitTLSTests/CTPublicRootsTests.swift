import Foundation
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKitTLS

/// Which roots Certificate Transparency applies to when the system's public roots cannot be read (no
/// `/usr/share/ca-certificates/mozilla`: another distribution, a container): every root but the app's own PEM
/// anchors, so CT is applied too widely rather than silently not at all.
@Suite struct CTPublicRootsTests {
    static func info(_ name: String) -> CertificateInfo {
        CertificateInfo(
            spkiPin: TestCertificates.pin(name), subject: "CN=\(name)", issuer: "CN=issuer", subjectAlternativeNames: [],
            notBefore: .distantPast, notAfter: .distantFuture, keyDescription: "ECDSA P-256",
            signatureAlgorithm: "ecdsa-with-SHA256")
    }

    static let chainToTestRoot = VerifiedChain(verifiedCertificates: [info("leaf-localhost-ecdsa"), info("root")])

    @Test func withoutTheSystemsPublicRootsEveryRootButTheAppsOwnIsPublic() throws {
        let missing = "/nonexistent-\(UUID())"
        let system = try CertificateTransparencyState(
            CertificateTransparencyPolicy(defaultMode: .enforced), trustRoots: .system, systemDirectory: missing)
        #expect(system.publicRoots == nil)
        #expect(system.isPublic(Self.chainToTestRoot), "a root from the system store must count as public")

        let appOwn = try CertificateTransparencyState(
            CertificateTransparencyPolicy(defaultMode: .enforced),
            trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: true), systemDirectory: missing)
        #expect(!appOwn.isPublic(Self.chainToTestRoot), "the app's own anchor is exempt, as browsers exempt added roots")
    }

    @Test func anEmptyFolderIsTheSameAsAMissingOne() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-no-roots-\(UUID())")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: empty) }
        let state = try CertificateTransparencyState(
            CertificateTransparencyPolicy(defaultMode: .enforced), trustRoots: .system, systemDirectory: empty.path)
        #expect(state.publicRoots == nil)
        #expect(state.isPublic(Self.chainToTestRoot))
    }

    @Test func aFolderHoldingTheRootMakesItPublicAndNothingElse() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-roots-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try TestCertificates.certificate("other-root").write(
            to: folder.appendingPathComponent("other.crt"), atomically: true, encoding: .utf8)
        let state = try CertificateTransparencyState(
            CertificateTransparencyPolicy(defaultMode: .enforced), trustRoots: .system, systemDirectory: folder.path)
        #expect(state.publicRoots == [TestCertificates.pin("other-root")])
        #expect(!state.isPublic(Self.chainToTestRoot))
    }
}
