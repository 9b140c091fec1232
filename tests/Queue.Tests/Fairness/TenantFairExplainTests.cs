using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Tests.Work;

namespace Queue.Tests.Fairness;

/// <summary>Explain under tenant-fair: other tenants' jobs count only as turns, one per tenant whose turn comes first.</summary>
public sealed class TenantFairExplainTests(TenantFairFixture fx) : IClassFixture<TenantFairFixture>
{
    [Fact]
    public async Task Explain_counts_the_own_tenants_jobs_by_value_and_other_tenants_by_turn()
    {
        // Created first, so their ids are lower and they win the tie of equal turns.
        var (x, _) = await fx.NewCustomerAsync();
        var (y, _) = await fx.NewCustomerAsync();
        var (t, key) = await fx.NewCustomerAsync();
        for (var i = 0; i < 5; i++)
        {
            await fx.NewJobAsync(x.Id, 1, ["explain-fair"]); // five tiny jobs of one tenant: one turn, not five jobs ahead
        }
        await fx.NewJobAsync(y.Id, 1, ["explain-fair"]);
        await fx.NewJobAsync(t.Id, 2, ["explain-fair"]);
        var mine = await fx.NewJobAsync(t.Id, 4, ["explain-fair"]);

        var (_, e) = await ExplainKit.ExplainAsync(fx, key, mine);

        Assert.Equal("tenant-fair", e.GetProperty("policy").GetString());
        Assert.Equal(1, ExplainKit.Ahead(e, "smaller"));
        Assert.Equal(0, ExplainKit.Ahead(e, "older"));
        Assert.Equal(2, ExplainKit.Ahead(e, "anotherTenantsTurn"));
        Assert.Equal(4, e.GetProperty("position").GetInt64());
        Assert.Contains("other tenants whose turn comes first", e.GetProperty("summary").GetString(), StringComparison.Ordinal);
    }
}
