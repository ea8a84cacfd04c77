/// Order statistics of a set of samples.
struct Distribution {
    let sorted: [Double]

    init(_ samples: [Double]) { sorted = samples.sorted() }

    var count: Int { sorted.count }
    var isEmpty: Bool { sorted.isEmpty }
    var min: Double { sorted.first ?? .nan }
    var max: Double { sorted.last ?? .nan }
    var mean: Double { sorted.isEmpty ? .nan : sorted.reduce(0, +) / Double(sorted.count) }

    /// The median (the mean of the two middle samples for an even count).
    var median: Double {
        guard !sorted.isEmpty else { return .nan }
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }

    /// The nearest-rank percentile, `p` in 0...100.
    func percentile(_ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[Swift.min(Swift.max(rank, 1), sorted.count) - 1]
    }
}

/// The median of some samples.
func median(_ samples: [Double]) -> Double { Distribution(samples).median }
