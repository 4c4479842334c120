import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ShopKitOpenSSL
import Testing

/// Issue 39, item 7: `SecureBytes` keeps its bytes out of core dumps (`MADV_DONTDUMP`) and, where the memory-lock
/// limit allows, out of swap (`mlock`). Checked on the kernel's own view of the mapping, `/proc/self/smaps`.
@Suite(.timeLimit(.minutes(3))) struct SecureBytesMemoryTests {
    /// The `VmFlags` of the mapping that holds `address`, from `/proc/self/smaps`.
    static func vmFlags(containing address: UInt) throws -> [String] {
        // Read to its end: /proc files report a size of 0, so a read sized by stat gets nothing.
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/smaps"))
        defer { try? handle.close() }
        let smaps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        var inRange = false
        for line in smaps.split(separator: "\n") {
            if let dash = line.firstIndex(of: "-"), let space = line.firstIndex(of: " "), dash < space,
                let start = UInt(line[..<dash], radix: 16),
                let end = UInt(line[line.index(after: dash)..<space], radix: 16)
            {
                inRange = start <= address && address < end
            } else if inRange, line.hasPrefix("VmFlags:") {
                return line.dropFirst("VmFlags:".count).split(separator: " ").map(String.init)
            }
        }
        throw CocoaError(.fileReadUnknown)
    }

    @Test func theBytesAreLeftOutOfCoreDumpsAndLockedWhereAllowed() throws {
        let secret = SecureBytes(copying: Array("not for a core dump".utf8))
        let address = secret.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        let flags = try Self.vmFlags(containing: address)
        #expect(flags.contains("dd"), "VmFlags \(flags): the mapping is not excluded from core dumps")
        // mlock may be refused (RLIMIT_MEMLOCK); the buffer says which, and the kernel agrees. Under
        // AddressSanitizer, whose runtime answers mlock with success and locks nothing, the kernel cannot agree.
        let underAddressSanitizer = dlsym(nil, "__asan_init") != nil
        if !underAddressSanitizer {
            #expect(flags.contains("lo") == secret.isLockedInMemory, "VmFlags \(flags), locked: \(secret.isLockedInMemory)")
        }
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(__RLIMIT_MEMLOCK.rawValue), &limit)
        if limit.rlim_cur >= 64 * 1024 { #expect(secret.isLockedInMemory, "RLIMIT_MEMLOCK is \(limit.rlim_cur)") }
        #expect(secret.withUnsafeBytes { Array($0) } == Array("not for a core dump".utf8))
    }

    @Test func manyBuffersEachKeepTheirBytes() {
        let buffers = (0..<64).map { SecureBytes(copying: Array("secret-\($0)".utf8)) }
        for (index, buffer) in buffers.enumerated() {
            #expect(buffer.withUnsafeBytes { Array($0) } == Array("secret-\(index)".utf8))
        }
        let empty = SecureBytes(copying: [UInt8]())
        #expect(empty.count == 0)
    }
}
