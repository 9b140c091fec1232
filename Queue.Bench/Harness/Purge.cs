using System.Diagnostics;
using Dapper;
using MySqlConnector;
using Queue.Bench.Sql;

namespace Queue.Bench.Harness;

/// <summary>Waiting for InnoDB's purge to catch up before a measurement, so it is not charged for earlier work.</summary>
public static class Purge
{
    /// <summary>
    /// Polls every <paramref name="poll"/> until the history list is below <paramref name="below"/> or
    /// <paramref name="cap"/> has passed; returns how long it waited and the last history list and dirty page counts.
    /// </summary>
    public static async Task<(TimeSpan Waited, long History, long Dirty)> UntilHistoryBelowAsync(MySqlDataSource db, long below, TimeSpan cap,
        TimeSpan poll)
    {
        var watch = Stopwatch.StartNew();
        await using var conn = await db.OpenConnectionAsync();
        while (true)
        {
            var (history, dirty) = await conn.QuerySingleAsync<(long, long)>(ClaimBenchSql.Backlog);
            if (history < below || watch.Elapsed >= cap)
            {
                return (watch.Elapsed, history, dirty);
            }
            await Task.Delay(poll);
        }
    }
}
