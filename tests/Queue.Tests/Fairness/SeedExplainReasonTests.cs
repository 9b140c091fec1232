using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Tests.Work;

namespace Queue.Tests.Fairness;

/// <summary>Explain under the seed policy: jobs ahead by (value, id), grouped by why. Alone in its database: it counts every job.</summary>
public sealed class SeedExplainReasonTests(SeedClaimFixture fx) : IClassFixture<SeedClaimFixture>
{
    [Fact]
    public async Task Explain_groups_the_jobs_ahead_into_smaller_older_and_override()
    {
        var (t, key) = await fx.NewCustomerAsync();
        var (other, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(other.Id, 2, ["explain-seed"]);          // smaller (2 < 5), another tenant's: seed does not care
        var older = await fx.NewJobAsync(t.Id, 5, ["explain-seed"]);  // same value, lower id: older
        var bumped = await fx.NewJobAsync(t.Id, 50, ["explain-seed"]);
        var mine = await fx.NewJobAsync(t.Id, 5, ["explain-seed"]);
        await new TenantFairFixtureHelpers(fx).OverrideAsync(bumped, 1);

        var (status, e) = await ExplainKit.ExplainAsync(fx, key, mine);

        Assert.Equal(HttpStatusCode.OK, status);
        Assert.Equal("seed", e.GetProperty("policy").GetString());
        Assert.Equal("smallest", e.GetProperty("mode").GetString());
        Assert.Equal(5, e.GetProperty("value").GetInt64());
        Assert.False(e.GetProperty("override").GetBoolean());
        Assert.Equal(1, ExplainKit.Ahead(e, "smaller"));
        Assert.Equal(1, ExplainKit.Ahead(e, "older"));
        Assert.Equal(1, ExplainKit.Ahead(e, "override"));
        Assert.Equal(0, ExplainKit.Ahead(e, "anotherTenantsTurn"));
        Assert.Equal(3, e.GetProperty("jobsAhead").GetInt64());
        Assert.Equal(4, e.GetProperty("position").GetInt64());
        Assert.Equal("2026-11-22T03:00:00Z", e.GetProperty("nextRewrite").GetProperty("at").GetString());
        Assert.Equal("oldest", e.GetProperty("nextRewrite").GetProperty("mode").GetString());
        Assert.Contains("1 smaller", e.GetProperty("summary").GetString(), StringComparison.Ordinal);
        _ = older;
    }
}
