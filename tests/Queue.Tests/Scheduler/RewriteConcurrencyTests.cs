using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Ordering;

namespace Queue.Tests.Scheduler;

public sealed class RewriteConcurrencyTests
{
    private static readonly DateTimeOffset TenOClock = new(2026, 11, 22, 10, 0, 0, TimeSpan.Zero);

    // What a claimer reads first (docs/DESIGN.md): the lowest-valued eligible lane, without locks.
    private const string ClaimerPick = """
        SELECT job_id FROM ordering FORCE INDEX (ix_ordering_any)
        WHERE blocked = 0 AND available_at <= @Now ORDER BY value, job_id LIMIT 1
        """;

    [Fact]
    public async Task Claimers_are_not_blocked_by_a_rewrite_in_progress_and_see_only_the_old_ordering_until_it_commits()
    {
        await using var db = await FreshDatabase.CreateAsync();
        // Slices of 100 jobs: the head's slice is written last, the tail's first.
        var bed = OrderingTestbed.At(db.DataSource, TenOClock, rewriteSliceJobs: 100, rewriteMethod: OrderingOptions.InPlace);
        var tenant = await db.NewTenantAsync();
        await bed.BulkJobsAsync(tenant, 3000);
        await bed.Rewriter.RewriteAsync("test"); // smallest-first: values 1..7
        var byOrder = (await bed.LanesAsync()).OrderBy(l => l.Value).ThenBy(l => l.JobId).ToList();
        var (head, tail) = (byOrder[0].JobId, byOrder[^1].JobId);

        // A technician's transaction holds the head lane, which the rewrite writes last, so the oldest-first rewrite
        // stops inside its UPDATE holding the lanes behind it.
        await using var holder = await db.DataSource.OpenConnectionAsync();
        var hold = await holder.BeginReadCommittedAsync(default);
        await holder.ExecuteAsync("SELECT * FROM ordering WHERE job_id = @Id FOR UPDATE", new { Id = head }, hold);
        bed.AdvanceTo(OrderingMode.Oldest);
        var rewrite = bed.Rewriter.RewriteAsync("test");
        await WaitUntilRewriteHoldsLanesAsync(db, tail, rewrite);

        await using (var claimer = await db.DataSource.OpenConnectionAsync())
        {
            for (var i = 0; i < 20; i++)
            {
                await using var tx = await claimer.BeginReadCommittedAsync(default);
                var picked = await claimer.ExecuteScalarAsync<long>(ClaimerPick, new { Now = bed.Clock.GetUtcNow().UtcDateTime }, tx);
                var modes = (await claimer.QueryAsync<(string Mode, long Count)>("SELECT mode, COUNT(*) FROM ordering GROUP BY mode", transaction: tx)).AsList();
                await tx.CommitAsync();
                Assert.Equal([("smallest", 3000L)], modes);
                Assert.NotEqual(0, picked);
            }
        }
        Assert.False(rewrite.IsCompleted);

        await hold.CommitAsync();
        var result = await rewrite;
        Assert.Equal(3000, result.LanesUpdated);
        var values = await bed.ValuesByJobAsync();
        Assert.All(values.Values, v => Assert.Equal("oldest", v.Mode));
        Assert.Equal(Enumerable.Range(0, 3000).Select(r => 10000L + (5 * r)), values.OrderBy(v => v.Key).Select(v => v.Value.Value));
    }

    [Fact]
    public async Task An_open_rewrite_writes_every_new_value_after_every_committed_one_so_the_claim_walk_never_meets_them()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock.AddHours(1), rewriteMethod: OrderingOptions.InPlace);
        var tenant = await db.NewTenantAsync();
        await bed.BulkJobsAsync(tenant, 3000);
        await bed.Rewriter.RewriteAsync("test"); // oldest-first: values 10000 + 5 * rank

        // Oldest to smallest is the direction whose new values (1..7) are lower than the committed ones: without bands
        // the open rewrite's entries sit at the head of every claim walk. Holding the band row keeps the rewrite open
        // after its lanes are written (and a rewrite that never writes the band commits, and fails the test).
        await using var holder = await db.DataSource.OpenConnectionAsync();
        var hold = await holder.BeginReadCommittedAsync(default);
        var committedMax = await holder.ExecuteScalarAsync<long>("SELECT MAX(value) FROM ordering", transaction: hold);
        await holder.ExecuteAsync("SELECT * FROM ordering_band WHERE id = 1 FOR UPDATE", transaction: hold);
        bed.AdvanceTo(OrderingMode.Smallest);
        var rewrite = bed.Rewriter.RewriteAsync("test");

        await using (var reader = await db.DataSource.OpenConnectionAsync())
        {
            await reader.ExecuteAsync("SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED");
            var written = new List<long>();
            await Eventually.HoldsAsync(async () =>
            {
                written = (await reader.QueryAsync<long>("SELECT value FROM ordering WHERE mode = 'smallest'")).AsList();
                return written.Count >= 3000 || rewrite.IsCompleted;
            }, TimeSpan.FromSeconds(10));
            Assert.Equal(3000, written.Count);
            Assert.All(written, v => Assert.True(v > committedMax, $"uncommitted value {v} sorts before committed {committedMax}"));
            Assert.Equal("oldest", await reader.ExecuteScalarAsync<string>("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED; SELECT MIN(mode) FROM ordering"));
        }

        await hold.CommitAsync();
        await rewrite;
        var values = await bed.ValuesByJobAsync();
        Assert.All(values.Values, v => Assert.Equal("smallest", v.Mode));
        Assert.All(values.Values, v => Assert.InRange(v.Value, 1, 7));
    }

    [Fact]
    public async Task Readers_during_a_series_of_rewrites_always_see_one_complete_ordering()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock, TimeSpan.FromSeconds(20));
        var tenant = await db.NewTenantAsync();
        await bed.BulkJobsAsync(tenant, 2000);

        using var stop = new CancellationTokenSource();
        var snapshots = new List<List<(string Mode, long Count, long Min)>>();
        var reader = Task.Run(async () =>
        {
            await using var conn = await db.DataSource.OpenConnectionAsync();
            while (!stop.IsCancellationRequested)
            {
                snapshots.Add((await conn.QueryAsync<(string, long, long)>("SELECT mode, COUNT(*), MIN(" + LaneValueSql.Shown + ") FROM ordering GROUP BY mode")).AsList());
            }
        });
        for (var i = 0; i < 8; i++)
        {
            await bed.Rewriter.RewriteAsync("test");
            bed.Clock.Advance(TimeSpan.FromSeconds(20));
        }
        await stop.CancelAsync();
        await reader;

        Assert.NotEmpty(snapshots);
        Assert.All(snapshots, s =>
        {
            var only = Assert.Single(s);
            Assert.Equal(2000, only.Count);
            Assert.Equal(only.Mode == "oldest" ? 10000 : 1, only.Min);
        });
    }

    /// <summary>
    /// Waits until the rewrite holds the given job's lane, that is, it is inside its UPDATE (and so, writing the tail of
    /// the claim order first, stuck on the held head). Probed with NOWAIT so the probe itself never queues.
    /// </summary>
    internal static async Task WaitUntilRewriteHoldsLanesAsync(FreshDatabase db, long jobId, Task rewrite)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        await Eventually.UntilAsync(async () =>
        {
            await using (var tx = await conn.BeginReadCommittedAsync(default))
            {
                try
                {
                    await conn.ExecuteAsync("SELECT job_id FROM ordering WHERE job_id = @Id FOR UPDATE NOWAIT", new { Id = jobId }, tx);
                }
                catch (MySqlException ex) when (ex.ErrorCode == MySqlErrorCode.LockWaitTimeout)
                {
                    return true;
                }
                await tx.RollbackAsync();
            }
            if (rewrite.IsCompleted)
            {
                await rewrite;
                throw new InvalidOperationException("the rewrite finished without waiting for the held lane");
            }
            return false;
        }, "the rewrite reached its UPDATE", 10);
    }
}
