using Queue.Core.Claims;
using Queue.Core.Fairness;
using Queue.Core.Ordering;
using Queue.Core.Security;
using Queue.Tests.Work;

namespace Queue.Tests.Fairness;

/// <summary>
/// The policy a deployment gets without setting <c>Ordering:Policy</c>: tenant-fair. Every test has a second tenant with
/// work, so the seed's order (one queue for everyone) would fail it.
/// </summary>
public sealed class DefaultPolicyTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
{
    [Fact]
    public void Without_a_setting_the_api_claims_through_the_tenant_fair_selector()
    {
        Assert.Equal(OrderingOptions.TenantFair, fx.Service<Microsoft.Extensions.Options.IOptions<OrderingOptions>>().Value.Policy);
        Assert.IsType<TenantFairLaneSelector>(fx.Service<ILaneSelector>());
    }

    [Fact]
    public async Task In_a_smallest_first_period_a_tenants_jobs_go_smallest_first_while_the_tenants_take_turns()
    {
        MoveToNext(OrderingMode.Smallest);
        var (a, b) = await TwoTenantsAsync("dsm");
        var big = await fx.NewJobAsync(a.Id, 5, ["d-smallest"]);
        var small = await fx.NewJobAsync(a.Id, 2, ["d-smallest"]);
        var mid = await fx.NewJobAsync(a.Id, 3, ["d-smallest"]);
        await fx.NewJobAsync(b.Id, 4, ["d-smallest"]); // smaller than a's big job, bigger than its small one

        var served = await ClaimAsync("d-smallest", 14);

        AssertTurnsAlternate(served.Take(8), a.Name, b.Name);
        Assert.Equal([small, small, mid, mid, mid, big, big, big, big, big], served.Where(s => s.Tenant == a.Name).Select(s => s.Job));
    }

    [Fact]
    public async Task In_an_oldest_first_period_a_tenants_jobs_go_oldest_first_while_the_tenants_take_turns()
    {
        MoveToNext(OrderingMode.Oldest);
        var (a, b) = await TwoTenantsAsync("dol");
        var older = await fx.NewJobAsync(a.Id, 4, ["d-oldest"]);
        var newer = await fx.NewJobAsync(a.Id, 1, ["d-oldest"]);
        await fx.NewJobAsync(b.Id, 4, ["d-oldest"]); // the newest job of all: the seed would serve it last

        var served = await ClaimAsync("d-oldest", 9);

        AssertTurnsAlternate(served.Take(8), a.Name, b.Name);
        Assert.Equal([older, older, older, older, newer], served.Where(s => s.Tenant == a.Name).Select(s => s.Job));
    }

    [Fact]
    public async Task Claims_split_three_to_one_between_tenants_of_weights_three_and_one()
    {
        var (heavy, _) = await fx.NewCustomerAsync("dw3-" + Guid.NewGuid().ToString("N")[..6], new TenantSettings(["text"], Weight: 3));
        var (light, _) = await fx.NewCustomerAsync("dw1-" + Guid.NewGuid().ToString("N")[..6]);
        // The light tenant's job is the older and the smaller: the seed would give it every claim.
        await fx.NewJobAsync(light.Id, 30, ["d-weights"]);
        await fx.NewJobAsync(heavy.Id, 40, ["d-weights"]);

        var served = await ClaimAsync("d-weights", 20);

        Assert.Equal(15, served.Count(s => s.Tenant == heavy.Name));
        Assert.Equal(5, served.Count(s => s.Tenant == light.Name));
    }

    [Fact]
    public async Task A_technicians_override_of_the_lightest_tenants_job_wins_over_every_tenants_turn()
    {
        var (heavy, _) = await fx.NewCustomerAsync("do3-" + Guid.NewGuid().ToString("N")[..6], new TenantSettings(["text"], Weight: 3));
        var (light, _) = await fx.NewCustomerAsync("do1-" + Guid.NewGuid().ToString("N")[..6]);
        var (third, _) = await fx.NewCustomerAsync("do2-" + Guid.NewGuid().ToString("N")[..6], new TenantSettings(["text"], Weight: 2));
        await fx.NewJobAsync(heavy.Id, 20, ["d-bump"]);
        await fx.NewJobAsync(third.Id, 20, ["d-bump"]);
        await fx.NewJobAsync(light.Id, 2, ["d-bump"]);
        var bumped = await fx.NewJobAsync(light.Id, 4, ["d-bump"]);
        // A round first, so the light tenant has had its turn and the others are due before it comes round again.
        Assert.Contains(light.Name, (await ClaimAsync("d-bump", 6)).Select(s => s.Tenant));

        // A priority worse than every value around: only the override puts it first, across all three tenants.
        await TenantFairFixture.OverrideAsync(fx, bumped, 1_000_000);
        var served = await ClaimAsync("d-bump", 5);

        Assert.Equal([bumped, bumped, bumped, bumped], served.Take(4).Select(s => s.Job));
        Assert.NotEqual(bumped, served[4].Job);
    }

    private async Task<(Tenant A, Tenant B)> TwoTenantsAsync(string prefix)
    {
        var (a, _) = await fx.NewCustomerAsync(prefix + "a-" + Guid.NewGuid().ToString("N")[..6]);
        var (b, _) = await fx.NewCustomerAsync(prefix + "b-" + Guid.NewGuid().ToString("N")[..6]);
        return (a, b);
    }

    /// <summary>Equal weights: each pair of claims serves both tenants (who starts is the share's tie rule).</summary>
    private static void AssertTurnsAlternate(IEnumerable<(string Tenant, long Job)> served, string a, string b)
    {
        foreach (var pair in served.Chunk(2))
        {
            Assert.Equal([a, b], pair.Select(s => s.Tenant).Order(StringComparer.Ordinal).ToArray());
        }
    }

    private async Task<List<(string Tenant, long Job)>> ClaimAsync(string task, int n)
    {
        using var http = fx.Worker();
        var served = new List<(string, long)>();
        for (var i = 0; i < n; i++)
        {
            var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { task } });
            served.Add((item.GetProperty("tenant").GetString()!, item.GetProperty("jobId").GetInt64()));
        }
        return served;
    }

    /// <summary>The fixture's clock shares the class: moves it into the next period of <paramref name="mode"/> if needed.</summary>
    private void MoveToNext(OrderingMode mode)
    {
        var calendar = fx.Service<OrderingCalendar>();
        while (calendar.Current.Mode != mode)
        {
            var now = fx.Clock.GetUtcNow();
            fx.Clock.SetUtcNow(new DateTimeOffset(now.Year, now.Month, now.Day, now.Hour, 0, 0, TimeSpan.Zero).AddHours(1).AddMinutes(1));
        }
    }
}
