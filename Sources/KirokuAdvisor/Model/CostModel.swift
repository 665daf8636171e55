/// What a pool costs: per hour, and per million images both at saturation and at the
/// utilisation it actually runs at (the seed's saving came from idle GPUs, not from CPUs being
/// cheaper per image at full load).
public struct CostEstimate: Sendable, Equatable, Codable {
    /// The region priced.
    public var region: String
    /// One host's on-demand and spot price per hour.
    public var onDemandPerHour: Double, spotPerHour: Double?
    /// The share of hosts on spot (0 when the type has no spot price).
    public var spotFraction: Double
    /// One host's price per hour at that blend.
    public var blendedPerHour: Double
    /// The pool's hosts times the blended price.
    public var poolPerHour: Double
    /// Dollars per million images with every host 100% busy.
    public var perMillionAtSaturation: Double
    /// Dollars per million images at `utilisation`.
    public var perMillionAtUtilisation: Double
    /// The mean utilisation used.
    public var utilisation: Double

    /// Prices `instances` hosts of a type at `price`, each serving one image per `serviceTime`
    /// seconds when busy, `utilisation` busy on average.
    public init(region: String, price: InstanceCatalog.Price, spotFraction: Double, instances: Int, serviceTime: Double, utilisation: Double) {
        self.region = region
        onDemandPerHour = price.onDemand
        spotPerHour = price.spot
        self.spotFraction = price.spot == nil ? 0 : spotFraction
        blendedPerHour = (1 - self.spotFraction) * price.onDemand + self.spotFraction * (price.spot ?? price.onDemand)
        poolPerHour = Double(instances) * blendedPerHour
        perMillionAtSaturation = blendedPerHour * serviceTime / 3600 * 1_000_000
        self.utilisation = utilisation
        perMillionAtUtilisation = utilisation > 0 ? perMillionAtSaturation / utilisation : .infinity
    }
}
