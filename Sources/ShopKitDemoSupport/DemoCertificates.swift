import Foundation
import ShopKitPinning

/// The certificates of a ShopKit checkout's `TestCerts/` folder, for the in-process demo servers (and tests).
///
/// The demos are not self-contained: they serve these committed files, so a demo binary only works inside
/// the source tree it was built in. ``locate(from:)`` finds the folder from the running executable.
///
/// - Warning: Every private key in `TestCerts/` is public. These certificates are for loopback demos and tests.
package struct DemoCertificates: Sendable {
    /// The `TestCerts` folder.
    package let directory: URL

    /// The certificates in `directory`.
    package init(directory: URL) {
        self.directory = directory
    }

    /// Finds `TestCerts/` in the folder holding `executable` or in a folder above it, as it is for a binary
    /// built in a checkout's `.build`.
    ///
    /// - Throws: ``DemoCertificatesError/notFound(searchedFrom:)`` when no folder above holds `TestCerts/pins.txt`
    ///   (the binary was moved out of the checkout).
    package static func locate(from executable: URL = runningExecutable) throws(DemoCertificatesError)
        -> DemoCertificates
    {
        let start = executable.deletingLastPathComponent().standardizedFileURL
        var folder = start
        while true {
            let candidate = folder.appendingPathComponent("TestCerts", isDirectory: true)
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("pins.txt").path) {
                return DemoCertificates(directory: candidate)
            }
            let parent = folder.deletingLastPathComponent().standardizedFileURL
            if parent.path == folder.path { break }
            folder = parent
        }
        throw .notFound(searchedFrom: start.path)
    }

    /// The running executable with symbolic links resolved (`/proc/self/exe`; `argv[0]` where that is missing).
    package static var runningExecutable: URL {
        if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            return URL(fileURLWithPath: target)
        }
        return URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    }

    /// The PEM text of `NAME.pem`, e.g. `certificate("leaf-localhost-ecdsa")`.
    package func certificate(_ name: String) throws(DemoCertificatesError) -> String { try read("\(name).pem") }

    /// The PEM private key `NAME.key`.
    package func privateKey(_ name: String) throws(DemoCertificatesError) -> String { try read("\(name).key") }

    /// Several certificates concatenated in the given order (a chain as a server sends it, leaf first).
    package func chain(_ names: [String]) throws(DemoCertificatesError) -> String {
        var text = ""
        for name in names { text += try certificate(name) }
        return text
    }

    /// The pin the generator computed with the openssl CLI for `NAME` (from `pins.txt`).
    package func pin(_ name: String) throws(DemoCertificatesError) -> SPKIPin {
        let text = try read("pins.txt")
        let entries: [PinsFile.Entry]
        do { entries = try PinsFile.entries(text) } catch {
            throw .malformedPins(directory.appendingPathComponent("pins.txt").path, error)
        }
        guard let entry = entries.first(where: { $0.name == name }) else { throw .noPin(name) }
        return entry.pin
    }

    private func read(_ file: String) throws(DemoCertificatesError) -> String {
        let url = directory.appendingPathComponent(file)
        guard let data = FileManager.default.contents(atPath: url.path) else { throw .unreadable(url.path) }
        return String(decoding: data, as: UTF8.self)
    }
}

/// The demo certificates cannot be used; the message says where ShopKit looked.
package enum DemoCertificatesError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No `TestCerts/` in the executable's folder (given) or above it.
    case notFound(searchedFrom: String)
    /// A file of the folder cannot be read.
    case unreadable(String)
    /// `pins.txt` (path given) does not parse.
    case malformedPins(String, PinsFileError)
    /// `pins.txt` has no pin of that name.
    case noPin(String)

    package var description: String {
        switch self {
        case .notFound(let start):
            return "cannot find TestCerts/ in \(start) or any folder above it: the demo serves the ShopKit source "
                + "tree's test certificates, so run a binary built inside a ShopKit checkout"
        case .unreadable(let path):
            return "cannot read \(path): the demo needs the ShopKit source tree's TestCerts/ (see TestCerts/README.md)"
        case .malformedPins(let path, let error):
            return "\(path) does not parse: \(error)"
        case .noPin(let name):
            return "TestCerts/pins.txt has no pin for \(name); run TestCerts/generate.sh"
        }
    }
}
