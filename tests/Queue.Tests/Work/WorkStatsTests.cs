using System.Net;
using Queue.Core.Claims;

namespace Queue.Tests.Work;

public sealed class WorkStatsTests(StatsFixture fx) : IClassFixture<StatsFixture>
{
    [Fact]
    public async Task Claims_and_completions_reach_tenant_counters_and_workers_and_the_metrics()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 3, ["stats"]);
        using var http = fx.Worker();
        var items = await WorkFixture.ClaimAsync(http, new { worker = "host-stats", tasks = new[] { "stats" }, max = 3 });
        Assert.Equal(3, items.Length);
        Assert.Equal(HttpStatusCode.NoContent, (await WorkFixture.FinishAsync(http, items[0], "complete")).StatusCode);

        await Eventually.UntilAsync(async () => await fx.ScalarAsync<long>("SELECT COALESCE(SUM(completions), 0) FROM tenant_counters WHERE tenant_id = @Id", new { tenant.Id }) >= 1,
            "the counts are flushed", seconds: 10);
        Assert.Equal(3L, await fx.ScalarAsync<long>("SELECT claims FROM tenant_counters WHERE tenant_id = @Id", new { tenant.Id }));
        Assert.Equal(1L, await fx.ScalarAsync<long>("SELECT completions FROM tenant_counters WHERE tenant_id = @Id", new { tenant.Id }));
        Assert.Equal(3L, await fx.ScalarAsync<long>("SELECT claims FROM workers WHERE name = 'host-stats'"));
        Assert.Equal(2L, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE worker = 'host-stats' AND state = 1"));

        var metrics = await fx.Api.CreateClient().GetStringAsync(new Uri("/metrics", UriKind.Relative));
        Assert.Contains("queue_claims_total", metrics, StringComparison.Ordinal);
        Assert.Contains($"queue_items{{tenant=\"{tenant.Name}\",state=\"done\"}} 1", metrics, StringComparison.Ordinal);
        Assert.Contains($"queue_items{{tenant=\"{tenant.Name}\",state=\"leased\"}} 2", metrics, StringComparison.Ordinal);
    }
}
