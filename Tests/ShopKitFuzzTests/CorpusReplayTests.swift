import Foundation
import Testing
import ShopKitFuzzTargets

/// Every committed fuzz input (the seed corpus and each crash reproducer under `Fuzz/TARGET/`) runs through
/// its target on every test run, so a fixed crash stays fixed without a fuzzer.
@Suite(.timeLimit(.minutes(3))) struct CorpusReplayTests {
    /// `Fuzz/` at the repository root.
    static let corpusRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    static func inputs(of target: FuzzTarget) throws -> [URL] {
        let directory = corpusRoot.appendingPathComponent(target.rawValue)
        return try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { !$0.hasDirectoryPath }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    @Test(arguments: FuzzTarget.allCases)
    func everyCorpusInputRuns(_ target: FuzzTarget) throws {
        let inputs = try Self.inputs(of: target)
        #expect(!inputs.isEmpty, "Fuzz/\(target.rawValue) has no seed")
        for input in inputs {
            let bytes = try [UInt8](Data(contentsOf: input))
            #expect(bytes.count <= target.maxLength, "\(input.lastPathComponent) is longer than -max_len")
            target.run(bytes)
        }
    }

    /// Every target has a corpus folder, and every corpus folder a target (a renamed target keeps its inputs).
    @Test func corpusFoldersMatchTheTargets() throws {
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.corpusRoot.path)
            .filter { !$0.hasPrefix(".") && !$0.contains(".") }
        #expect(Set(folders) == Set(FuzzTarget.allCases.map(\.rawValue)))
    }
}
