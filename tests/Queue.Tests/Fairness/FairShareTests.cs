using Queue.Core.Fairness;

namespace Queue.Tests.Fairness;

/// <summary>The stride state alone, without a database: who is next, by how much, and idle tenants banking nothing.</summary>
public sealed class FairShareTests
{
    private static long Next(FairShare fair, IReadOnlyCollection<long> withWork, Func<long, int> weight)
    {
        fair.Backlogged(withWork);
        var t = fair.Rank(withWork)[0];
        fair.Charge(t, 1, weight(t));
        return t;
    }

    [Fact]
    public void Claims_are_shared_in_proportion_to_weight()
    {
        var fair = new FairShare();
        int Weight(long t) => t == 1 ? 2 : 1;
        var counts = Enumerable.Range(0, 300).Select(_ => Next(fair, [1, 2], Weight)).GroupBy(t => t).ToDictionary(g => g.Key, g => g.Count());
        Assert.Equal(200, counts[1]);
        Assert.Equal(100, counts[2]);
    }

    [Fact]
    public void A_tenant_that_was_idle_starts_level_with_the_least_served_and_banks_no_credit()
    {
        var fair = new FairShare();
        for (var i = 0; i < 100; i++)
        {
            Assert.Equal(1, Next(fair, [1], _ => 1));
        }
        // Tenant 2 arrives after 100 claims of tenant 1: it alternates with 1 instead of taking the next 100.
        var next = Enumerable.Range(0, 10).Select(_ => Next(fair, [1, 2], _ => 1)).ToList();
        Assert.Equal(5, next.Count(t => t == 2));
        Assert.Equal([1, 2, 1, 2, 1, 2, 1, 2, 1, 2], next); // level with tenant 1 (pass 100): the tie goes to the lower id
    }

    [Fact]
    public void A_plan_hands_out_a_round_by_weight_in_turn_order()
    {
        var fair = new FairShare();
        fair.Backlogged([5, 7]);
        var plan = fair.Plan([5, 7], t => t == 7 ? 3 : 1, 8);
        Assert.Equal([(5, 2), (7, 6)], plan);
    }
}
