import Foundation
import ShopKitFuzzTargets

/// The fuzz driver.
///
/// Built by `scripts/fuzz` in the sanitizer build (`scripts/sanitizer-build`: AddressSanitizer, libFuzzer's
/// coverage instrumentation, `-DSHOPKIT_FUZZING`, libFuzzer without its `main`), it hands control to libFuzzer
/// (`LLVMFuzzerRunDriver`) for the target named by `SHOPKIT_FUZZ_TARGET`; every argument is libFuzzer's.
/// Built normally, it replays inputs instead: `shopkit-fuzz TARGET FILE_OR_DIRECTORY…` runs each file through
/// the target once (a crash reproducer, or a whole corpus) and prints how many it ran.
///
/// Why this `main` starts libFuzzer (`LLVMFuzzerRunDriver`) rather than letting libFuzzer's own `main` run:
/// SwiftPM links every executable with `main` aliased to the module's entry point, which does not exist under
/// `-parse-as-library` (the usual recipe), so the link fails; keeping a Swift `main` works with plain SwiftPM.
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
// libFuzzer's C entry point (no header to import). Its three pointer arguments and `int` result travel in the
// same registers under the Swift and C conventions on x86_64 and arm64 Linux, the platforms scripts/fuzz runs on.
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The target libFuzzer runs, chosen once in `LLVMFuzzerInitialize` before any input.
nonisolated(unsafe) private var selectedTarget = FuzzTarget.spkiPin
// nonisolated(unsafe): written once in `fuzzerInitialize` before libFuzzer runs any input, then only read, on
// the one thread libFuzzer runs inputs on.

extension FuzzMain {
    /// Hands the process to libFuzzer (which calls `LLVMFuzzerInitialize`, then the target for every input).
    static func runLibFuzzer() -> Never {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzerTestOneInput))
    }
}

/// Picks the target `SHOPKIT_FUZZ_TARGET` names and adds its `-max_len` unless the arguments give one.
///
/// Both libFuzzer entry points are defined, because the fuzzer runtime is linked whole (its own `main`
/// included, which refers to them); this executable's `main` is the one that runs.
@_cdecl("LLVMFuzzerInitialize")
func fuzzerInitialize(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> CInt {
    selectedTarget = FuzzMain.target(named: ProcessInfo.processInfo.environment["SHOPKIT_FUZZ_TARGET"])
    let count = Int(argc.pointee)
    let arguments = (0..<count).map { argv.pointee?[$0] }
    if arguments.contains(where: { $0.map { String(cString: $0).hasPrefix("-max_len=") } ?? false }) { return 0 }
    // Never freed: libFuzzer keeps pointers into argv for the life of the process.
    let extended = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: count + 2)
    for (index, argument) in arguments.enumerated() { extended[index] = argument }
    extended[count] = strdup("-max_len=\(selectedTarget.maxLength)")
    extended[count + 1] = nil
    argv.pointee = extended
    argc.pointee = CInt(count + 1)
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selectedTarget.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
#endif
