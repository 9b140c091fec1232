using Dapper;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Ordering;

/// <summary>
/// Keeps a job's ordering lanes current between rewrites, inside the caller's transaction: provisional placement on
/// creation and upload, overrides that take effect at once, blocks, and removal. See docs/DESIGN.md.
/// </summary>
public sealed class OrderingLanes(OrderingCalendar calendar, TimeProvider clock)
{
    public const string ModeOverride = "override";

    /// <summary>
    /// Creates or refreshes the lanes for <paramref name="tasks"/> of a job that just received items, with the job's
    /// provisional value in the current mode (or its active override).
    /// </summary>
    public async Task PlaceAsync(MySqlConnection conn, MySqlTransaction tx, long jobId, IEnumerable<string> tasks, CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        var job = await conn.QuerySingleAsync<JobRow>(new CommandDefinition(OrderingSql.JobForOrdering, new { JobId = jobId }, tx, cancellationToken: ct));
        var (value, mode) = await ProvisionalAsync(conn, tx, jobId, now, ct);
        foreach (var task in tasks)
        {
            await conn.ExecuteAsync(new CommandDefinition(OrderingSql.UpsertLane,
                new { JobId = jobId, Task = task, job.TenantId, Value = value, Mode = mode, job.Blocked, Now = now }, tx, cancellationToken: ct));
        }
        if (mode == "smallest")
        {
            // Every upload keeps the smallest-first count of the whole job current, on all its lanes.
            await conn.ExecuteAsync(new CommandDefinition(OrderingSql.SetJobValue, new { JobId = jobId, Value = value, Mode = mode, Now = now }, tx, cancellationToken: ct));
        }
    }

    /// <summary>The value a job gets between rewrites: its override, else its current oldest rank, else a provisional one.</summary>
    public async Task<(long Value, string Mode)> ProvisionalAsync(MySqlConnection conn, MySqlTransaction tx, long jobId, DateTime now, CancellationToken ct)
    {
        var priority = await conn.ExecuteScalarAsync<long?>(new CommandDefinition(OrderingSql.ActiveOverride, new { JobId = jobId, Now = now }, tx, cancellationToken: ct));
        if (priority is { } p)
        {
            return (p, ModeOverride);
        }
        if (calendar.At(now).Mode == OrderingMode.Smallest)
        {
            return (await conn.ExecuteScalarAsync<long>(new CommandDefinition(OrderingSql.ActiveCount, new { JobId = jobId }, tx, cancellationToken: ct)), "smallest");
        }
        var current = await conn.QuerySingleOrDefaultAsync<(long Value, string Mode)?>(new CommandDefinition(OrderingSql.CurrentValue, new { JobId = jobId }, tx, cancellationToken: ct));
        if (current is { Mode: "oldest" } c)
        {
            return (c.Value, "oldest"); // already placed in this oldest-first period: an upload does not move it back
        }
        return (await conn.ExecuteScalarAsync<long>(new CommandDefinition(OrderingSql.OldestProvisional, transaction: tx, cancellationToken: ct)), "oldest");
    }

    /// <summary>An override replaces the job's value at once, on every lane, not only at the next rewrite.</summary>
    public Task ApplyOverrideAsync(MySqlConnection conn, MySqlTransaction tx, long jobId, long priority, CancellationToken ct) =>
        conn.ExecuteAsync(new CommandDefinition(OrderingSql.SetJobValue,
            new { JobId = jobId, Value = priority, Mode = ModeOverride, Now = clock.GetUtcNow().UtcDateTime }, tx, cancellationToken: ct));

    /// <summary>After an override is cleared or expires, the job goes back to its value in the current mode.</summary>
    public async Task ClearOverrideAsync(MySqlConnection conn, MySqlTransaction tx, long jobId, CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        long value;
        string mode;
        if (calendar.At(now).Mode == OrderingMode.Smallest)
        {
            (value, mode) = (await conn.ExecuteScalarAsync<long>(new CommandDefinition(OrderingSql.ActiveCount, new { JobId = jobId }, tx, cancellationToken: ct)), "smallest");
        }
        else
        {
            (value, mode) = (await conn.ExecuteScalarAsync<long>(new CommandDefinition(OrderingSql.OldestRankValue, new { JobId = jobId }, tx, cancellationToken: ct)), "oldest");
        }
        await conn.ExecuteAsync(new CommandDefinition(OrderingSql.SetJobValue, new { JobId = jobId, Value = value, Mode = mode, Now = now }, tx, cancellationToken: ct));
    }

    public Task SetBlockedAsync(MySqlConnection conn, MySqlTransaction tx, long jobId, bool blocked, CancellationToken ct) =>
        conn.ExecuteAsync(new CommandDefinition(OrderingSql.SetBlocked,
            new { JobId = jobId, Blocked = blocked ? 1 : 0, Now = clock.GetUtcNow().UtcDateTime }, tx, cancellationToken: ct));

    public static Task RemoveJobAsync(MySqlConnection conn, MySqlTransaction tx, long jobId, CancellationToken ct) =>
        conn.ExecuteAsync(new CommandDefinition(OrderingSql.RemoveJob, new { JobId = jobId }, tx, cancellationToken: ct));

    /// <summary>Re-creates lanes for every task that has active items (after a requeue) and wakes them.</summary>
    public async Task RestoreAsync(MySqlConnection conn, MySqlTransaction tx, long jobId, CancellationToken ct)
    {
        var tasks = (await conn.QueryAsync<string>(new CommandDefinition(OrderingSql.ActiveTasks, new { JobId = jobId }, tx, cancellationToken: ct))).AsList();
        await PlaceAsync(conn, tx, jobId, tasks, ct);
    }

    private sealed record JobRow(long TenantId, sbyte Blocked, sbyte State);
}
