using Dapper;
using Queue.Core.Sql;
using Queue.Tests.Scheduler;

namespace Queue.Tests.Work;

/// <summary>
/// The lane statements of a claim, one statement for all of its lanes, stay point lookups however many lanes they
/// carry: a plan that scans the ordering would cost every claim the whole queue, and in a locking statement wait on
/// lanes that other transactions hold.
/// </summary>
public sealed class ClaimPlanTests
{
    private static readonly DateTimeOffset TenOClock = new(2026, 11, 22, 10, 0, 0, TimeSpan.Zero);

    [Theory]
    [InlineData(1)]
    [InlineData(3)]
    public async Task Every_lane_statement_of_a_claim_reads_its_lanes_by_key_for_one_lane_and_for_several(int lanes)
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock);
        await bed.BulkJobsAsync(await db.NewTenantAsync(), 2000);
        var picked = (await bed.LanesAsync()).Take(lanes).ToList();
        var args = new DynamicParameters();
        for (var k = 0; k < picked.Count; k++)
        {
            args.Add($"@j{k}", picked[k].JobId);
            args.Add($"@k{k}", picked[k].Task);
            args.Add($"@a{k}", TenOClock.UtcDateTime);
            args.Add($"@l{k}", 1);
        }
        args.Add("@Now", TenOClock.UtcDateTime);
        await using var conn = await db.DataSource.OpenConnectionAsync();

        foreach (var sql in new[] { ClaimSql.LockLanesItems(lanes), ClaimSql.LockLanes(lanes), ClaimSql.LanesNextDue(lanes), ClaimSql.SetLaneHints(lanes), ClaimSql.DeleteLanes(lanes) })
        {
            var plan = (await conn.QueryAsync<PlanRow>("EXPLAIN " + sql, args)).ToList();
            Assert.NotEmpty(plan);
            // A UNION's own row (table <unionN,...>) reads the parts' results, not a table.
            Assert.All(plan.Where(p => p.Table?.StartsWith("<union", StringComparison.Ordinal) != true),
                p => Assert.DoesNotContain(p.Type, new[] { "ALL", "index" }));
        }
    }

    private sealed class PlanRow
    {
        public string? Table { get; set; }

        public string? Type { get; set; }
    }
}
