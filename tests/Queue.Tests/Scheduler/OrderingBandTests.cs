using Queue.Core.Admin;
using Queue.Core.Ordering;

namespace Queue.Tests.Scheduler;

public sealed class OrderingBandTests
{
    private static readonly long[] Values = [JobActions.MinPriority, -1, 0, 1, 10000, 10000 + (5 * 4_000_000), JobActions.MaxPriority];
    private static readonly int[] Bands = [0, 1, 2, 1000, OrderingBand.Count - 1];

    [Fact]
    public void Every_value_a_lane_can_carry_is_shown_as_it_was_stored_in_any_band()
    {
        foreach (var band in Bands)
        {
            foreach (var value in Values)
            {
                Assert.Equal(value, OrderingBand.Shown(OrderingBand.Stored(band, value)));
            }
        }
    }

    [Fact]
    public void Within_a_band_stored_values_sort_as_their_values_do_and_every_band_sorts_after_the_one_before()
    {
        foreach (var band in Bands)
        {
            var stored = Values.Select(v => OrderingBand.Stored(band, v)).ToList();
            Assert.Equal(stored.Order(), stored);
        }
        for (var band = 0; band < 3; band++)
        {
            Assert.True(OrderingBand.Stored(band, JobActions.MaxPriority) < OrderingBand.Stored(band + 1, JobActions.MinPriority));
        }
        Assert.True(OrderingBand.Stored(OrderingBand.Count - 1, JobActions.MaxPriority) < long.MaxValue);
    }

    [Fact]
    public void The_band_after_the_last_is_band_zero()
    {
        Assert.Equal(1, OrderingBand.Next(0));
        Assert.Equal(0, OrderingBand.Next(OrderingBand.Count - 1));
    }
}
