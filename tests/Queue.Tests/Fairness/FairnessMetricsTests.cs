using Queue.Core.Fairness;

namespace Queue.Tests.Fairness;

/// <summary>The metrics against values computed by hand on a small fixed trace (worked out in the comments).</summary>
public sealed class FairnessMetricsTests
{
    private const long A = 1;
    private const long B = 2;
    private static readonly DateTime T0 = new(2026, 1, 1, 0, 0, 0, DateTimeKind.Utc);

    private static DateTime S(int seconds) => T0.AddSeconds(seconds);

    // A submits job 10 (4 items) at 0 s; B submits job 20 (2 items) at 5 s and job 21 (1 item) at 65 s.
    // Two workers, 10 s per item.
    private static readonly TraceEvent[] Trace =
    [
        new(S(0), TraceKind.Submitted, A, 10, 4),
        new(S(0), TraceKind.Claimed, A, 10, 2),   // only A has work: A entitled 1 + 1
        new(S(5), TraceKind.Submitted, B, 20, 2),
        new(S(10), TraceKind.Completed, A, 10, 2),
        new(S(10), TraceKind.Claimed, B, 20, 1),  // A, B have work: 0.5 each; B waited 5 s
        new(S(10), TraceKind.Claimed, A, 10, 1),  // A, B: 0.5 each; A's job waited 0 -> 10 s
        new(S(20), TraceKind.Completed, B, 20, 1),
        new(S(20), TraceKind.Completed, A, 10, 1),
        new(S(20), TraceKind.Claimed, B, 20, 1),  // A, B: 0.5 each; B's job waited 10 -> 20 s
        new(S(20), TraceKind.Claimed, A, 10, 1),  // only A: 1
        new(S(30), TraceKind.Completed, B, 20, 1),
        new(S(30), TraceKind.Completed, A, 10, 1),
        new(S(65), TraceKind.Submitted, B, 21, 1), // never claimed before the end at 90 s
    ];

    private static FairnessReport Report() => FairnessMetrics.Analyze(Trace, new ServiceModel(2, TimeSpan.FromSeconds(10)), end: S(90));

    [Fact]
    public void Jain_of_a_minute_compares_claims_received_with_claims_entitled()
    {
        // Minute 0: A entitled 1+1+0.5+0.5+0.5+1 = 4.5, received 4; B entitled 1.5, received 2.
        // x = (8/9, 4/3): J = (20/9)^2 / (2 * (64/81 + 144/81)) = 400/416 = 25/26. Minute 1 has no claim: no value.
        var minutes = Report().Minutes;
        var m = Assert.Single(minutes);
        Assert.Equal(T0, m.Minute);
        Assert.Equal(25.0 / 26.0, m.Jain, 9);
        Assert.Equal(2, m.Tenants);
        Assert.Equal(6, m.Decisions);
    }

    [Fact]
    public void Starvation_is_the_longest_wait_of_a_job_with_ready_items_for_its_next_claim()
    {
        var starvation = Report().Starvation;
        Assert.Equal(TimeSpan.FromSeconds(10), starvation[A]);  // job 10 waited 0 -> 10 s, then 10 -> 20 s
        Assert.Equal(TimeSpan.FromSeconds(25), starvation[B]);  // job 21: 65 s -> end at 90 s
    }

    [Fact]
    public void Tenant_starvation_counts_only_time_without_any_claim_of_the_tenant()
    {
        // A has two jobs of 2 items; its claims alternate between them every 10 s, so job 11 waits 20 s for its second
        // claim (job starvation) while the tenant itself never goes 10 s without a claim.
        TraceEvent[] trace =
        [
            new(S(0), TraceKind.Submitted, A, 10, 2), new(S(0), TraceKind.Submitted, A, 11, 2),
            new(S(0), TraceKind.Claimed, A, 10, 1), new(S(10), TraceKind.Claimed, A, 11, 1),
            new(S(20), TraceKind.Claimed, A, 10, 1), new(S(30), TraceKind.Claimed, A, 11, 1),
        ];
        var r = FairnessMetrics.Analyze(trace, new ServiceModel(1, TimeSpan.FromSeconds(1)));
        Assert.Equal(TimeSpan.FromSeconds(20), r.Starvation[A]);
        Assert.Equal(TimeSpan.FromSeconds(10), r.TenantStarvation[A]);
        Assert.Equal(TimeSpan.FromSeconds(10), Report().TenantStarvation[A]);
        Assert.Equal(TimeSpan.FromSeconds(25), Report().TenantStarvation[B]);
    }

    [Fact]
    public void Stretch_is_turnaround_over_the_jobs_service_time_alone_on_the_whole_pool()
    {
        var r = Report();
        var byJob = r.Jobs.ToDictionary(j => j.Job);
        Assert.Equal(TimeSpan.FromSeconds(30), byJob[10].Turnaround); // 0 -> 30 s; alone: ceil(4/2) * 10 s = 20 s
        Assert.Equal(1.5, byJob[10].Stretch, 9);
        Assert.Equal(TimeSpan.FromSeconds(25), byJob[20].Turnaround); // 5 -> 30 s; alone: 10 s
        Assert.Equal(2.5, byJob[20].Stretch, 9);
        Assert.True(byJob[21].Censored);                               // unfinished: 65 -> 90 s, a lower bound
        Assert.Equal(2.5, byJob[21].Stretch, 9);
        var small = r.Stretch.Single(b => b.Name == "1-10");
        Assert.Equal(3, small.Jobs);
        Assert.Equal(2.5, small.P50, 9); // nearest rank: sorted (1.5, 2.5, 2.5), rank ceil(1.5) = 2
        Assert.Equal(2.5, small.P95, 9);
        Assert.All(r.Stretch.Where(b => b.Name != "1-10"), b => Assert.Equal(0, b.Jobs));
    }

    [Fact]
    public void Shares_count_only_decisions_where_another_tenant_also_had_work()
    {
        // Decisions at 10 s (B), 10 s (A) and 20 s (B) had both tenants waiting: A got 1 of 3, entitled to 1.5 of 3.
        var shares = Report().Shares;
        Assert.Equal(3, shares[A].Decisions);
        Assert.Equal(1.0 / 3, shares[A].Share, 9);
        Assert.Equal(0.5, shares[A].WeightShare, 9);
        Assert.Equal(-1.0 / 3, shares[A].Deviation, 9);
        Assert.Equal(2.0 / 3, shares[B].Share, 9);
    }

    [Fact]
    public void Weights_scale_what_each_tenant_is_entitled_to()
    {
        // A weight 3, B weight 1, both always waiting; A gets 3 claims and B 1: exactly fair, so J = 1 and A's share 0.75.
        TraceEvent[] trace =
        [
            new(S(0), TraceKind.Submitted, A, 10, 100), new(S(0), TraceKind.Submitted, B, 20, 100),
            new(S(1), TraceKind.Claimed, A, 10, 3), new(S(1), TraceKind.Claimed, B, 20, 1),
        ];
        var r = FairnessMetrics.Analyze(trace, new ServiceModel(1, TimeSpan.FromSeconds(1)), new Dictionary<long, int> { [A] = 3, [B] = 1 });
        Assert.Equal(1.0, Assert.Single(r.Minutes).Jain, 9);
        Assert.Equal(0.75, r.Shares[A].Share, 9);
        Assert.Equal(0.75, r.Shares[A].WeightShare, 9);
    }

    [Fact]
    public void Jain_is_one_when_equal_and_one_over_n_when_one_takes_all()
    {
        Assert.Equal(1.0, FairnessMetrics.Jain([2, 2, 2, 2]), 9);
        Assert.Equal(0.25, FairnessMetrics.Jain([5, 0, 0, 0]), 9);
    }

    [Fact]
    public void Percentiles_use_the_nearest_rank()
    {
        double[] values = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
        Assert.Equal(5, FairnessMetrics.Percentile(values, 50));
        Assert.Equal(10, FairnessMetrics.Percentile(values, 95));
        Assert.Equal(1, FairnessMetrics.Percentile(values, 1));
    }
}
