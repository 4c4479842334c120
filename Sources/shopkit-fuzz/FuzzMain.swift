import Foundation
import ShopKitFuzzTargets

/// The fuzz driver.
///
/// Built by `scripts/fuzz` with `-sanitize=fuzzer,address -DSHOPKIT_FUZZING`, it hands control to libFuzzer
/// (`LLVMFuzzerRunDriver`) for the target named by `SHOPKIT_FUZZ_TARGET`; every argument is libFuzzer's.
/// Built normally, it replays inputs instead: `shopkit-fuzz TARGET FILE_OR_DIRECTORY…` runs each file through
/// the target once (a crash reproducer, or a whole corpus) and prints how many it ran.
///
/// Why `LLVMFuzzerRunDriver` rather than defining `LLVMFuzzerTestOneInput` and letting libFuzzer own `main`:
/// SwiftPM links every executable with `main` aliased to the module's own entry point, which does not exist
/// under `-parse-as-library`; so this executable keeps its `main` and starts libFuzzer from it.
@main
struct FuzzMain {
    static func main() {
        #if SHOPKIT_FUZZING
        runLibFuzzer()
        #else
        replay(Array(CommandLine.arguments.dropFirst()))
        #endif
    }

    static func target(named name: String?) -> FuzzTarget {
        guard let name, let target = FuzzTarget(rawValue: name) else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
            FileHandle.standardError.write(Data("shopkit-fuzz: name a target (\(names))\n".utf8))
            exit(64)
        }
        return target
    }

    static func replay(_ arguments: [String]) {
        let target = target(named: arguments.first)
        var count = 0
        for path in arguments.dropFirst() {
            for file in files(at: path) {
                guard let data = FileManager.default.contents(atPath: file) else {
                    FileHandle.standardError.write(Data("shopkit-fuzz: cannot read \(file)\n".utf8))
                    exit(66)
                }
                target.run(Array(data))
                count += 1
            }
        }
        print("\(target.rawValue): \(count) inputs ran")
    }

    /// `path` itself, or the regular files directly inside it, sorted.
    static func files(at path: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return [path]
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.sorted().map { path + "/" + $0 }
    }
}

#if SHOPKIT_FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The target libFuzzer runs, chosen once before it starts.
nonisolated(unsafe) private var selectedTarget = FuzzTarget.spkiPin
// nonisolated(unsafe): written once in `runLibFuzzer` before libFuzzer starts, then only read from the one
// thread libFuzzer calls back on.

extension FuzzMain {
    /// Starts libFuzzer on the target `SHOPKIT_FUZZ_TARGET` names, with that target's `-max_len` unless the
    /// arguments give one.
    static func runLibFuzzer() -> Never {
        selectedTarget = target(named: ProcessInfo.processInfo.environment["SHOPKIT_FUZZ_TARGET"])
        var arguments = CommandLine.arguments
        if !arguments.contains(where: { $0.hasPrefix("-max_len=") }) {
            arguments.append("-max_len=\(selectedTarget.maxLength)")
        }
        // Lives until `exit`: libFuzzer keeps pointers into argv.
        var cArguments = arguments.map { strdup($0) } + [nil]
        var argc = CInt(arguments.count)
        let status = cArguments.withUnsafeMutableBufferPointer { buffer in
            var argv = buffer.baseAddress
            return LLVMFuzzerRunDriver(&argc, &argv) { data, size in
                selectedTarget.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
                return 0
            }
        }
        exit(status)
    }
}
#endif
