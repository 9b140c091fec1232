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

    /// <summary>The next <paramref name="claims"/> claims with tenants 1 and 2 both waiting: who got each.</summary>
    private static List<long> Both(FairShare fair, int claims, Func<long, int>? weight = null) =>
        Enumerable.Range(0, claims).Select(_ => Next(fair, [1, 2], weight ?? (_ => 1))).ToList();

    /// <summary>Tenant <paramref name="tenant"/> alone takes <paramref name="claims"/> claims.</summary>
    private static void Alone(FairShare fair, long tenant, int claims)
    {
        for (var i = 0; i < claims; i++)
        {
            Assert.Equal(tenant, Next(fair, [tenant], _ => 1));
        }
    }

    [Fact]
    public void Claims_are_shared_in_proportion_to_weight()
    {
        var fair = new FairShare();
        int Weight(long t) => t == 1 ? 2 : 1;
        var served = Both(fair, 300, Weight);
        Assert.Equal(200, served.Count(t => t == 1));
        Assert.Equal(100, served.Count(t => t == 2));
    }

    [Fact]
    public void Without_a_return_credit_a_tenant_that_was_idle_starts_level_with_the_least_served_and_banks_nothing()
    {
        var fair = new FairShare(returnCredit: 0);
        Alone(fair, 1, 100);
        // Tenant 2 arrives after 100 claims of tenant 1: it alternates with 1 instead of taking the next 100.
        var next = Both(fair, 10);
        Assert.Equal(5, next.Count(t => t == 2));
        Assert.Equal([1, 2, 1, 2, 1, 2, 1, 2, 1, 2], next); // level with tenant 1 (pass 100): the tie goes to the lower id
    }

    [Fact]
    public void A_tenant_back_from_idling_takes_its_return_credit_ahead_and_then_alternates()
    {
        var fair = new FairShare(returnCredit: 4);
        Alone(fair, 1, 100);
        // Tenant 2 banked 100 claims of idling but only 4 count: then level with tenant 1 (pass 100), the tie to the lower id.
        var next = Both(fair, 12);
        Assert.Equal([2, 2, 2, 2, 1, 2, 1, 2, 1, 2, 1, 2], next);
    }

    [Fact]
    public void A_tenant_that_stays_busy_is_not_given_its_return_credit_again()
    {
        var fair = new FairShare(returnCredit: 4);
        Alone(fair, 1, 10);
        // Both busy from here on: the credit is spent once, and every claim round that sees tenant 2 again adds nothing.
        var served = Both(fair, 200);
        Assert.Equal(102, served.Count(t => t == 2));
        Assert.Equal(98, served.Count(t => t == 1));
    }

    [Fact]
    public void A_tenant_that_idles_briefly_keeps_only_what_is_left_of_its_credit()
    {
        var fair = new FairShare(returnCredit: 4);
        Alone(fair, 1, 10);
        Assert.Equal([2, 2, 2], Both(fair, 3));
        // Tenant 2 idles while tenant 1 takes one claim: it banks that one back, never more than the credit.
        Assert.Equal(1, Next(fair, [1], _ => 1));
        Assert.Equal([2, 2, 1, 2, 1], Both(fair, 5));
    }

    [Fact]
    public void A_tenant_served_alone_carries_no_lead_into_the_arrival_of_another()
    {
        var fair = new FairShare(returnCredit: 3);
        // A small tenant's job seen by one round, its 10 items then served with nobody else waiting.
        fair.Backlogged([2]);
        fair.Charge(2, 10, 1);
        // A flood shows up: it takes its return credit ahead of the small tenant, not the small job's 10 claims too.
        fair.Backlogged([1]);
        Assert.Equal(7, fair.PassOf(1));
        Assert.Equal([1, 1, 1, 1, 2, 1], Both(fair, 6));
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
