using Dapper;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>
/// A lease that expired, found by a claim's walk among the claimable rows it locked: its attempt is recorded as an error,
/// and the item either goes back to the walk to be taken again or, its attempts used up, goes dead (with its job's
/// counters). A step of its own, so that taking a row (<see cref="ItemTaker"/>) only takes.
/// </summary>
internal sealed class ExpiredLeaseReclaim(ClaimCounters counters)
{
    public const string Error = "lease expired";

    /// <summary>True when the item may be taken again; false when it went dead here (it then takes no slot).</summary>
    public async Task<bool> ReclaimAsync(MySqlConnection conn, long itemId, long jobId, int attempts, DateTime now, CancellationToken ct)
    {
        counters.OnLeaseExpired();
        await conn.ExecuteAsync(new CommandDefinition(ClaimSql.RecordError,
            new { Id = itemId, Attempt = attempts, Error, Now = now }, cancellationToken: ct));
        var max = await conn.ExecuteScalarAsync<int>(new CommandDefinition(ClaimSql.MaxAttemptsOfJob, new { JobId = jobId }, cancellationToken: ct));
        if (attempts < max)
        {
            return true;
        }
        await conn.ExecuteAsync(new CommandDefinition(ClaimSql.KillItem, new { Id = itemId, Error, Now = now }, cancellationToken: ct));
        await JobCounters.CountFinishedAsync(conn, null, jobId, new(Dead: 1), now, ct);
        return false;
    }
}
