namespace Queue.Tests.Work;

/// <summary>Claim-ahead is on by default, but only for a task filter polled often (Claims:PrefetchAboveCallsPerSecond).</summary>
public sealed class ClaimAheadGateTests(WorkFixture fx) : IClassFixture<WorkFixture>
{
    [Fact]
    public async Task A_worker_polling_now_and_then_is_served_by_transactions_and_nothing_is_claimed_ahead_for_it()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(tenant.Id, 20, ["now-and-then"]);
        using var worker = fx.Worker();
        for (var i = 0; i < 5; i++)
        {
            Assert.Equal(2, (await WorkFixture.ClaimAsync(worker, new { worker = "w", tasks = new[] { "now-and-then" }, max = 2 })).Length);
        }

        Assert.Equal(10L, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE job_id = @Job AND state = 1 AND lease_expires_at IS NOT NULL AND attempts = 1", new { Job = job }));
        Assert.Equal(0L, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE job_id = @Job AND state = 1 AND lease_expires_at IS NULL", new { Job = job }));
    }
}
