using Microsoft.Extensions.Options;

namespace Queue.Core.Ordering;

public enum OrderingMode
{
    Smallest,
    Oldest,
}

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
