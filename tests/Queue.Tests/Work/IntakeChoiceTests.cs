using Queue.Core.Claims;

namespace Queue.Tests.Work;

/// <summary>
/// Which claim-ahead buffer takes a new job straight in (<see cref="ClaimAheadFilters.Intake"/>), on the buffers alone:
/// a filter its workers are calling now takes it even before it shows as busy, and what an old claim saw in the
/// database does not refuse it (docs/DESIGN.md "New work straight into the buffer").
/// </summary>
public sealed class IntakeChoiceTests
{
    private static readonly ClaimOptions Options = new() { Prefetch = 64, PrefetchAboveCallsPerSecond = 1000, PrefetchHoldMilliseconds = 500 };
    private static readonly DateTimeOffset T0 = new(2026, 11, 28, 10, 0, 0, TimeSpan.Zero);
    private static readonly string[] Tasks = ["t"];

    [Fact]
    public void A_filter_whose_workers_called_a_moment_ago_takes_a_new_job_before_it_is_busy()
    {
        var filters = new ClaimAheadFilters();
        var ahead = filters.Get("t", Tasks, T0);
        ahead.Called(T0, 1);
        Assert.False(ahead.Busy(T0, Options), "one call is far below the busy rate");

        Assert.Equal("t", filters.Intake(7, Tasks, 10, T0.AddMilliseconds(20), Options));
    }

    [Fact]
    public void A_filter_nobody_called_within_the_hold_time_takes_nothing()
    {
        var filters = new ClaimAheadFilters();
        filters.Get("t", Tasks, T0).Called(T0, 1);

        Assert.Null(filters.Intake(7, Tasks, 10, T0.AddMilliseconds(600), Options));
    }

    [Fact]
    public void A_tenant_the_last_claim_saw_waiting_is_refused_until_that_view_is_older_than_the_hold_time()
    {
        var filters = new ClaimAheadFilters();
        var ahead = filters.Get("t", Tasks, T0);
        ahead.SawWaiting([7], T0);
        ahead.Called(T0.AddMilliseconds(400), 1);
        Assert.Null(filters.Intake(7, Tasks, 10, T0.AddMilliseconds(450), Options));
        Assert.Equal("t", filters.Intake(8, Tasks, 10, T0.AddMilliseconds(450), Options));

        ahead.Called(T0.AddMilliseconds(800), 1);
        Assert.Equal("t", filters.Intake(7, Tasks, 10, T0.AddMilliseconds(820), Options));
    }

    [Fact]
    public void A_filter_for_other_tasks_or_a_job_that_would_overfill_it_takes_nothing()
    {
        var filters = new ClaimAheadFilters();
        filters.Get("t", Tasks, T0).Called(T0, 1);

        Assert.Null(filters.Intake(7, ["other"], 10, T0, Options));
        Assert.Null(filters.Intake(7, Tasks, (2 * Options.Prefetch) + 1, T0, Options));
    }
}
