import HTTPTypes
import Testing
@testable import ShopKitCore

@Suite(.timeLimit(.minutes(3))) struct BoundedCacheTests {
    @Test func theOldestInsertionGoesFirstWhenFull() {
        var cache = BoundedCache<String, Int>(capacity: 2)
        cache.insert(1, for: "a")
        cache.insert(2, for: "b")
        cache.insert(20, for: "b")  // a replacement keeps its age
        cache.insert(3, for: "c")
        #expect(cache["a"] == nil)
        #expect(cache["b"] == 20 && cache["c"] == 3)
        #expect(cache.count == 2)
    }

    @Test func removedKeysDoNotCountAndDoNotEvictOthers() {
        var cache = BoundedCache<String, Int>(capacity: 2)
        cache.insert(1, for: "a")
        cache.insert(2, for: "b")
        #expect(cache.removeValue(forKey: "a") == 1)
        cache.insert(3, for: "c")
        #expect(cache["b"] == 2 && cache["c"] == 3)
        cache.removeAll()
        #expect(cache.count == 0)
    }

    @Test func staysBoundedOverManyInsertions() {
        var cache = BoundedCache<Int, Int>(capacity: 3)
        for key in 0..<10_000 { cache.insert(key, for: key) }
        #expect(cache.count == 3)
        #expect(cache[9_999] == 9_999 && cache[9_997] == 9_997 && cache[9_996] == nil)
    }

    @Test func theIdempotentMethodsAreRFC9110s() {
        let idempotent: [HTTPRequest.Method] = [.get, .head, .options, .trace, .put, .delete]
        #expect(idempotent.allSatisfy { $0.isIdempotent })
        let notIdempotent: [HTTPRequest.Method] = [.post, .patch, .connect]
        #expect(notIdempotent.allSatisfy { !$0.isIdempotent })
    }
}
