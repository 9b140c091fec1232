using Dapper;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>Items that left the active states in one change of a job.</summary>
internal readonly record struct Finished(int Done = 0, int Dead = 0, int Cancelled = 0);

/// <summary>A job's counters, kept in the same transaction as the item change (docs/DESIGN.md "Counters").</summary>
internal static class JobCounters
{
    /// <summary>
    /// Counts finished items on the job row; a job left with no active item loses its lanes in the same transaction.
    /// <paramref name="tx"/> is null inside a claim, whose transaction is run by hand (<see cref="ClaimTransaction"/>).
    /// </summary>
    public static async Task CountFinishedAsync(MySqlConnection conn, MySqlTransaction? tx, long jobId, Finished n, DateTime now, CancellationToken ct)
    {
        await conn.ExecuteAsync(new CommandDefinition(ClaimSql.CountFinished,
            new { JobId = jobId, n.Done, n.Dead, n.Cancelled, Now = now }, tx, cancellationToken: ct));
        var active = await conn.QuerySingleAsync<long>(new CommandDefinition(ClaimSql.ActiveOfJob, new { JobId = jobId }, tx, cancellationToken: ct));
        if (active <= 0)
        {
            await conn.ExecuteAsync(new CommandDefinition(OrderingSql.RemoveJob, new { JobId = jobId }, tx, cancellationToken: ct));
        }
    }
}
