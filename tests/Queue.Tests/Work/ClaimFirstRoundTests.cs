using Dapper;
using Queue.Core.Claims;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Work;

/// <summary>
/// A claim says which tenants wait in the database as soon as its first round has read the lanes, before it locks or
/// takes anything (<see cref="ClaimOrder.FirstRound"/>): the claim-ahead buffer learns them while the transaction
/// runs, not after it (docs/DESIGN.md "Claim-ahead that keeps the policy").
/// </summary>
public sealed class ClaimFirstRoundTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task A_claim_names_the_tenants_of_its_first_round_before_it_takes_their_items()
    {
        var (tenant, key) = await fx.NewCustomerAsync();
        var job = await fx.OneItemJobAsync(key, "first-round");
        var engine = new ClaimEngine(fx.DataSource, new SeedLaneSelector(), TimeProvider.System, new ClaimCounters());
        var slots = new[] { new ClaimSlot("w", DateTime.UtcNow.AddMinutes(5), false) };
        var seen = new List<(long[] Tenants, long Leased)>();
        var order = new ClaimOrder(["text"], slots)
        {
            FirstRound = new(() => { }, tenants =>
            {
                // Asked here, on another connection, the claim has not taken the item yet.
                using var other = fx.DataSource.OpenConnection();
                seen.Add(([.. tenants], other.ExecuteScalar<long>("SELECT COUNT(*) FROM items WHERE job_id = @job AND lease_expires_at IS NOT NULL", new { job })));
            }),
        };

        var claimed = await engine.ClaimAsync([order], default);

        Assert.Equal(job, Assert.Single(claimed[0]).JobId);
        var (tenants, leased) = Assert.Single(seen);
        Assert.Equal([tenant.Id], tenants);
        Assert.Equal(0, leased);
        Assert.Equal([tenant.Id], order.Waiting);
    }

    [Fact]
    public async Task A_claim_whose_connection_dies_after_its_first_round_named_the_tenants_takes_nothing_and_the_next_claim_takes_the_item()
    {
        var (tenant, key) = await fx.NewCustomerAsync();
        var job = await fx.OneItemJobAsync(key, "first-round-dies");
        var engine = new ClaimEngine(fx.DataSource, new SeedLaneSelector(), TimeProvider.System, new ClaimCounters());
        var told = new List<long[]>();
        var dying = new ClaimOrder(["text"], [new ClaimSlot("w", DateTime.UtcNow.AddMinutes(5), false)])
        {
            FirstRound = new(() => { }, tenants =>
            {
                told.Add([.. tenants]);
                // The claim's session dies between its first round and its COMMIT, as a server restart would end it.
                using var other = fx.DataSource.OpenConnection();
                foreach (var id in other.Query<long>("SELECT id FROM information_schema.processlist WHERE db = DATABASE() AND id <> CONNECTION_ID()"))
                {
                    other.Execute($"KILL CONNECTION {id}");
                }
            }),
        };

        await Assert.ThrowsAnyAsync<Exception>(() => engine.ClaimAsync([dying], default));

        Assert.Equal([tenant.Id], Assert.Single(told));
        await using (var check = await fx.DataSource.OpenConnectionAsync())
        {
            Assert.Equal(0, await check.ExecuteScalarAsync<long>("SELECT COUNT(*) FROM items WHERE job_id = @job AND lease_expires_at IS NOT NULL", new { job }));
        }
        var next = await engine.ClaimAsync([new ClaimOrder(["text"], [new ClaimSlot("w", DateTime.UtcNow.AddMinutes(5), false)])], default);
        Assert.Equal(job, Assert.Single(next[0]).JobId);
    }
}
