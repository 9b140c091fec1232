using Queue.Core;
using Queue.Core.Admin;
using Queue.Core.Audit;
using Queue.Core.Claims;
using Queue.Core.Jobs;
using Queue.Core.Ordering;

namespace Queue.Tests.Work;

/// <summary>
/// The claim-ahead buffer hands out what the database would: a tenant's new work takes its turn at once, and a cancel,
/// block or override reaches the buffer before the next answer (docs/DESIGN.md "Claim-ahead that keeps the policy").
/// </summary>
public sealed class FairClaimAheadTests(FairClaimAheadFixture fx) : IClassFixture<FairClaimAheadFixture>
{
    [Fact]
    public async Task A_tenant_whose_new_job_waits_in_the_database_is_served_by_the_next_claim_while_another_tenants_items_are_buffered()
    {
        var (flood, _) = await fx.NewCustomerAsync();
        var (small, _) = await fx.NewCustomerAsync();
        var big = await fx.NewJobAsync(flood.Id, 200, ["fair-new"]);
        Assert.All(await fx.ClaimJobsAsync("fair-new", 3), j => Assert.Equal(big, j));
        Assert.True(fx.Service<ClaimDispatcher>().Buffered > 0, "the flood's items are claimed ahead");

        var job = await fx.NewJobAsync(small.Id, 5, ["fair-new"]);
        fx.Service<WorkSignal>().Notify(); // what a submission does once it commits (JobService)
        var next = await fx.ClaimJobsAsync("fair-new", 4);

        // Level with the flood when it shows up, it may lose the first tie to the older tenant (FairShare), never two.
        Assert.Contains(job, next.Take(2));
        Assert.True(next.Count(j => j == job) >= 2, $"the small tenant got {next.Count(j => j == job)} of 4 claims: {string.Join(", ", next)}");
    }

    [Fact]
    public async Task A_cancelled_jobs_buffered_items_are_never_handed_out_after_the_cancel_commits()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(tenant.Id, 50, ["fair-cancel"]);
        Assert.All(await fx.ClaimJobsAsync("fair-cancel", 3), j => Assert.Equal(job, j));
        Assert.True(fx.Service<ClaimDispatcher>().Buffered > 0, "the job's items are claimed ahead");

        Assert.Equal(Outcome.Ok, await fx.Service<JobService>().CancelAsync(tenant.Id, job, default));

        Assert.All(await fx.ClaimJobsAsync("fair-cancel", 3), j => Assert.Equal(0, j));
    }

    [Fact]
    public async Task A_blocked_jobs_buffered_items_are_not_handed_out_and_an_override_wins_the_next_claim()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var first = await fx.NewJobAsync(tenant.Id, 40, ["fair-admin"]);
        var second = await fx.NewJobAsync(tenant.Id, 60, ["fair-admin"]);
        var third = await fx.NewJobAsync(tenant.Id, 80, ["fair-admin"]);
        Assert.All(await fx.ClaimJobsAsync("fair-admin", 3), j => Assert.Equal(first, j));
        var actions = new JobActions(fx.DataSource, fx.Service<OrderingLanes>(), fx.Clock);
        var tech = await fx.Technicians.CreateAsync("tech-" + Guid.NewGuid().ToString("N")[..8], "a long enough password", default);
        var actor = new Actor(tech.Id, tech.Login);

        Assert.Equal(ActionStatus.Done, (await actions.SetOverrideAsync(third, actor, -5, "customer escalation", fx.Now.AddHours(1), default)).Status);
        Assert.Equal(third, (await fx.ClaimJobsAsync("fair-admin", 1))[0]);

        Assert.Equal(ActionStatus.Done, (await actions.SetBlockedAsync(first, actor, true, "bad input", default)).Status);
        Assert.Equal(ActionStatus.Done, (await actions.ClearOverrideAsync(third, actor, "done", default)).Status);
        Assert.All(await fx.ClaimJobsAsync("fair-admin", 5), j => Assert.NotEqual(first, j));
    }
}

public sealed class TaskFilterBoundTests(HandoutFixture fx) : IClassFixture<HandoutFixture>
{
    [Fact]
    public async Task Task_filters_are_bounded_and_the_idle_ones_are_forgotten()
    {
        var dispatcher = fx.Service<ClaimDispatcher>();
        for (var batch = 0; batch < (ClaimDispatcher.MaxFilters + 100) / 50; batch++)
        {
            await Task.WhenAll(Enumerable.Range(batch * 50, 50).Select(i =>
                dispatcher.ClaimAsync(new ClaimRequest("w", [$"bound-{i}"], 1, 30), default)));
        }
        Assert.InRange(dispatcher.Filters, 1, ClaimDispatcher.MaxFilters);

        fx.Clock.Advance(TimeSpan.FromMinutes(1));
        await dispatcher.ReleaseStaleAsync(all: false, default);

        Assert.Equal(0, dispatcher.Filters);
    }
}
