using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Microsoft.Extensions.DependencyInjection;
using Queue.Core;
using Queue.Core.Claims;
using Queue.Core.Cluster;
using Queue.Core.Fairness;
using Queue.Core.Work;

namespace Queue.Tests.Work;

/// <summary>The claims of /next, and of a finish's <c>next</c>, answer "busy" (a clock never read), while finishes work.</summary>
public sealed class BusyClaimsFixture : WorkFixture
{
    protected override void ConfigureServices(IServiceCollection services) =>
        services.AddSingleton(sp => new NextService(sp.GetRequiredService<ClaimDispatcher>(), sp.GetRequiredService<WorkSignal>(),
            sp.GetRequiredService<WorkStats>(), sp.GetRequiredService<FairnessMonitor>(), sp.GetRequiredService<NextReplays>(),
            new DatabaseClock(TimeProvider.System)));
}

public sealed class NextExchangeBusyTests(BusyClaimsFixture fx) : IClassFixture<BusyClaimsFixture>
{
    [Fact]
    public async Task A_completion_whose_claim_part_is_busy_still_answers_200_with_no_items_and_retry_after()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 2, ["ex-busy"]);
        var taken = Assert.Single(await fx.Service<ClaimDispatcher>().ClaimAsync(new ClaimRequest(null, ["ex-busy"], 1, 60), default));
        using var http = fx.Worker();
        using (var next = await http.PostAsJsonAsync("/next", new { tasks = new[] { "ex-busy" } }))
        {
            Assert.Equal(HttpStatusCode.ServiceUnavailable, next.StatusCode);
        }

        using var r = await http.PostAsJsonAsync($"/items/{taken.Id}/complete", new
        {
            leaseToken = Convert.ToHexStringLower(taken.Token),
            next = new { tasks = new[] { "ex-busy" } },
        });

        // The completion is recorded, so the answer says so: 200, no items, and when to ask /next again.
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        Assert.Equal(0, (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items").GetArrayLength());
        Assert.Equal(TimeSpan.FromSeconds(1), r.Headers.RetryAfter?.Delta);
        Assert.Equal(2, (await fx.ItemAsync(taken.Id)).State);
        Assert.Equal(1L, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE task = 'ex-busy' AND state = 0"));
    }
}
