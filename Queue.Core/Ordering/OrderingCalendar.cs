using Microsoft.Extensions.Options;

namespace Queue.Core.Ordering;

public enum OrderingMode
{
    Smallest,
    Oldest,
}

public sealed class OrderingOptions
{
    /// <summary>Length of one ordering period; the modes alternate every period. <c>Ordering__Period=00:00:20</c> gives 20 s.</summary>
    public TimeSpan Period { get; set; } = TimeSpan.FromHours(1);

    /// <summary>IANA or system id of the zone whose midnight starts period 0.</summary>
    public string TimeZone { get; set; } = "UTC";

    /// <summary><c>seed</c> (docs/CONTRACT.md's job order) or <c>tenant-fair</c>.</summary>
    public string Policy { get; set; } = Seed;

    public const string Seed = "seed";

    public const string TenantFair = "tenant-fair";

    public bool IsValid() =>
        Period >= TimeSpan.FromSeconds(1) && Period <= TimeSpan.FromDays(1)
        && Policy is Seed or TenantFair
        && TryZone(TimeZone) is not null;

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
public sealed class OrderingCalendar(TimeProvider clock, IOptions<OrderingOptions> options)
{
    public OrderingPeriod Current => At(clock.GetUtcNow());

    public OrderingPeriod At(DateTimeOffset instant)
    {
        var o = options.Value;
        var zone = OrderingOptions.TryZone(o.TimeZone) ?? TimeZoneInfo.Utc;
        var local = TimeZoneInfo.ConvertTime(instant, zone);
        var midnightLocal = new DateTime(local.Year, local.Month, local.Day, 0, 0, 0, DateTimeKind.Unspecified);
        var midnight = new DateTimeOffset(midnightLocal, zone.GetUtcOffset(midnightLocal));
        var sinceMidnight = instant - midnight;
        var n = sinceMidnight.Ticks / o.Period.Ticks;
        var start = midnight + TimeSpan.FromTicks(n * o.Period.Ticks);
        var end = start + o.Period;
        // A period that would cross the next midnight ends there: the count restarts at 0 each day.
        var nextMidnightLocal = midnightLocal.AddDays(1);
        var nextMidnight = new DateTimeOffset(nextMidnightLocal, zone.GetUtcOffset(nextMidnightLocal));
        if (end > nextMidnight)
        {
            end = nextMidnight;
        }
        return new OrderingPeriod(n, start.ToUniversalTime(), end.ToUniversalTime(), n % 2 == 0 ? OrderingMode.Smallest : OrderingMode.Oldest);
    }
}
