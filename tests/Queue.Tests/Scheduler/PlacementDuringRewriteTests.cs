using Dapper;
using Queue.Core.Data;
using Queue.Core.Ordering;
using Queue.Core.Sql;

namespace Queue.Tests.Scheduler;

/// <summary>
/// Every new job reads the next oldest-first value (docs/DESIGN.md "Placement during a rewrite"). While a rewrite is
/// open, its new values sit uncommitted in the next band; a read that steps over them checks each one's old version, so
/// it would cost every job creation the whole ordering for as long as the rewrite runs.
/// </summary>
public sealed class PlacementDuringRewriteTests
{
    private const int Jobs = 20_000;

    private static readonly DateTimeOffset TenOClock = new(2026, 11, 22, 10, 0, 0, TimeSpan.Zero);

    [Theory]
    [InlineData(OrderingMode.Oldest)]
    [InlineData(OrderingMode.Smallest)]
    public async Task The_next_oldest_value_is_read_in_a_few_pages_while_a_rewrite_holds_twenty_thousand_new_values_open(OrderingMode to)
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, to == OrderingMode.Oldest ? TenOClock : TenOClock.AddHours(1), rewriteMethod: OrderingOptions.InPlace);
        await bed.BulkJobsAsync(await db.NewTenantAsync(), Jobs);
        await bed.Rewriter.RewriteAsync("test");

        // What an open rewrite leaves in the indexes: every lane moved into the next band (2^42 up) and the new period's
        // mode, uncommitted. The rewrite itself writes the band row last, and a test that held the rewrite there would
        // also hold the band this read share-locks; so this transaction stands in for the rewrite's UPDATE.
        await using var rewrite = await db.DataSource.OpenConnectionAsync();
        await using var open = await rewrite.BeginReadCommittedAsync(default);
        var moved = await rewrite.ExecuteAsync("UPDATE ordering SET value = value + 4398046511104, mode = @mode",
            new { mode = to == OrderingMode.Oldest ? "oldest" : "smallest" }, open);
        Assert.Equal(Jobs, moved);

        await using (var writer = await db.DataSource.OpenConnectionAsync())
        await using (var tx = await writer.BeginReadCommittedAsync(default))
        {
            // The server's counter counts every session's reads, purge's included: the least of three reads is this one's.
            var reads = long.MaxValue;
            (long NextOldest, int Band) next = default;
            for (var i = 0; i < 3; i++)
            {
                var before = await PageReadsAsync(writer, tx);
                next = await writer.QuerySingleAsync<(long NextOldest, int Band)>(OrderingSql.NextOldest, transaction: tx);
                reads = Math.Min(reads, await PageReadsAsync(writer, tx) - before);
            }
            await tx.CommitAsync();
            // Stepping over the rewrite's entries reads a page or more per entry (20,000); the bounded reads, a handful.
            Assert.True(reads < 5_000, $"reading the next oldest value took {reads} page reads with {Jobs} new values open");
            // Still the committed ordering's, in its band: 5 past the last rank's 10000 + 5 * 19,999, or the first value
            // when no lane is oldest-first.
            Assert.Equal(OrderingBand.Stored(next.Band, to == OrderingMode.Oldest ? 10_000 : 10_000 + (5 * Jobs)), next.NextOldest);
        }

        await open.RollbackAsync();
    }

    /// <summary>The server's logical page reads so far.</summary>
    private static Task<long> PageReadsAsync(MySqlConnector.MySqlConnection conn, MySqlConnector.MySqlTransaction tx) =>
        conn.ExecuteScalarAsync<long>(
            "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_READ_REQUESTS'",
            transaction: tx);
}
