using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>
/// Settles the leases a cancelled job still had out once they expire: docs/CONTRACT.md lets them complete while they live,
/// but a cancelled job has no lanes, so no claim would ever reclaim them and they would count as ready forever.
/// </summary>
public sealed class CancelledLeaseSweep(MySqlDataSource db, TimeProvider clock)
{
    private const int JobsPerRun = 500;

    public async Task<long> RunAsync(CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        await using var conn = await db.OpenConnectionAsync(ct);
        var jobs = (await conn.QueryAsync<long>(new CommandDefinition(MaintenanceSql.CancelledJobsWithExpiredLeases, new { Now = now, Limit = JobsPerRun }, cancellationToken: ct))).AsList();
        long total = 0;
        foreach (var job in jobs)
        {
            total += await Retry.OnDeadlockAsync(async c =>
            {
                await using var tx = await conn.BeginReadCommittedAsync(c);
                var n = await conn.ExecuteAsync(new CommandDefinition(MaintenanceSql.CancelExpiredLeasesOfJob, new { JobId = job, Now = now }, tx, cancellationToken: c));
                await conn.ExecuteAsync(new CommandDefinition(MaintenanceSql.CountCancelled, new { JobId = job, Count = n, Now = now }, tx, cancellationToken: c));
                await tx.CommitAsync(c);
                return n;
            }, ct);
        }
        return total;
    }
}
