import Foundation
import NIOConcurrencyHelpers
import ShopKitPinning

/// Every host's pins, replaceable while checks run: `pin-check --hosts-file` re-reads `--pins-file` into one on
/// `SIGHUP`.
///
/// A check reads its host's pins from here once, as it starts (``ServerInspector/replaceablePins``), so a
/// replacement applies to every check that starts after it and never to one already running. One instance is the
/// only copy of the pins a fleet check uses.
package final class ReplaceablePins: Sendable {
    private let file: NIOLockedValueBox<HostPinsFile?>

    /// Pins from `file`; nil checks every host without pins until the pins are replaced.
    package init(_ file: HostPinsFile? = nil) {
        self.file = NIOLockedValueBox(file)
    }

    /// The pins in force.
    package var current: HostPinsFile? { file.withLockedValue { $0 } }

    /// Replaces the pins: every check that starts after this returns uses `file`.
    package func replace(with file: HostPinsFile?) {
        self.file.withLockedValue { $0 = file }
    }

    /// The pins in force for `address`: those of the section covering it, or none.
    package func pins(for address: ServerAddress) -> [SPKIPin] {
        current?.section(host: address.host, port: address.port)?.pins ?? []
    }
}

extension ReplaceablePins {
    /// Reads `path` as a hosts' pins file (``HostPinsFile``) and, if it is one, makes it the pins in force.
    ///
    /// - Returns: the pins now in force.
    /// - Throws: ``PinsReloadError`` when the file cannot be read or does not parse; the pins in force are then
    ///   unchanged.
    @discardableResult
    package func reload(fromFile path: String) throws(PinsReloadError) -> HostPinsFile {
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable(path: path) }
        let file: HostPinsFile
        do { file = try HostPinsFile(parsing: String(decoding: data, as: UTF8.self)) } catch {
            throw .malformed(path: path, error)
        }
        replace(with: file)
        return file
    }
}

/// Pins that could not be reloaded: the file and, for a malformed one, the line. The pins in force stay.
package enum PinsReloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file cannot be read (missing, or not readable).
    case unreadable(path: String)
    /// The file is not a hosts' pins file; the error names the line.
    case malformed(path: String, HostPinsFileError)

    package var description: String {
        switch self {
        case .unreadable(let path):
            return "\(path): cannot read the file (check the path and permissions)"
        case .malformed(let path, let error):
            return "\(path): \(error)"
        }
    }
}
