using MySqlConnector;
using Queue.Core.Claims;
using Queue.Core.Fairness;
using Queue.Tests.Work;

namespace Queue.Tests.Fairness;

/// <summary>
/// A tenant's quota in a claim round spans several of its lanes (<see cref="Lane.Quota"/>): tenants of many small jobs
/// get their shares in one round, not one job per round.
/// </summary>
public sealed class QuotaAcrossLanesTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
{
    [Fact]
    public async Task Two_tenants_of_small_jobs_get_their_shares_of_a_claim_in_one_round_and_no_more()
    {
        var (a, _) = await fx.NewCustomerAsync();
        var (b, _) = await fx.NewCustomerAsync();
        for (var j = 0; j < 4; j++)
        {
            await fx.NewJobAsync(a.Id, 3, ["quota-lanes"]);
            await fx.NewJobAsync(b.Id, 3, ["quota-lanes"]);
        }
        var selector = new CountingSelector(new TenantFairLaneSelector(new FairShare(), TimeProvider.System));
        var engine = new ClaimEngine(fx.DataSource, selector, TimeProvider.System, new ClaimCounters());
        var until = DateTime.UtcNow.AddMinutes(5);
        var slots = Enumerable.Range(0, 12).Select(k => new ClaimSlot($"w{k}", until, false)).ToList();

        var claimed = (await engine.ClaimAsync([new ClaimOrder(["quota-lanes"], slots)], default))[0];

        Assert.Equal(12, claimed.Count);
        Assert.Equal(6, claimed.Count(i => i.TenantId == a.Id));
        Assert.Equal(6, claimed.Count(i => i.TenantId == b.Id));
        // One lane per tenant per round took three items each of the tenants' quota of six: two rounds.
        Assert.Equal(1, selector.Rounds);
    }

    private sealed class CountingSelector(ILaneSelector inner) : ILaneSelector
    {
        public int Rounds { get; private set; }

        public bool TakesTurns => inner.TakesTurns;

        public async Task<IReadOnlyList<Lane>> SelectAsync(MySqlConnection conn, LaneQuery query, CancellationToken ct)
        {
            Rounds++;
            return await inner.SelectAsync(conn, query, ct);
        }

        public void Claimed(long tenantId, int count) => inner.Claimed(tenantId, count);

        public double? TurnOf(long tenantId) => inner.TurnOf(tenantId);
    }
}
