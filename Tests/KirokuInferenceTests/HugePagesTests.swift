import Foundation
import Testing
@testable import KirokuInference

/// A session's buffers: 2 MB-aligned, zeroed, each a mapping of its own returned to the system
/// when freed, so the next session's buffers come on fresh pages (which the kernel can back by
/// huge pages) rather than on memory an earlier session left behind in 4 KB pages.
@Suite("Huge-page buffers")
struct HugePagesTests {
    /// How many of the buffer's 4 KB pages are in memory.
    static func residentPages(_ buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        let bytes = buffer.count * MemoryLayout<Float>.stride
        var resident = [UInt8](repeating: 0, count: bytes / 4096)
        #expect(mincore(buffer.baseAddress, bytes, &resident) == 0)
        return resident.filter { $0 & 1 != 0 }.count
    }

    @Test("aligned to 2 MB, zeroed, at least the floats asked for, whole 2 MB")
    func alignedAndZeroed() {
        for count in [1, 1000, 524_288, 524_289, 3_000_000] {
            let buffer = HugePages.allocate(count)
            defer { HugePages.deallocate(buffer) }
            #expect(Int(bitPattern: buffer.baseAddress) % HugePages.alignment == 0)
            #expect(buffer.count >= count && (buffer.count * 4) % HugePages.alignment == 0)
            #expect(buffer.allSatisfy { $0 == 0 })
            buffer.initialize(repeating: 1)  // every page writable
        }
    }

    @Test("a buffer comes on fresh pages, none in memory until written, after others were written and freed")
    func freshPages() {
        // A large buffer freed first: glibc's malloc would then serve the smaller ones from its heap.
        let large = HugePages.allocate(8_000_000)
        large.initialize(repeating: 1)
        HugePages.deallocate(large)
        for count in [100_000, 500_000, 2_000_000, 100_000] {
            let buffer = HugePages.allocate(count)
            #expect(Self.residentPages(buffer) == 0)
            buffer.initialize(repeating: 2)
            #expect(Self.residentPages(buffer) == buffer.count * 4 / 4096)
            HugePages.deallocate(buffer)
        }
    }
}
