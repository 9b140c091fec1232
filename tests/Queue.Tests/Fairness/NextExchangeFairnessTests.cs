using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Tests.Work;

namespace Queue.Tests.Fairness;

/// <summary>CONTRACT v1.3: the items a finish's <c>next</c> claims are the ones /next would claim, tenant-fair turns included.</summary>
public sealed class NextExchangeFairnessTests(TenantFairFixture fx) : IClassFixture<TenantFairFixture>
{
    [Fact]
    public async Task A_worker_looping_complete_with_next_takes_tenants_in_turn_as_next_and_complete_would()
    {
        var (a, b) = await ThreeOlderJobsOfOneTenantAndOneOfAnotherAsync("ex-fair");
        var (a2, b2) = await ThreeOlderJobsOfOneTenantAndOneOfAnotherAsync("ex-pair");

        var exchanged = await ExchangeLoopAsync("ex-fair", 6);
        var paired = await NextAndCompleteLoopAsync("ex-pair", 6);

        Assert.Equal([a, b, a, b, a, b], exchanged);
        Assert.Equal([a2, b2, a2, b2, a2, b2], paired);
    }

    /// <summary>One /next, then complete-with-next until <paramref name="n"/> items came; the tenant of each.</summary>
    private async Task<List<string>> ExchangeLoopAsync(string task, int n)
    {
        using var http = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { task } });
        var tenants = new List<string> { item.GetProperty("tenant").GetString()! };
        while (tenants.Count < n)
        {
            using var r = await WorkFixture.FinishAsync(http, item, "complete", new
            {
                leaseToken = item.GetProperty("leaseToken").GetString(),
                next = new { tasks = new[] { task } },
            });
            Assert.Equal(HttpStatusCode.OK, r.StatusCode);
            item = Assert.Single((await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items").EnumerateArray());
            tenants.Add(item.GetProperty("tenant").GetString()!);
        }
        return tenants;
    }

    private async Task<List<string>> NextAndCompleteLoopAsync(string task, int n)
    {
        using var http = fx.Worker();
        var tenants = new List<string>();
        while (tenants.Count < n)
        {
            var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { task } });
            tenants.Add(item.GetProperty("tenant").GetString()!);
            Assert.Equal(HttpStatusCode.NoContent, (await WorkFixture.FinishAsync(http, item, "complete")).StatusCode);
        }
        return tenants;
    }

    /// <summary>Three jobs of A, all as small as B's one and older: the seed order would serve all nine of A's items first.</summary>
    private async Task<(string A, string B)> ThreeOlderJobsOfOneTenantAndOneOfAnotherAsync(string task)
    {
        var (a, _) = await fx.NewCustomerAsync(task[3..] + "a-" + Guid.NewGuid().ToString("N")[..6]);
        var (b, _) = await fx.NewCustomerAsync(task[3..] + "b-" + Guid.NewGuid().ToString("N")[..6]);
        for (var i = 0; i < 3; i++)
        {
            await fx.NewJobAsync(a.Id, 3, [task]);
        }
        await fx.NewJobAsync(b.Id, 3, [task]);
        return (a.Name, b.Name);
    }
}
