using Queue.Bench;

namespace Queue.Tests.Bench;

/// <summary>The <c>fairness</c> bench's figures on hand-made traces whose answers can be counted on one's fingers.</summary>
public sealed class FairnessFiguresTests
{
    private static readonly Dictionary<string, double> Equal = new(StringComparer.Ordinal) { ["a"] = 1, ["b"] = 1 };

    /// <summary>a: one job of 100 items at 0; b: one job of 4 items answered at 0.99, handed out at 1.1-1.4.</summary>
    private static (List<FairJob> Jobs, List<FairClaim> Claims) Flood(Func<int, string> tenantOfHandout)
    {
        var jobs = new List<FairJob> { new(1, "a", 100, 0, 0), new(2, "b", 4, 0.98, 0.99) };
        var claims = new List<FairClaim>();
        var (aItem, bItem) = (1000L, 2000L);
        // 40 handouts 0.05 s apart, from 0.05 to 2.0; which tenant gets each is the caller's choice.
        for (var k = 1; k <= 40; k++)
        {
            var tenant = tenantOfHandout(k);
            claims.Add(tenant == "a" ? new FairClaim(aItem++, 1, "a", k * 0.05) : new FairClaim(bItem++, 2, "b", k * 0.05));
        }
        return (jobs, claims);
    }

    [Fact]
    public void While_the_small_tenant_waits_the_flood_share_counts_only_handouts_from_its_arrival_to_its_last_item_handed_out()
    {
        // b's items go out at handouts 22, 24, 26, 28 (1.1 to 1.4 s); b has unclaimed items over [0.99, 1.4].
        var (jobs, claims) = Flood(k => k is 22 or 24 or 26 or 28 ? "b" : "a");
        var (share, flood, all) = FairnessFigures.ShareWhileWaiting("a", "b", jobs, claims);
        // Handouts at 1.0 (k = 20) to 1.4 (k = 28): 9, of which 5 a's.
        Assert.Equal((5, 9), (flood, all));
        Assert.Equal(5.0 / 9, share, 9);
    }

    [Fact]
    public void Jain_is_one_when_backlogged_tenants_alternate_and_one_half_when_one_takes_everything()
    {
        var weights = Equal;
        var alternate = new List<FairJob> { new(1, "a", 100, 0, 0), new(2, "b", 100, 0, 0) };
        // 20 handouts in each of the first two seconds, at (k + 0.5) * 0.05.
        var claims = Enumerable.Range(0, 40).Select(k => new FairClaim(k, k % 2 == 0 ? 1 : 2, k % 2 == 0 ? "a" : "b", (k + 0.5) * 0.05)).ToList();
        var fair = FairnessFigures.JainPerWindow(weights, alternate, claims);
        Assert.Equal(new[] { 0.0, 1.0 }, fair.Select(w => w.Start));
        Assert.All(fair, w => Assert.Equal(1.0, w.Jain, 9));

        var hog = Enumerable.Range(0, 40).Select(k => new FairClaim(k, 1, "a", (k + 0.5) * 0.05)).ToList();
        var unfair = FairnessFigures.JainPerWindow(weights, alternate, hog);
        Assert.Equal(2, unfair.Count);
        Assert.All(unfair, w => Assert.Equal(0.5, w.Jain, 9));
    }

    [Fact]
    public void Jain_counts_only_time_when_both_tenants_have_unclaimed_work_and_skips_windows_with_too_few_handouts()
    {
        // b has work only over [0.99, 1.4]: 9 handouts in second 1 (< 10), so no window is left.
        var (jobs, claims) = Flood(k => k is 22 or 24 or 26 or 28 ? "b" : "a");
        Assert.Empty(FairnessFigures.JainPerWindow(Equal, jobs, claims));
        // The same with a floor of 5: 5 a's and 4 b's give (9^2) / (2 * (25 + 16)).
        var window = Assert.Single(FairnessFigures.JainPerWindow(Equal, jobs, claims, minClaims: 5));
        Assert.Equal(81.0 / 82, window.Jain, 9);
    }

    [Fact]
    public void A_worker_answer_that_beats_the_submitters_marks_the_job_ready_from_that_handout()
    {
        var job = new FairJob(7, "b", 2, 0.9, 1.0);
        var claims = new List<FairClaim> { new(1, 7, "b", 0.95), new(2, 7, "b", 1.2) };
        Assert.Equal(0.95, FairnessFigures.ReadyAt(job, claims));
        Assert.Equal(new[] { (0.95, 1.2) }, FairnessFigures.ReadyIntervals("b", [job], claims));
    }

    [Fact]
    public void Duplicates_are_handouts_beyond_an_items_first_and_lost_items_are_those_never_completed()
    {
        var claims = new List<FairClaim> { new(1, 7, "b", 1), new(2, 7, "b", 1), new(1, 7, "b", 2) };
        Assert.Equal(1, FairnessFigures.Duplicates(claims));
        var jobs = new List<FairJob> { new(7, "b", 3, 0, 0) };
        var completions = new List<FairCompletion> { new(1, 7, 1.5), new(1, 7, 2.5), new(2, 7, 1.6) };
        Assert.Equal(1, FairnessFigures.Lost(jobs, completions));
    }

    [Fact]
    public void Turnaround_runs_from_sending_to_the_last_completion_and_an_unfinished_job_counts_to_the_end()
    {
        var jobs = new List<FairJob> { new(1, "b", 2, 1.0, 1.1), new(2, "b", 2, 2.0, 2.1) };
        var completions = new List<FairCompletion> { new(10, 1, 1.3), new(11, 1, 1.5), new(20, 2, 2.2) };
        Assert.Equal(new[] { 0.5, 3.0 }, FairnessFigures.Turnarounds("b", jobs, completions, end: 5.0).Select(t => Math.Round(t, 9)));
        Assert.Equal(3.0, FairnessFigures.Percentile([0.5, 3.0, 1.0], 95));
        Assert.Equal(1.0, FairnessFigures.Percentile([0.5, 3.0, 1.0], 50));
    }
}
