using Dapper;
using Queue.Core.Sql;
using Queue.Tests.Scheduler;

namespace Queue.Tests.Work;

/// <summary>
/// The grouped statements of claims and completions, one statement for all of their lanes, items or jobs, stay point
/// lookups however many rows they carry: a plan that scans a table would cost every claim the whole queue, and in a
/// locking statement wait on rows that other transactions hold.
/// </summary>
public sealed class ClaimPlanTests
{
    private static readonly DateTimeOffset TenOClock = new(2026, 11, 22, 10, 0, 0, TimeSpan.Zero);

    [Theory]
    [InlineData(1, false)]
    [InlineData(3, false)]
    [InlineData(3, true)]
    public async Task Every_grouped_statement_of_claims_and_completions_reads_its_rows_by_key_for_one_row_and_for_several(int lanes, bool tasksDiffer)
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock);
        await bed.BulkJobsAsync(await db.NewTenantAsync(), 2000);
        await using var conn = await db.DataSource.OpenConnectionAsync();
        // An item per job, so that the items statements meet a table the size a queue has, not an empty one.
        await conn.ExecuteAsync("INSERT INTO items (job_id, document_id, task, state, due_at, created_at, updated_at) SELECT id, id, tasks, 0, @Now, @Now, @Now FROM jobs",
            new { Now = TenOClock.UtcDateTime });
        await conn.ExecuteAsync("ANALYZE TABLE items, jobs, ordering");
        var picked = (await bed.LanesAsync()).Take(lanes).ToList();
        // Lanes of several tasks are one term per task (ClaimSql.InLanes), OR-ed: each term must stay a range of keys too.
        var tasks = picked.Select((l, k) => tasksDiffer && k % 2 == 1 ? "other" : l.Task).ToList();
        var items = (await conn.QueryAsync<long>("SELECT id FROM items ORDER BY id LIMIT @N", new { N = lanes })).AsList();
        var args = new DynamicParameters();
        for (var k = 0; k < picked.Count; k++)
        {
            args.Add($"@j{k}", picked[k].JobId);
            args.Add($"@k{k}", tasks[k]);
            args.Add($"@a{k}", TenOClock.UtcDateTime);
            args.Add($"@l{k}", 1);
            args.Add($"@f{k}", 0L);
            args.Add($"@i{k}", items[k]);
            args.Add($"@n{k}", 1);
        }
        args.Add("@Now", TenOClock.UtcDateTime);
        args.Add("@Cap", (2 * lanes) + 1);

        foreach (var sql in new[] { ClaimSql.LockLanesItems(Enumerable.Repeat(false, lanes).ToList()), ClaimSql.LockLanesItems(Enumerable.Repeat(true, lanes).ToList()), ClaimSql.LockLanesItemsAtOnce(tasks), ClaimSql.LockLanes(tasks), ClaimSql.LanesNextDue(tasks), ClaimSql.SetLaneHints(tasks), ClaimSql.DeleteLanes(tasks),
            ClaimSql.CompleteItems(lanes), ClaimSql.CountCompleted(lanes), ClaimSql.JobsAfterCount(lanes) })
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
