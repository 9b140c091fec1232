using Dapper;
using Queue.Core.Data;
using Queue.Core.Ordering;
using Queue.Core.Security;
using Queue.Tests.Work;

namespace Queue.Tests.Fairness;

public sealed class TenantFairTests(TenantFairFixture fx) : IClassFixture<TenantFairFixture>
{
    [Fact]
    public async Task Tenants_take_turns_where_seed_would_serve_the_older_equal_jobs_first()
    {
        var (a, b) = await ThreeOlderJobsOfOneTenantAndOneOfAnotherAsync("turns");

        var served = await fx.ClaimTenantsAsync("turns", 6);

        Assert.Equal([a, b, a, b, a, b], served);
    }

    /// <summary>Three jobs of A, all as small as B's one and older: the seed order would serve all nine of A's items first.</summary>
    private async Task<(string A, string B)> ThreeOlderJobsOfOneTenantAndOneOfAnotherAsync(string task)
    {
        var (a, _) = await fx.NewCustomerAsync(task[..2] + "a-" + Guid.NewGuid().ToString("N")[..6]);
        var (b, _) = await fx.NewCustomerAsync(task[..2] + "b-" + Guid.NewGuid().ToString("N")[..6]);
        for (var i = 0; i < 3; i++)
        {
            await fx.NewJobAsync(a.Id, 3, [task]);
        }
        await fx.NewJobAsync(b.Id, 3, [task]);
        return (a.Name, b.Name);
    }

    [Fact]
    public async Task Tenants_still_take_turns_after_rewrites_have_moved_the_ordering_into_a_later_band()
    {
        var (a, b) = await ThreeOlderJobsOfOneTenantAndOneOfAnotherAsync("banded");
        var rewriter = fx.InPlaceRewriter();
        for (var n = 1; n <= 2; n++)
        {
            await rewriter.RewriteAsync("banded", fx.Clock.GetUtcNow() + TimeSpan.FromHours(n), force: true);
        }
        Assert.True(await fx.ScalarAsync<long>("SELECT band FROM ordering_band") >= 2);

        var served = await fx.ClaimTenantsAsync("banded", 6);

        Assert.Equal([a, b, a, b, a, b], served);
    }

    [Fact]
    public async Task Claims_are_shared_in_proportion_to_the_tenants_weights()
    {
        var (a, _) = await fx.NewCustomerAsync("wa-" + Guid.NewGuid().ToString("N")[..6], new TenantSettings(["text"], Weight: 3));
        var (b, _) = await fx.NewCustomerAsync("wb-" + Guid.NewGuid().ToString("N")[..6]);
        await fx.NewJobAsync(a.Id, 40, ["weights"]);
        await fx.NewJobAsync(b.Id, 40, ["weights"]);

        var served = await fx.ClaimTenantsAsync("weights", 20);

        Assert.Equal(15, served.Count(n => n == a.Name));
        Assert.Equal(5, served.Count(n => n == b.Name));
    }

    [Fact]
    public async Task A_tenant_that_was_idle_takes_only_its_return_credit_ahead_and_then_shares_equally()
    {
        var (a, _) = await fx.NewCustomerAsync("ia-" + Guid.NewGuid().ToString("N")[..6]);
        var (b, _) = await fx.NewCustomerAsync("ib-" + Guid.NewGuid().ToString("N")[..6]);
        await fx.NewJobAsync(a.Id, 40, ["idle"]);
        Assert.All(await fx.ClaimTenantsAsync("idle", 20), n => Assert.Equal(a.Name, n));

        // B was idle while A took 20 claims: it takes the default return credit of 3 ahead, not the next 20, then
        // alternates with A (level with it, B loses the tie to A's lower id).
        await fx.NewJobAsync(b.Id, 40, ["idle"]);
        var served = await fx.ClaimTenantsAsync("idle", 12);

        Assert.Equal([b.Name, b.Name, b.Name, a.Name, b.Name, a.Name, b.Name, a.Name, b.Name, a.Name, b.Name, a.Name], served);
    }

    [Fact]
    public async Task A_technicians_override_is_served_before_any_tenant_choice()
    {
        var (a, _) = await fx.NewCustomerAsync("oa-" + Guid.NewGuid().ToString("N")[..6]);
        var (b, _) = await fx.NewCustomerAsync("ob-" + Guid.NewGuid().ToString("N")[..6]);
        await fx.NewJobAsync(a.Id, 10, ["bump"]);
        var bumped = await fx.NewJobAsync(b.Id, 4, ["bump"]);
        var other = await fx.NewJobAsync(b.Id, 4, ["bump"]);
        // The bumped job's priority is worse than every value around: it still goes first, and stays first until drained.
        await fx.OverrideAsync(bumped, 1_000_000);

        var jobs = await fx.ClaimJobsAsync("bump", 6);

        Assert.Equal([bumped, bumped, bumped, bumped], jobs.Take(4));
        Assert.DoesNotContain(other, jobs.Take(4));
    }

    [Fact]
    public async Task Splitting_work_into_many_jobs_gains_a_tenant_nothing()
    {
        var (a, _) = await fx.NewCustomerAsync("sa-" + Guid.NewGuid().ToString("N")[..6]);
        var (b, _) = await fx.NewCustomerAsync("sb-" + Guid.NewGuid().ToString("N")[..6]);
        for (var i = 0; i < 10; i++)
        {
            await fx.NewJobAsync(a.Id, 2, ["split"]); // 20 items as ten tiny jobs, each smaller than B's one job
        }
        await fx.NewJobAsync(b.Id, 20, ["split"]);

        var served = await fx.ClaimTenantsAsync("split", 20);

        Assert.Equal(10, served.Count(n => n == a.Name));
        Assert.Equal(10, served.Count(n => n == b.Name));
    }

    [Fact]
    public async Task A_batch_of_claims_is_split_across_tenants_by_the_same_rule()
    {
        var (a, _) = await fx.NewCustomerAsync("ba-" + Guid.NewGuid().ToString("N")[..6], new TenantSettings(["text"], Weight: 2));
        var (b, _) = await fx.NewCustomerAsync("bb-" + Guid.NewGuid().ToString("N")[..6]);
        var (c, _) = await fx.NewCustomerAsync("bc-" + Guid.NewGuid().ToString("N")[..6]);
        await fx.NewJobAsync(a.Id, 30, ["batch"]);
        await fx.NewJobAsync(b.Id, 30, ["batch"]);
        await fx.NewJobAsync(c.Id, 30, ["batch"]);

        var served = await fx.ClaimTenantsAsync("batch", 1, max: 40);

        Assert.Equal(40, served.Count);
        Assert.Equal(20, served.Count(n => n == a.Name));
        Assert.Equal(10, served.Count(n => n == b.Name));
        Assert.Equal(10, served.Count(n => n == c.Name));
    }

    [Fact]
    public async Task A_batch_of_claims_goes_on_to_each_tenants_next_jobs_when_their_first_ones_run_dry()
    {
        var (a, _) = await fx.NewCustomerAsync("ma-" + Guid.NewGuid().ToString("N")[..6]);
        var (b, _) = await fx.NewCustomerAsync("mb-" + Guid.NewGuid().ToString("N")[..6]);
        for (var i = 0; i < 10; i++)
        {
            await fx.NewJobAsync(a.Id, 2, ["many"]);
            await fx.NewJobAsync(b.Id, 2, ["many"]);
        }

        var served = await fx.ClaimTenantsAsync("many", 1, max: 20);

        Assert.Equal(20, served.Count);
        Assert.Equal(10, served.Count(n => n == a.Name));
    }

    [Fact]
    public async Task Within_one_tenant_the_order_is_the_seeds()
    {
        var (a, _) = await fx.NewCustomerAsync("one-" + Guid.NewGuid().ToString("N")[..6]);
        var big = await fx.NewJobAsync(a.Id, 3, ["alone"]);
        var small = await fx.NewJobAsync(a.Id, 1, ["alone"]);
        var middle = await fx.NewJobAsync(a.Id, 2, ["alone"]);

        var jobs = await fx.ClaimJobsAsync("alone", 6);

        // Smallest-first (an even hour): 1 item, then 2, then 3.
        Assert.Equal([small, middle, middle, big, big, big], jobs);
    }
}
