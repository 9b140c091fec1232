using System.Net;

namespace Queue.Tests.Work;

/// <summary>A worker that never received its /next 200 sends the call again: it must get those leases, not new ones.</summary>
public sealed class RetriedNextTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
{
    [Fact]
    public async Task A_next_retried_with_the_same_request_id_returns_the_same_leases_and_takes_nothing_more()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(tenant.Id, 3, ["retried-next"]);
        using var http = fx.Worker();
        var body = new { tasks = new[] { "retried-next" }, max = 2, requestId = "call-1" };

        var first = await WorkFixture.ClaimAsync(http, body);
        var again = await WorkFixture.ClaimAsync(http, body);

        Assert.Equal(2, first.Length);
        Assert.Equal(first.Select(i => (i.GetProperty("id").GetInt64(), i.GetProperty("leaseToken").GetString())),
            again.Select(i => (i.GetProperty("id").GetInt64(), i.GetProperty("leaseToken").GetString())));
        Assert.Equal(1L, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE job_id = @Job AND state = 0", new { Job = job }));
        Assert.All(again, i => Assert.Equal(1, i.GetProperty("attempt").GetInt32()));
        foreach (var item in again)
        {
            Assert.Equal(HttpStatusCode.NoContent, (await WorkFixture.FinishAsync(http, item, "complete")).StatusCode);
        }
        // Another id is another call: it takes the item that is left.
        var other = await WorkFixture.ClaimAsync(http, new { tasks = new[] { "retried-next" }, max = 2, requestId = "call-2" });
        Assert.DoesNotContain(other[0].GetProperty("id").GetInt64(), first.Select(i => i.GetProperty("id").GetInt64()));
    }
}
