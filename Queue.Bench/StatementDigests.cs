using System.Globalization;
using Dapper;
using MySqlConnector;

namespace Queue.Bench;

/// <summary>
/// The statements that cost the database most during one phase, from performance_schema's digest summary: what to
/// fix first (docs/DESIGN.md "Peer speed"). Needs a server started with
/// <c>QUEUE_MARIADB_ARGS=--performance-schema=ON</c>; otherwise it says so and prints nothing.
/// </summary>
internal static class StatementDigests
{
    private const string Reset = "TRUNCATE TABLE performance_schema.events_statements_summary_by_digest";

    private const string Top = """
        SELECT COUNT_STAR AS Calls, SUM_TIMER_WAIT / 1e9 AS TotalMs, AVG_TIMER_WAIT / 1e6 AS AvgUs,
               SUM_ROWS_EXAMINED AS RowsExamined, CONCAT(LEFT(REPLACE(DIGEST_TEXT, '\n', ' '), 70), ' ... ', RIGHT(REPLACE(DIGEST_TEXT, '\n', ' '), 90)) AS Text
        FROM performance_schema.events_statements_summary_by_digest
        ORDER BY SUM_TIMER_WAIT DESC LIMIT @Limit
        """;

    public static async Task<bool> ResetAsync(MySqlDataSource db)
    {
        try
        {
            await using var conn = await db.OpenConnectionAsync();
            await conn.ExecuteAsync(Reset);
            return true;
        }
        catch (MySqlException e)
        {
            Console.WriteLine($"  (no statement digests: {e.Message}; start with QUEUE_MARIADB_ARGS=--performance-schema=ON)");
            return false;
        }
    }

    public static async Task PrintAsync(MySqlDataSource db, string phase, int limit = 12)
    {
        await using var conn = await db.OpenConnectionAsync();
        Console.WriteLine($"  top statements by database time during {phase}:");
        foreach (var r in await conn.QueryAsync<Row>(Top, new { Limit = limit }))
        {
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"    {r.Calls,8:N0} x {r.AvgUs,7:F0} us = {r.TotalMs,7:F0} ms  rows {r.RowsExamined,9:N0}  {r.Text}"));
        }
    }

    private sealed class Row
    {
        public long Calls { get; set; }

        public double TotalMs { get; set; }

        public double AvgUs { get; set; }

        public long RowsExamined { get; set; }

        public string Text { get; set; } = "";
    }
}
