import Foundation
import Logging
import NIOCore
import NIOPosix
import ShopKitPinning
import ShopKitTLS

/// Checks many servers concurrently, each as ``ServerInspector`` checks one: `pin-check --hosts-file`'s engine.
///
/// At most ``concurrency`` connections are open at a time, each bounded by ``timeout``; every report is handed
/// to the caller as soon as it is ready and not kept, so memory stays that of `concurrency` checks whatever the
/// number of hosts, and the run takes about (hosts ÷ concurrency) × one handshake. One TLS context (one trust
/// store load) serves every check; resumption is off, so each check is a full handshake with its chain.
///
/// The pins may be replaced while the fleet runs (``ReplaceablePins/replace(with:)``, as `pin-check` does on
/// `SIGHUP`): each check reads its host's pins as it starts, so checks that start afterwards use the new pins and
/// checks in flight keep theirs.
package struct FleetInspector: Sendable {
    /// The servers, in the hosts file's order.
    package var addresses: [ServerAddress]
    /// Each host's pins, from one file, replaceable while the fleet runs; hosts it does not cover are checked
    /// without pins.
    package var pins: ReplaceablePins
    /// PEM trust anchors replacing the system store; nil means the system store.
    package var trustAnchorsPEM: String?
    /// Limit for connect and handshake, per host.
    package var timeout: Duration
    /// The most checks running at once.
    package var concurrency: Int
    /// The clock for days left and pin-set dates.
    package var now: @Sendable () -> Date
    /// The Certificate Transparency policy every check applies (report-only, bundled list, by default).
    package var certificateTransparency = CertificateTransparencyPolicy()
    /// Where ``certificateTransparency``'s log list came from: `bundled` or a file's path.
    package var certificateTransparencyLogListSource = "bundled"

    /// A fleet check with the given inputs; `concurrency` is at least 1.
    package init(
        addresses: [ServerAddress], pins: ReplaceablePins = ReplaceablePins(), trustAnchorsPEM: String? = nil,
        timeout: Duration = .seconds(10), concurrency: Int = 16, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.addresses = addresses
        self.pins = pins
        self.trustAnchorsPEM = trustAnchorsPEM
        self.timeout = timeout
        self.concurrency = max(1, concurrency)
        self.now = now
    }

    /// The inspector for the host at `index`: it reads the host's pins from ``pins`` when its check starts.
    package func inspector(at index: Int) -> ServerInspector {
        var inspector = ServerInspector(
            address: addresses[index], trustAnchorsPEM: trustAnchorsPEM, timeout: timeout, now: now, replaceablePins: pins)
        inspector.certificateTransparency = certificateTransparency
        inspector.certificateTransparencyLogListSource = certificateTransparencyLogListSource
        return inspector
    }

    /// Checks every host, calling `onReport` with the host's index and report as each check ends (in completion
    /// order, one call at a time).
    ///
    /// - Throws: `TLSContextError` before any connection: `.trustAnchors` for anchors that do not load,
    ///   `.invalidInput` for a host whose pins cannot be applied, `.system` when OpenSSL cannot be set up.
    package func run(
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        onReport: (Int, ServerReport) -> Void
    ) async throws(TLSContextError) {
        for index in addresses.indices { _ = try inspector(at: index).resolvingPins().pinningPolicy() }
        var configuration = TLSClientConfiguration(
            trustRoots: trustAnchorsPEM.map { .pem($0, addingToSystem: false) } ?? .system,
            logger: Logger(label: "ShopKitTLS.fleet", factory: { _ in SwiftLogNoOpLogHandler() }),
            sessionResumption: false)
        configuration.certificateTransparency = certificateTransparency
        let context = try TLSClientContext(configuration: configuration, sessionCache: TLSSessionCache(), now: now)
        let count = addresses.count
        let width = concurrency
        await withTaskGroup(of: (Int, ServerReport).self) { tasks in
            var next = 0
            func startNext() {
                guard next < count else { return }
                let inspector = self.inspector(at: next)
                let index = next
                next += 1
                tasks.addTask { (index, await inspector.inspect(sharedContext: context, group: group)) }
            }
            for _ in 0..<min(width, count) { startNext() }
            while let (index, report) = await tasks.next() {
                onReport(index, report)
                startNext()
            }
        }
    }
}

/// A hosts file for `pin-check --hosts-file`: one `HOST[:PORT]` per line, `#` comments and blank lines allowed.
package enum HostsFile {
    /// The servers of `text`, in file order.
    ///
    /// - Throws: ``HostsFileError`` naming the first line that is not `HOST[:PORT]`, or when there is none.
    package static func parse(_ text: String) throws(HostsFileError) -> [ServerAddress] {
        var addresses: [ServerAddress] = []
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let content = (raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                .trimmingCharacters(in: .whitespaces)
            guard !content.isEmpty else { continue }
            do { addresses.append(try ServerAddress(parsing: content)) } catch {
                throw HostsFileError(message: "line \(index + 1): \(error)")
            }
        }
        guard !addresses.isEmpty else { throw HostsFileError(message: "the file holds no HOST[:PORT] line") }
        return addresses
    }
}

/// A hosts file that cannot be used; the message names the line.
package struct HostsFileError: Error, Sendable, Equatable, CustomStringConvertible {
    package let message: String
    package var description: String { message }
}
