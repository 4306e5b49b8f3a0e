/// SplitMix64 (Steele, Lea, Flood 2014): a small seeded generator, so a random
/// test's cases are the same on every run. Its target depends on nothing of
/// caretaker, so that every test target, the parsers' included, can use it.
public struct SplitMix64: RandomNumberGenerator {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
    public mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }
    public mutating func pick<T>(_ items: [T]) -> T { items[int(0...items.count - 1)] }
}
