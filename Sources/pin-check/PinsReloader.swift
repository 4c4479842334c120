import Dispatch
import Foundation
import ShopKitInspector

#if canImport(Glibc)
import Glibc
#endif

/// `pin-check --hosts-file FILE --pins-file PINS`: `SIGHUP` re-reads PINS into the fleet's pins, so that checks
/// that start afterwards use the new pins (checks in flight keep theirs). Each reload is announced on standard
/// error; a file that cannot be read or parsed leaves the pins as they were, and says so, naming the file and line.
///
/// A Dispatch signal source, not a signal handler: the reload runs on a queue of its own, where reading a file and
/// writing to standard error are allowed. pin-check creates it before its first check starts. `SIGHUP` is set to
/// be ignored first (its default action ends the process): libdispatch arms the source asynchronously, moments
/// after `resume()`, and a `SIGHUP` that comes before that is ignored, never fatal.
struct PinsReloader {
    private let source: any DispatchSourceSignal

    /// Starts reloading `path` into `pins` on every `SIGHUP`.
    init(path: String, into pins: ReplaceablePins) {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: DispatchQueue(label: "pin-check.pins-reload"))
        source.setEventHandler { Self.reload(path, into: pins) }
        source.resume()
        self.source = source
    }

    /// Stops reloading.
    func stop() {
        source.cancel()
    }

    /// One reload, announced on standard error.
    private static func reload(_ path: String, into pins: ReplaceablePins) {
        let line: String
        do {
            let sections = try pins.reload(fromFile: path).sections.count
            line = "pin-check: reloaded pins from \(path) (\(sections) section\(sections == 1 ? "" : "s"))"
        } catch {
            line = "pin-check: pins not reloaded, the previous ones stay: \(error)"
        }
        FileHandle.standardError.write(Data((line.split(whereSeparator: \.isNewline).joined(separator: " ") + "\n").utf8))
    }
}
