namespace Queue.Core.Ordering;

/// <summary>
/// A lane's stored value is <c>band * 2^42 + value</c> (docs/DESIGN.md, "Bands"). Each rewrite writes the next band,
/// so the entries it inserts into the ordering indexes land after every committed one: a claim's walk from the head
/// never steps over the open rewrite's uncommitted entries. Values (priorities within +-1e12, counts, ranks) stay
/// within +-2^41, so every stored value of one band sorts as its value does, and every band sorts after the one before.
/// The band is what a reader never sees: anything shown (status, explain, Admin, audit) is <see cref="Shown"/>.
/// </summary>
public static class OrderingBand
{
    private const int Bits = 42;

    /// <summary>Bands run out after 2^21 rewrites (239 years hourly); the rewrite that wraps to band 0 stalls claims once.</summary>
    public const int Count = 1 << 21;

    /// <summary>Half a band: values run from -Half to Half - 1.</summary>
    public const long Half = 1L << (Bits - 1);

    public static long Base(int band) => (long)band << Bits;

    public static long Stored(int band, long value) => Base(band) + value;

    public static long Shown(long stored) => stored - (((stored + Half) >> Bits) << Bits);

    public static int Next(int band) => band + 1 == Count ? 0 : band + 1;
}
