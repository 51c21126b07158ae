import Foundations
import Synchronization
import Testing

@Suite("Foundations: the kernel's random bytes, drawn through a pool")
struct SystemRandomTests {
    @Test("random bytes: any count, and not the same twice")
    func counts() {
        for count in [0, 1, 7, 8, 9, 12, 16, 33, 64, 65, 300, 5000] { #expect(randomBytes(count).count == count) }
        #expect(randomBytes(16) != randomBytes(16))
        #expect(randomBytes(1000) != randomBytes(1000))  // past the pool: straight from the kernel
        // Every byte value turns up: none left zero.
        var seen = Set<UInt8>()
        for _ in 0..<200 { seen.formUnion(randomBytes(12)) }
        #expect(seen.count == 256)
    }

    @Test("no draw repeats another, across refills of the pool")
    func noRepeats() {
        // 2,000 draws of 24 bytes go through the 256-byte pool about 190 times; draws of 9 bytes straddle its end.
        var seen = Set<[UInt8]>()
        for index in 0..<2000 { seen.insert(randomBytes(index % 2 == 0 ? 24 : 9)) }
        #expect(seen.count == 2000)
        var generator = SystemRandom()
        let words = Set((0..<2000).map { _ in generator.next() })
        #expect(words.count == 2000)
    }

    @Test("threads drawing at once never get the same bytes")
    func concurrentDraws() async {
        let draws = await withTaskGroup(of: [[UInt8]].self) { group in
            for _ in 0..<8 { group.addTask { (0..<500).map { _ in randomBytes(16) } } }
            return await group.reduce(into: [[UInt8]]()) { $0 += $1 }
        }
        #expect(draws.count == 4000)
        #expect(Set(draws).count == 4000)
    }

    @Test("the bytes are spread evenly: each value about as often as the others")
    func spread() {
        var counts = [Int](repeating: 0, count: 256)
        for byte in randomBytes(256 * 400) { counts[Int(byte)] += 1 }
        // 400 expected each; a standard deviation is 20. Six of them either side: a false alarm about never.
        #expect(counts.min()! > 280 && counts.max()! < 520, "\(counts.min()!)...\(counts.max()!)")
    }
}
