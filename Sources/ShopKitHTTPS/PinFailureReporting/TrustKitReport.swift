import Foundation
import ShopKitPinning

/// Who sends pin failure reports: TrustKit's `app-*` fields, so TrustKit report collectors can file them.
public struct PinFailureReportApp: Sendable, Hashable {
    /// TrustKit's `app-bundle-id`: the app's identifier, e.g. `com.example.shop`.
    public var bundleID: String
    /// TrustKit's `app-version`.
    public var version: String
    /// TrustKit's `app-vendor-id`: an installation identifier chosen by the app (empty by default; never a
    /// user identifier or a secret).
    public var vendorID: String
    /// TrustKit's `app-platform` (default `linux`).
    public var platform: String
    /// TrustKit's `app-platform-version` (default: the kernel's version, as Foundation reports it).
    public var platformVersion: String

    /// An app identity; only the bundle id is required.
    public init(
        bundleID: String, version: String = "", vendorID: String = "", platform: String = "linux",
        platformVersion: String = ProcessInfo.processInfo.operatingSystemVersionString
    ) {
        self.bundleID = bundleID
        self.version = version
        self.vendorID = vendorID
        self.platform = platform
        self.platformVersion = platformVersion
    }
}

/// One pin failure report in TrustKit's JSON format (`TSKPinFailureReport`), as `HTTPPinFailureReporter` POSTs it.
///
///     {"app-bundle-id": "com.example.shop", "app-platform": "linux", "hostname": "api.example.com",
///      "port": 443, "noted-hostname": "*.example.com", "include-subdomains": true,
///      "enforce-pinning": true, "validated-certificate-chain": ["-----BEGIN CERTIFICATE-----\n…"],
///      "known-pins": ["pin-sha256=\"AbC…=\""], "validation-result": 1,
///      "date-time": "2026-11-24T14:00:00Z", "policy-version": 4, …}
package struct TrustKitReport: Sendable, Hashable, Codable {
    /// `app-bundle-id` (``PinFailureReportApp/bundleID``).
    package var appBundleID: String
    /// `app-version`.
    package var appVersion: String
    /// `app-vendor-id`.
    package var appVendorID: String
    /// `app-platform`.
    package var appPlatform: String
    /// `app-platform-version`.
    package var appPlatformVersion: String
    /// The host connected to.
    package var hostname: String
    /// The port connected to (443 when unknown).
    package var port: Int
    /// The pattern of the pin set that was applied (the host itself for an exact pattern).
    package var notedHostname: String
    /// Whether the pattern covers subdomains (`*.` or `**.`).
    package var includeSubdomains: Bool
    /// Whether the set was enforced (false for report-only and expired sets).
    package var enforcePinning: Bool
    /// The verified chain as PEM, leaf first (empty for a resumed session).
    package var validatedCertificateChain: [String]
    /// The configured pins as `pin-sha256="BASE64"`.
    package var knownPins: [String]
    /// TrustKit's `TSKTrustEvaluationResult`: always 1 (`FailedNoMatchingPin`), the only failure ShopKit reports.
    package var validationResult: Int
    /// When the check happened.
    package var dateTime: Date
    /// `policy-version` (a ShopKit addition; TrustKit collectors keep unknown keys): the version of the pinning
    /// policy that refused the chain (0 for the app's baseline, else the signed pin-set document's version).
    package var policyVersion: Int

    enum CodingKeys: String, CodingKey {
        case appBundleID = "app-bundle-id", appVersion = "app-version", appVendorID = "app-vendor-id"
        case appPlatform = "app-platform", appPlatformVersion = "app-platform-version"
        case hostname, port
        case notedHostname = "noted-hostname", includeSubdomains = "include-subdomains"
        case enforcePinning = "enforce-pinning", validatedCertificateChain = "validated-certificate-chain"
        case knownPins = "known-pins", validationResult = "validation-result", dateTime = "date-time"
        case policyVersion = "policy-version"
    }

    /// TrustKit's value for a chain that matched no pin.
    package static let noMatchingPin = 1

    /// The TrustKit form of `report`, sent by `app`.
    package init(_ report: PinFailureReport, app: PinFailureReportApp) {
        appBundleID = app.bundleID
        appVersion = app.version
        appVendorID = app.vendorID
        appPlatform = app.platform
        appPlatformVersion = app.platformVersion
        hostname = report.host
        port = report.port ?? 443
        notedHostname = report.hostPattern?.pattern ?? report.host
        includeSubdomains = report.hostPattern.map { $0.kind == .oneLabel || $0.kind == .anyLabels } ?? false
        enforcePinning = report.enforced
        validatedCertificateChain = report.validatedChainPEM
        knownPins = report.configuredPins.map { "pin-sha256=\"\($0.description.dropFirst("sha256/".count))\"" }
        validationResult = Self.noMatchingPin
        dateTime = report.date
        policyVersion = report.policyVersion
    }

    /// The JSON body (sorted keys, ISO 8601 date).
    package func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }

    /// Every field but the date: two reports with equal keys are duplicates (TrustKit's rate-limiter rule).
    var deduplicationKey: TrustKitReport {
        var key = self
        key.dateTime = Date(timeIntervalSince1970: 0)
        return key
    }
}
