using System.Collections.Concurrent;
using Dapper;
using Microsoft.Extensions.DependencyInjection;
using MySqlConnector;
using Queue.Core.Claims;

namespace Queue.Tests.Work;

/// <summary>
/// Claim-ahead whose claim transactions now and then run slow: the selector moves the fake clock on by up to 12 s inside
/// the transaction, past the 10 s reservation of what that transaction claims ahead, as a database stall would.
/// </summary>
public sealed class SlowClaimFixture : WorkFixture
{
    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?>
    {
        ["Claims:Prefetch"] = "64",
        ["Claims:PrefetchAboveCallsPerSecond"] = "0",
        ["Claims:ReservationSeconds"] = "10",
    };

    protected override void ConfigureServices(IServiceCollection services) =>
        services.AddSingleton<ILaneSelector>(new SlowSelector(new SeedLaneSelector(), Clock));

    private sealed class SlowSelector(ILaneSelector inner, Microsoft.Extensions.Time.Testing.FakeTimeProvider clock) : ILaneSelector
    {
        private readonly Random random = new(36);

        public async Task<IReadOnlyList<Lane>> SelectAsync(MySqlConnection conn, LaneQuery query, CancellationToken ct)
        {
            int stall;
            lock (random)
            {
                stall = random.Next(5) == 0 ? random.Next(12_000) : 0;
            }
            clock.Advance(TimeSpan.FromMilliseconds(stall));
            return await inner.SelectAsync(conn, query, ct);
        }

        public void Claimed(long tenantId, int count) => inner.Claimed(tenantId, count);

        public double? TurnOf(long tenantId) => inner.TurnOf(tenantId);

        public double TurnLength(long tenantId) => inner.TurnLength(tenantId);

        public bool TakesTurns => inner.TakesTurns;
    }
}

public sealed class OneLiveLeaseTests(SlowClaimFixture fx) : IClassFixture<SlowClaimFixture>
{
    private const int Lease = 30;

    [Fact]
    public async Task With_slow_claim_transactions_and_many_workers_no_item_is_ever_held_by_two_live_leases()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 400, ["one-lease"]);
        var handouts = new ConcurrentBag<(long Id, DateTime From, DateTime Until, string Token)>();
        var workers = Enumerable.Range(0, 16).Select(async w =>
        {
            using var http = fx.Worker();
            for (var call = 0; call < 60; call++)
            {
                foreach (var item in await WorkFixture.ClaimAsync(http, new { worker = $"w{w}", tasks = new[] { "one-lease" }, max = 1 + (w % 3), lease = Lease }))
                {
                    var until = item.GetProperty("leaseExpiresAt").GetDateTime().ToUniversalTime();
                    handouts.Add((item.GetProperty("id").GetInt64(), until.AddSeconds(-Lease), until, item.GetProperty("leaseToken").GetString()!));
                }
            }
        });
        await Task.WhenAll(workers);

        Assert.True(handouts.Count >= 400, $"only {handouts.Count} handouts");
        foreach (var byItem in handouts.GroupBy(h => h.Id))
        {
            var ordered = byItem.OrderBy(h => h.From).ToList();
            for (var k = 1; k < ordered.Count; k++)
            {
                // A new lease may start only when the one before it has expired: never two live at once.
                Assert.True(ordered[k].From >= ordered[k - 1].Until,
                    $"item {byItem.Key} was leased from {ordered[k].From:O} while the lease to {ordered[k - 1].Until:O} was live");
            }
        }
        // Every lease still live is the one the row holds.
        await using var conn = await fx.DataSource.OpenConnectionAsync();
        var now = fx.Now;
        foreach (var live in handouts.Where(h => h.Until > now).GroupBy(h => h.Id).Select(g => g.OrderBy(h => h.From).Last()))
        {
            var token = await conn.ExecuteScalarAsync<byte[]?>("SELECT lease_token FROM items WHERE id = @Id", new { live.Id });
            Assert.Equal(live.Token, Convert.ToHexStringLower(token ?? []));
        }
    }
}
