using Dapper;
using Queue.Bench.Harness;
using Queue.Core.Data;
using Queue.Core.Ordering;
using Queue.Core.Sql;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Scheduler;

/// <summary>
/// Every new job reads the next oldest-first value (docs/DESIGN.md "Placement during a rewrite"). While a rewrite is
/// open, its new values sit uncommitted in the next band; a read that steps over them checks each one's old version, so
/// it would cost every job creation the whole ordering for as long as the rewrite runs.
/// </summary>
[TakesAbout(13)]
public sealed class PlacementDuringRewriteTests
{
    private const int Jobs = 20_000;

    private static readonly DateTimeOffset TenOClock = new(2026, 11, 22, 10, 0, 0, TimeSpan.Zero);

    [Theory]
    [InlineData(OrderingMode.Oldest)]
    [InlineData(OrderingMode.Smallest)]
    public async Task The_next_oldest_value_is_read_in_a_few_pages_while_a_rewrite_holds_its_new_values_open_and_a_job_placed_meanwhile_comes_after_every_older_one(OrderingMode to)
    {
        // Its own server: the page-read counter below is the server's, and classes beside it on the shared one (now
        // that their start-ups no longer queue for one migration lock) pushed the least of ten reads past the bound
        // (5,274 once).
        await using var db = await FreshDatabase.CreateAsync(ownServer: true);
        var bed = OrderingTestbed.At(db.DataSource, to == OrderingMode.Oldest ? TenOClock : TenOClock.AddHours(1), rewriteMethod: OrderingOptions.InPlace);
        var tenant = await db.NewTenantAsync();
        await bed.BulkJobsAsync(tenant, Jobs);
        await bed.Rewriter.RewriteAsync("test");
        var byOrder = (await bed.LanesAsync()).OrderBy(l => l.Value).ThenBy(l => l.JobId).ToList();
        // Purge of the bulk load and of that rewrite runs for seconds after they commit, and the page-read counter below
        // is the server's: measured beside it, the least of ten reads was 6,145 once in CI.
        await Purge.UntilHistoryBelowAsync(db.DataSource, 1, TimeSpan.FromSeconds(30), TimeSpan.FromMilliseconds(100));

        // A technician's transaction holds the head lane, which the rewrite writes last: the rewrite stops inside its
        // UPDATE with the lanes of every slice before it moved into the next band, uncommitted, and the band row not
        // yet taken (it is written last, and this read share-locks it).
        await using var holder = await db.DataSource.OpenConnectionAsync();
        var hold = await holder.BeginReadCommittedAsync(default);
        await holder.ExecuteAsync("SELECT * FROM ordering WHERE job_id = @Id FOR UPDATE", new { Id = byOrder[0].JobId }, hold);
        bed.AdvanceTo(to);
        var rewrite = bed.Rewriter.RewriteAsync("test");
        await RewriteConcurrencyTests.WaitUntilRewriteHoldsLanesAsync(db, byOrder[^1].JobId, rewrite);

        await using (var writer = await db.DataSource.OpenConnectionAsync())
        await using (var tx = await writer.BeginReadCommittedAsync(default))
        {
            // The server's counter counts every session's reads, purge's included: the least of up to ten reads is this
            // one's. Three were not enough: purge of the bulk load ran through all three once in a CI run (12,031 reads).
            // Without the bound every read steps over the rewrite's entries, so the least is thousands all the same.
            var reads = long.MaxValue;
            (long NextOldest, int Band) next = default;
            for (var i = 0; i < 10 && reads >= 5_000; i++)
            {
                var before = await PageReadsAsync(writer, tx);
                next = await writer.QuerySingleAsync<(long NextOldest, int Band)>(OrderingSql.NextOldest, transaction: tx);
                reads = Math.Min(reads, await PageReadsAsync(writer, tx) - before);
            }
            await tx.CommitAsync();
            // Stepping over the rewrite's entries reads a page or more per entry (thousands); the bounded reads, a handful.
            Assert.True(reads < 5_000, $"reading the next oldest value took {reads} page reads with the rewrite's new values open");
            if (to == OrderingMode.Smallest)
            {
                // The committed ordering's, in its band: 5 past the last rank's 10000 + 5 * 19,999.
                Assert.Equal(OrderingBand.Stored(next.Band, 10_000 + (5 * Jobs)), next.NextOldest);
            }
        }
        // A job created while the rewrite into oldest-first is open reads the old ordering, which has no oldest-first
        // lane; once the rewrite commits it must still come after every older job.
        var newer = to == OrderingMode.Oldest ? await bed.NewJobAsync(tenant, 1) : 0;

        await hold.CommitAsync();
        await rewrite;
        if (to == OrderingMode.Oldest)
        {
            var values = await bed.ValuesByJobAsync();
            Assert.Equal(values.Keys.Order(), values.OrderBy(v => v.Value.Value).ThenBy(v => v.Key).Select(v => v.Key));
            Assert.Equal((10_000L + (5 * Jobs), "oldest"), values[newer]);
        }
    }

    /// <summary>
    /// A job created while a swap into oldest-first builds (docs/DESIGN.md "The swap rewrite"): placed against the old
    /// ordering, which has no oldest-first lane, it would start again at rank 0 and stay there for the whole period. At
    /// each step it is taken differently: copied as it stands, noted and copied again, or mirrored. An upload to an older
    /// job meanwhile places a provisional value on it too; the job keeps its rank.
    /// </summary>
    [Theory]
    [InlineData(SwapStep.Filled)]
    [InlineData(SwapStep.Copied)]
    [InlineData(SwapStep.CaughtUp)]
    public async Task A_job_created_while_a_swap_into_oldest_first_builds_comes_after_every_older_job_and_an_upload_moves_no_older_job(SwapStep step)
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock);
        var tenant = await db.NewTenantAsync();
        var older = new List<long>();
        for (var i = 0; i < 5; i++)
        {
            older.Add(await bed.NewJobAsync(tenant, 5 - i));
        }
        await bed.Rewriter.RewriteAsync("test"); // smallest-first: the youngest job first
        bed.AdvanceTo(OrderingMode.Oldest);

        long newer = 0;
        bed.Rewriter.AfterSwapStep = async s =>
        {
            if (s == step)
            {
                newer = await bed.NewJobAsync(tenant, 1);
                await bed.UploadAsync(older[2]);
            }
        };
        await bed.Rewriter.RewriteAsync("test");

        var values = await bed.ValuesByJobAsync();
        Assert.Equal([.. older, newer], values.OrderBy(v => v.Value.Value).ThenBy(v => v.Key).Select(v => v.Key));
        Assert.Equal(Enumerable.Range(0, 6).Select(r => (10_000L + (5 * r), "oldest")), values.OrderBy(v => v.Key).Select(v => v.Value));
    }

    /// <summary>The server's logical page reads so far.</summary>
    private static Task<long> PageReadsAsync(MySqlConnector.MySqlConnection conn, MySqlConnector.MySqlTransaction tx) =>
        conn.ExecuteScalarAsync<long>(
            "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_READ_REQUESTS'",
            transaction: tx);
}
