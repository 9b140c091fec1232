using Queue.Core.Claims;

namespace Queue.Tests.Work;

/// <summary>
/// When a filter counts as busy, so that its claims reserve ahead (<see cref="ClaimAheadBuffer.Busy"/>): by its rate
/// per quarter second, or at once when several of its workers call together (docs/DESIGN.md "Handouts from memory").
/// </summary>
public sealed class ClaimAheadBusyTests
{
    private static readonly ClaimOptions Options = new() { Prefetch = 64, PrefetchAboveCallsPerSecond = 100 };
    private static readonly DateTimeOffset T0 = new(2026, 11, 29, 10, 0, 0, TimeSpan.Zero);
    private static readonly string[] Tasks = ["t"];

    [Fact]
    public void Four_workers_calling_at_once_make_a_filter_busy_before_its_rate_shows()
    {
        var ahead = new ClaimAheadFilters().Get("t", Tasks, T0);
        for (var k = 0; k < 3; k++)
        {
            ahead.Called(T0, 1);
        }
        Assert.False(ahead.Busy(T0, Options), "three calls in progress are not yet busy");

        ahead.Called(T0, 1);

        Assert.True(ahead.Busy(T0, Options));
    }

    [Fact]
    public void One_worker_calling_again_as_soon_as_it_is_answered_stays_below_the_bar_until_its_rate_shows()
    {
        var ahead = new ClaimAheadFilters().Get("t", Tasks, T0);
        for (var k = 0; k < 20; k++)
        {
            ahead.Called(T0.AddMilliseconds(k), 1);
            Assert.False(ahead.Busy(T0.AddMilliseconds(k), Options), $"call {k + 1}, one at a time");
            ahead.Left();
        }
        for (var k = 20; k < 25; k++)
        {
            ahead.Called(T0.AddMilliseconds(k), 1);
            ahead.Left();
        }

        Assert.True(ahead.Busy(T0.AddMilliseconds(25), Options), "25 calls in a quarter second are 100 a second");
    }

    [Fact]
    public void Calls_answered_no_longer_count_as_in_progress()
    {
        var ahead = new ClaimAheadFilters().Get("t", Tasks, T0);
        for (var k = 0; k < 4; k++)
        {
            ahead.Called(T0, 1);
        }
        for (var k = 0; k < 4; k++)
        {
            ahead.Left();
        }

        Assert.Equal(0, ahead.Inside);
        Assert.False(ahead.Busy(T0.AddSeconds(1), Options));
    }

    [Fact]
    public void Workers_that_start_together_show_their_rate_within_the_quarter_second_they_start_in()
    {
        // A quarter second of the clock starts at T0 (a multiple of 250 ms since the epoch).
        var ahead = new ClaimAheadFilters().Get("t", Tasks, T0);
        for (var k = 0; k < 16; k++)
        {
            ahead.Called(T0.AddMilliseconds(k / 2.0), 1);
        }

        // 16 items asked for in 8 ms: at least 16 per 50 ms, not 16 per quarter second.
        Assert.Equal(320, ahead.AskedPerSecond(T0.AddMilliseconds(10)));
        Assert.Equal(160, ahead.AskedPerSecond(T0.AddMilliseconds(100)));
        Assert.Equal(64, ahead.AskedPerSecond(T0.AddMilliseconds(300)));
    }

    [Fact]
    public void A_filter_not_yet_busy_that_holds_items_claims_as_many_again_when_a_tenant_waits_in_the_database()
    {
        var ahead = new ClaimAheadFilters().Get("t", Tasks, T0);
        for (var id = 1; id <= 12; id++)
        {
            ahead.Add(new TakenItem(id, 1, 1, id, "t", 0, [1], T0.UtcDateTime.AddSeconds(10), Reservation: true), T0.UtcDateTime.AddSeconds(1), 0, byTenants: true);
        }
        Assert.False(ahead.Busy(T0, Options));

        Assert.Equal(0, ahead.Plan(1, fresh: false, T0, Options));
        Assert.Equal(12, ahead.Plan(1, fresh: true, T0, Options));
        Assert.Equal(0, ahead.Target);
    }

    [Fact]
    public void A_filter_not_busy_that_holds_nothing_claims_only_for_its_callers_even_when_new_work_was_signalled()
    {
        var ahead = new ClaimAheadFilters().Get("t", Tasks, T0);

        Assert.Equal(0, ahead.Plan(1, fresh: true, T0, Options));
    }
}
