using Queue.Core.Hosting;

namespace Queue.Core.Ordering;

/// <summary>Section <c>Ordering</c>: the periods, their zone, and the claim policy.</summary>
public sealed class OrderingOptions
{
    /// <summary>Length of one ordering period; the modes alternate every period. <c>Ordering__Period=00:00:20</c> gives 20 s.</summary>
    public TimeSpan Period { get; set; } = TimeSpan.FromHours(1);

    /// <summary>IANA or system id of the zone whose midnight starts period 0.</summary>
    public string TimeZone { get; set; } = "UTC";

    /// <summary>
    /// <c>tenant-fair</c> (the default: tenants share the workers by weight, each tenant's own jobs in docs/CONTRACT.md's
    /// order) or <c>seed</c> (docs/CONTRACT.md's order across all tenants, as before tenant-fair existed).
    /// </summary>
    public string Policy { get; set; } = TenantFair;

    /// <summary>
    /// Under <c>tenant-fair</c>: how many items per unit of weight a tenant that comes back from idling may take ahead of
    /// the tenants that kept busy; idling banks no more than this. 0 starts it level with them. The default 3 takes a
    /// small job's first items beside a flood out of the one-in-two pacing and keeps every second's split within Jain's
    /// index 0.9 (docs/DESIGN.md "Fairness", "Bounded return credit").
    /// </summary>
    public double ReturnCredit { get; set; } = 3;

    /// <summary>
    /// The largest in-memory working table a rewrite builds (about 150 bytes per job with work: the default 256 MiB holds
    /// about 1.8 million jobs; a 16 MiB table held 112k jobs, 168k before the slice column). A larger queue's rewrite
    /// builds it on disk (an InnoDB temporary table) instead, about a quarter slower. The memory is the database
    /// server's, and only while a rewrite runs.
    /// </summary>
    public long RewriteMemoryBytes { get; set; } = 256L * 1024 * 1024;

    /// <summary>
    /// Jobs whose lanes one statement of the rewrite writes. The rewrite writes the slice at the tail of the claim order
    /// first and the head last, so claims keep emptying, hinting and removing the head lanes while it runs.
    /// </summary>
    public int RewriteSliceJobs { get; set; } = 4096;

    /// <summary>
    /// Job ids whose values one statement of the swap rewrite's fill computes. Each statement has its own read view, so
    /// purge keeps up with the claims between them; one statement for every job stopped it for the whole fill.
    /// </summary>
    public int RewriteFillJobs { get; set; } = 20_000;

    /// <summary>
    /// How the rewrite writes the new ordering: <c>swap</c> builds it beside the old one, in bulk, and renames it into
    /// place (docs/DESIGN.md "The swap rewrite"); <c>in-place</c> moves every lane in place in one transaction, tail of
    /// the claim order first. The swap needs the TRIGGER, CREATE, DROP and ALTER privileges on the database.
    /// </summary>
    public string RewriteMethod { get; set; } = Swap;

    public const string Swap = "swap";

    public const string InPlace = "in-place";

    public const string Seed = "seed";

    public const string TenantFair = "tenant-fair";

    internal static TimeZoneInfo? TryZone(string id)
    {
        try
        {
            return TimeZoneInfo.FindSystemTimeZoneById(id);
        }
        catch (TimeZoneNotFoundException)
        {
            return null;
        }
    }
}

/// <param name="Index">Whole periods since local midnight: even is smallest-first, odd is oldest-first.</param>
public sealed record OrderingPeriod(long Index, DateTimeOffset Start, DateTimeOffset End, OrderingMode Mode)
{
    public string ModeName => Mode == OrderingMode.Smallest ? "smallest" : "oldest";

    public OrderingMode NextMode => Mode == OrderingMode.Smallest ? OrderingMode.Oldest : OrderingMode.Smallest;
}

/// <summary>
/// Which ordering mode is in force at a moment. The Api (provisional values) and the Scheduler (rewrites) both ask
/// this one class with the same settings, so they never disagree about the mode.
/// </summary>

public sealed class OrderingOptionsRules() : OptionsRules<OrderingOptions>("Ordering")
{
    protected override IEnumerable<(string Field, bool Holds, string MustBe)> Rules(OrderingOptions o) =>
    [
        (nameof(o.Period), o.Period >= TimeSpan.FromSeconds(1) && o.Period <= TimeSpan.FromDays(1), "must be 1 second to 1 day"),
        (nameof(o.Policy), o.Policy is OrderingOptions.Seed or OrderingOptions.TenantFair, $"must be {OrderingOptions.Seed} or {OrderingOptions.TenantFair}"),
        (nameof(o.ReturnCredit), o.ReturnCredit is >= 0 and <= 1000, "must be 0 to 1000"),
        (nameof(o.TimeZone), OrderingOptions.TryZone(o.TimeZone) is not null, "must be a known time zone id"),
        (nameof(o.RewriteMethod), o.RewriteMethod is OrderingOptions.Swap or OrderingOptions.InPlace, $"must be {OrderingOptions.Swap} or {OrderingOptions.InPlace}"),
        (nameof(o.RewriteSliceJobs), o.RewriteSliceJobs is >= 1 and <= 1_000_000, "must be 1 to 1000000"),
        (nameof(o.RewriteFillJobs), o.RewriteFillJobs is >= 1 and <= 10_000_000, "must be 1 to 10000000"),
        (nameof(o.RewriteMemoryBytes), o.RewriteMemoryBytes is >= 16_384 and <= 1L << 32, "must be 16384 to 4294967296"),
    ];
}
