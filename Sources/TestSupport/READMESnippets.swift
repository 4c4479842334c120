import Foundation

/// Checks that README.md shows code exactly as a test file compiles it.
///
/// A test file marks its README example with a line containing `README-BEGIN` and the line `// README-END`;
/// the text in between must appear in README.md as a fenced ```` ```swift ```` block, verbatim.
package enum READMESnippets {
    /// The repository's root folder, found from this source file's location.
    package static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // TestSupport
        .deletingLastPathComponent()  // Sources
        .deletingLastPathComponent()  // package root

    /// The package's README.md.
    package static func readme() throws -> String {
        try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
    }

    /// The marked example in the file at `path` (pass the test's `#filePath`), or `nil` when it has no markers.
    package static func example(inFile path: String) throws -> String? {
        let source = try String(contentsOf: URL(fileURLWithPath: path), encoding: .utf8)
        guard let begin = source.range(of: "README-BEGIN"),
            let afterBeginLine = source[begin.upperBound...].firstIndex(of: "\n"),
            let end = source.range(of: "// README-END")
        else { return nil }
        return String(source[source.index(after: afterBeginLine)..<end.lowerBound])
    }

    /// Whether README.md contains `example` as a Swift code block.
    package static func readmeShows(_ example: String) throws -> Bool {
        try readme().contains("```swift\n" + example + "```\n")
    }

    /// The text of the document at `path`, relative to the repository's root (a DocC article, CONTRIBUTING.md).
    package static func document(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Whether the document at `path` (relative to the repository's root) contains `example` as a Swift code
    /// block: the examples that moved from the README to the DocC articles are checked there.
    package static func documentShows(_ example: String, in path: String) throws -> Bool {
        try document(path).contains("```swift\n" + example + "```\n")
    }
}
