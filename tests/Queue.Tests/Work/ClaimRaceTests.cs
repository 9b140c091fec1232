using System.Collections.Concurrent;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Dapper;

namespace Queue.Tests.Work;

/// <summary>Concurrent claimers never share an item, with and without claim-ahead.</summary>
public abstract class ClaimRaceTests<TFixture>(TFixture fx) where TFixture : WorkFixture
{
    [Fact]
    public async Task Thirty_two_concurrent_claimers_on_1000_items_claim_each_item_exactly_once()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var jobs = new List<long>();
        for (var j = 0; j < 4; j++)
        {
            jobs.Add(await fx.NewJobAsync(tenant.Id, 250, ["race"]));
        }
        var claimed = new ConcurrentBag<long>();
        var tokens = new ConcurrentDictionary<string, byte>();
        var workers = Enumerable.Range(0, 32).Select(async w =>
        {
            using var http = fx.Worker();
            var empty = 0;
            while (empty < 3)
            {
                // Mixed batch sizes, so grouped transactions and single claims race each other.
                var items = await WorkFixture.ClaimAsync(http, new { worker = $"w{w}", tasks = new[] { "race" }, max = 1 + (w % 4) });
                if (items.Length == 0)
                {
                    empty++;
                    continue;
                }
                foreach (var i in items)
                {
                    claimed.Add(i.GetProperty("id").GetInt64());
                    Assert.True(tokens.TryAdd(i.GetProperty("leaseToken").GetString()!, 0), "a lease token was issued twice");
                    Assert.Equal(1, i.GetProperty("attempt").GetInt32());
                }
            }
        });
        await Task.WhenAll(workers);

        Assert.Equal(1000, claimed.Count);
        Assert.Equal(1000, claimed.Distinct().Count());
        // Leases handed out from the claim-ahead buffer are written down within Claims:HandoutFlushMilliseconds of the
        // process's clock, which is the fixture's fake one: moved on a little at each look.
        long leased = 0;
        await Eventually.HoldsAsync(async () =>
        {
            fx.Clock.Advance(TimeSpan.FromMilliseconds(100));
            leased = await fx.ScalarAsync<long>(
                "SELECT COUNT(*) FROM items WHERE job_id IN @Jobs AND state = 1 AND attempts = 1 AND lease_expires_at IS NOT NULL", new { Jobs = jobs });
            return leased == 1000;
        }, TimeSpan.FromSeconds(5));
        Assert.Equal(1000L, leased);
    }

    [Fact]
    public async Task Concurrent_callers_served_together_each_hold_their_own_worker_name_lease_length_and_token()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 64, ["own-lease"]);
        var answers = await Task.WhenAll(Enumerable.Range(0, 8).Select(async w =>
        {
            using var http = fx.Worker();
            var lease = 60 + (w * 30);
            return (Worker: $"own-{w}", Lease: lease,
                Items: await WorkFixture.ClaimAsync(http, new { worker = $"own-{w}", tasks = new[] { "own-lease" }, max = 2, lease }));
        }));

        // Eight callers at once make the filter busy, so some may be served from memory: their leases are written down
        // within Claims:HandoutFlushMilliseconds of the fixture's fake clock, moved on a little at each look.
        var claimedAt = fx.Now;
        var ids = answers.SelectMany(a => a.Items).Select(i => i.GetProperty("id").GetInt64()).ToArray();
        await Eventually.HoldsAsync(async () =>
        {
            fx.Clock.Advance(TimeSpan.FromMilliseconds(100));
            return await fx.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE id IN @Ids AND state = 1 AND worker IS NOT NULL", new { Ids = ids }) == ids.Length;
        }, TimeSpan.FromSeconds(5));
        var tokens = new HashSet<string>();
        await using var conn = await fx.DataSource.OpenConnectionAsync();
        foreach (var (worker, lease, items) in answers)
        {
            Assert.NotEmpty(items);
            foreach (var i in items)
            {
                Assert.True(tokens.Add(i.GetProperty("leaseToken").GetString()!), "a lease token was issued twice");
                var row = await conn.QuerySingleAsync<(string Worker, DateTime Expires)>(
                    "SELECT worker, lease_expires_at FROM items WHERE id = @Id AND state = 1", new { Id = i.GetProperty("id").GetInt64() });
                Assert.Equal(worker, row.Worker);
                Assert.Equal(claimedAt.AddSeconds(lease), row.Expires, TimeSpan.FromSeconds(1));
                Assert.Equal(row.Expires, i.GetProperty("leaseExpiresAt").GetDateTime().ToUniversalTime(), TimeSpan.FromMilliseconds(1));
            }
        }
    }
}
