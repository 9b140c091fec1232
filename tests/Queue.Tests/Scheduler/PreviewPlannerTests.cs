using Queue.Core.Fairness;
using Queue.Core.Ordering;

namespace Queue.Tests.Scheduler;

/// <summary>
/// The preview's tenant-fair model against the real <see cref="FairShare"/> claiming one item at a time, and its
/// bounded memory: whatever the depth, it keeps the best <c>top</c> jobs.
/// </summary>
public sealed class PreviewPlannerTests
{
    [Fact]
    public void Tenant_fair_positions_and_items_before_match_FairShare_claiming_item_by_item()
    {
        for (var seedValue = 1; seedValue <= 300; seedValue++)
        {
            var random = new Random(seedValue);
            var weights = new Dictionary<long, int>();
            var tenantCount = random.Next(1, 5);
            for (var t = 1; t <= tenantCount; t++)
            {
                weights[t] = 1 << random.Next(0, 3); // powers of two: FairShare's double passes stay exact
            }
            var rows = new List<PreviewRow>();
            var overrides = random.Next(0, 3);
            for (var j = 1; j <= random.Next(1, 25); j++)
            {
                rows.Add(new PreviewRow { JobId = j, TenantId = random.Next(1, tenantCount + 1), Items = random.Next(1, 6), IsOverride = j <= overrides ? 1 : 0 });
            }

            var planner = new PreviewPlanner(tenantFair: true, top: 1000, weights);
            rows.ForEach(planner.Add);
            var (positions, _) = planner.Finish();

            Assert.Equal(Simulate(rows, weights), positions.Select(p => (p.Row.JobId, p.ClaimsBefore)).ToList());
            Assert.Equal(Enumerable.Range(1, rows.Count), positions.Select(p => p.Position));
        }
    }

    /// <summary>Override jobs first, each tenant charged for them; then one claim at a time by FairShare's turn.</summary>
    private static List<(long JobId, long ClaimsBefore)> Simulate(List<PreviewRow> rows, Dictionary<long, int> weights)
    {
        var fair = new FairShare();
        var order = new List<(long, long)>();
        var claims = 0L;
        foreach (var r in rows.Where(r => r.IsOverride != 0))
        {
            order.Add((r.JobId, claims));
            claims += r.Items;
            fair.Charge(r.TenantId, (int)r.Items, weights[r.TenantId]);
        }
        var queues = rows.Where(r => r.IsOverride == 0).GroupBy(r => r.TenantId)
            .ToDictionary(g => g.Key, g => new Queue<(long JobId, long Left, bool Started)>(g.Select(r => (r.JobId, r.Items, false))));
        while (queues.Values.Any(q => q.Count > 0))
        {
            var backlogged = queues.Where(q => q.Value.Count > 0).Select(q => q.Key).OrderBy(t => t).ToList();
            fair.Backlogged(backlogged);
            var tenant = fair.Plan(backlogged, t => weights[t], 1)[0].Tenant;
            var q = queues[tenant];
            var (job, left, started) = q.Dequeue();
            if (!started)
            {
                order.Add((job, claims));
            }
            if (left > 1)
            {
                var rest = q.ToList();
                q.Clear();
                q.Enqueue((job, left - 1, true));
                rest.ForEach(q.Enqueue);
            }
            claims++;
            fair.Charge(tenant, 1, weights[tenant]);
        }
        return order;
    }

    [Fact]
    public void A_deep_queue_keeps_only_the_best_top_jobs_and_one_sum_per_tenant()
    {
        var planner = new PreviewPlanner(tenantFair: true, top: 50, new Dictionary<long, int> { [1] = 1, [2] = 3 });
        for (var j = 1; j <= 200_000; j++)
        {
            planner.Add(new PreviewRow { JobId = j, TenantId = 1 + (j % 2), Items = 1 + (j % 7) });
        }
        var (positions, tenants) = planner.Finish();
        Assert.Equal(50, positions.Count);
        Assert.Equal(Enumerable.Range(1, 50), positions.Select(p => p.Position));
        Assert.Equal([1L, 2L], tenants.Select(t => t.TenantId).Order());
        Assert.Equal(200_000L, tenants.Sum(t => t.Jobs));
        Assert.Equal(0.75, tenants.Single(t => t.TenantId == 2).Share);
        // Weight 3 against 1: the heavier tenant's jobs take about three places in four at the head.
        Assert.InRange(positions.Count(p => p.Row.TenantId == 2), 30, 45);
    }
}
