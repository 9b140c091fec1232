using Queue.Core.Claims;

namespace Queue.Tests.Work;

public sealed class HeldLanesTests
{
    private static readonly DateTime T0 = new(2026, 11, 26, 10, 0, 0, DateTimeKind.Utc);

    private static HashSet<(long JobId, string Task)> Skipped(HeldLanes held, DateTime now)
    {
        var visited = new HashSet<(long JobId, string Task)>();
        held.SkipIn(visited, now);
        return visited;
    }

    [Fact]
    public void A_lane_found_held_once_is_still_probed_because_another_claim_holds_a_lane_only_for_milliseconds()
    {
        var held = new HeldLanes();
        held.Add(1, "ocr", null, T0);
        held.Add(1, "ocr", null, T0 + TimeSpan.FromMilliseconds(20));

        Assert.Empty(Skipped(held, T0 + TimeSpan.FromMilliseconds(30)));
    }

    [Fact]
    public void A_lane_held_for_long_is_skipped_for_the_hold_and_then_probed_again()
    {
        var held = new HeldLanes();
        held.Add(1, "ocr", null, T0);
        var second = T0 + HeldLanes.LongHolder;
        held.Add(1, "ocr", null, second);

        Assert.Equal([(1L, "ocr")], Skipped(held, second + TimeSpan.FromMilliseconds(1)));
        Assert.Equal([(1L, "ocr")], Skipped(held, second + HeldLanes.Hold - TimeSpan.FromMilliseconds(1)));
        Assert.Empty(Skipped(held, second + HeldLanes.Hold));
    }

    [Fact]
    public void A_held_lane_is_skipped_no_longer_than_until_its_next_item_falls_due()
    {
        var held = new HeldLanes();
        var due = T0 + HeldLanes.LongHolder + TimeSpan.FromMilliseconds(200);
        held.Add(1, "ocr", due, T0);
        held.Add(1, "ocr", due, T0 + HeldLanes.LongHolder);

        Assert.Equal([(1L, "ocr")], Skipped(held, due - TimeSpan.FromMilliseconds(1)));
        Assert.Empty(Skipped(held, due));
    }

    [Fact]
    public void Only_the_held_lane_is_skipped_not_the_other_lanes_of_its_job()
    {
        var held = new HeldLanes();
        held.Add(1, "ocr", null, T0);
        held.Add(1, "ocr", null, T0 + HeldLanes.LongHolder);
        held.Add(1, "text", null, T0 + HeldLanes.LongHolder);

        Assert.Equal([(1L, "ocr")], Skipped(held, T0 + HeldLanes.LongHolder));
    }
}
