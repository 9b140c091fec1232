using Dapper;
using MySqlConnector;
using Queue.Core.Data;
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
    /// provisional value in the current mode (or its active override). Two round trips whatever the number of tasks:
    /// this runs inside every upload's transaction.
    /// </summary>
    public async Task PlaceAsync(MySqlConnection conn, MySqlTransaction tx, long jobId, IEnumerable<string> tasks, CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        var facts = await conn.QuerySingleAsync<PlacementFacts>(new CommandDefinition(FactsSql(now), new { JobId = jobId, Now = now }, tx, cancellationToken: ct));
        await using var batch = new MySqlBatch(conn, tx);
        AddPlacements(batch, [new JobPlacement(jobId, tasks, facts)], now);
        if (batch.BatchCommands.Count > 0)
        {
            await batch.ExecuteNonQueryAsync(ct);
        }
    }

    /// <summary>
    /// The statement that reads a job's <see cref="PlacementFacts"/>, for callers that place many jobs in one batch.
    /// <paramref name="placed"/>: the caller holds the job's oldest-first lanes (<see cref="OrderingSql.JobsPlacedOldestFirst"/>),
    /// so in an oldest-first period the next oldest-first value, which placement would not use, is left out.
    /// </summary>
    public MySqlBatchCommand FactsCommand(long jobId, DateTime now, bool placed = false) =>
        BatchCommand.Of(placed && OldestFirst(now) ? OrderingSql.PlacementFactsPlaced : FactsSql(now), ("@JobId", jobId), ("@Now", now));

    /// <summary>Whether placement in the period of <paramref name="now"/> reads the next oldest-first value for jobs without an oldest-first lane.</summary>
    public bool OldestFirst(DateTime now) => calendar.At(now).Mode == OrderingMode.Oldest;

    /// <summary>The facts <see cref="Provisional"/> uses in the period of <paramref name="now"/>, and only those.</summary>
    private string FactsSql(DateTime now) =>
        calendar.At(now).Mode == OrderingMode.Smallest ? OrderingSql.PlacementFactsSmallestFirst : OrderingSql.PlacementFacts;

    /// <summary>
    /// Adds the lane writes of jobs (one, or a group of new jobs or uploads), placed from facts read in the same
    /// transaction, to a batch: every lane in one statement per <see cref="LanesPerStatement"/>, in (job, task) order;
    /// returns each job's value and mode, in order.
    /// </summary>
    public (long Value, string Mode)[] AddPlacements(MySqlBatch batch, IReadOnlyList<JobPlacement> jobs, DateTime now)
    {
        var mode = calendar.At(now).Mode;
        var placed = new (long Value, string Mode)[jobs.Count];
        var rows = new List<(long JobId, string Task, long TenantId, long Value, string Mode, sbyte Blocked)>();
        var counts = new List<MySqlBatchCommand>();
        for (var i = 0; i < jobs.Count; i++)
        {
            var (jobId, tasks, facts) = jobs[i];
            placed[i] = Provisional(facts, mode);
            foreach (var task in tasks)
            {
                rows.Add((jobId, task, facts.TenantId, placed[i].Value, placed[i].Mode, facts.Blocked));
            }
            if (placed[i].Mode == "smallest")
            {
                // Every upload keeps the smallest-first count of the whole job current, on all its lanes (an expired
                // override's lanes too, which the upsert leaves alone).
                counts.Add(BatchCommand.Of(OrderingSql.SetJobValue, ("@JobId", jobId), ("@Value", placed[i].Value), ("@Mode", placed[i].Mode), ("@Now", now)));
            }
        }
        // One lock order for every writer of many lanes.
        rows.Sort(static (a, b) => a.JobId != b.JobId ? a.JobId.CompareTo(b.JobId) : string.CompareOrdinal(a.Task, b.Task));
        foreach (var chunk in rows.Chunk(LanesPerStatement))
        {
            batch.BatchCommands.Add(BatchCommand.Rows(OrderingSql.UpsertLanes(chunk.Length), chunk, now,
                ("@j", r => r.JobId), ("@k", r => r.Task), ("@e", r => r.TenantId), ("@v", r => r.Value), ("@m", r => r.Mode), ("@b", r => r.Blocked)));
        }
        foreach (var c in counts)
        {
            batch.BatchCommands.Add(c);
        }
        return placed;
    }

    /// <summary>Rows per lane upsert: plain VALUES rows cost the same each however many there are, so this only bounds the statement's size.</summary>
    public const int LanesPerStatement = 256;

    /// <summary>The value a job gets between rewrites: its override, else its current oldest rank, else a provisional one.</summary>
    public async Task<(long Value, string Mode)> ProvisionalAsync(MySqlConnection conn, MySqlTransaction tx, long jobId, DateTime now, CancellationToken ct)
    {
        var facts = await conn.QuerySingleAsync<PlacementFacts>(new CommandDefinition(FactsSql(now), new { JobId = jobId, Now = now }, tx, cancellationToken: ct));
        return Provisional(facts, calendar.At(now).Mode);
    }

    /// <summary>Stored values (band included): the oldest-first ones are read stored, the others are put in the band.</summary>
    private static (long Value, string Mode) Provisional(PlacementFacts f, OrderingMode mode) =>
        f.OverridePriority is { } p ? (OrderingBand.Stored(f.Band, p), ModeOverride)
        : mode == OrderingMode.Smallest ? (OrderingBand.Stored(f.Band, f.Active), "smallest")
        // Already placed in this oldest-first period: an upload does not move it back.
        : (f.CurrentOldest ?? f.NextOldest, "oldest");


    /// <summary>An override replaces the job's value at once, on every lane, not only at the next rewrite.</summary>
    public async Task ApplyOverrideAsync(MySqlConnection conn, MySqlTransaction tx, long jobId, long priority, CancellationToken ct)
    {
        var band = await BandAsync(conn, tx, ct);
        await conn.ExecuteAsync(new CommandDefinition(OrderingSql.SetJobValue,
            new { JobId = jobId, Value = OrderingBand.Stored(band, priority), Mode = ModeOverride, Now = clock.GetUtcNow().UtcDateTime }, tx, cancellationToken: ct));
    }

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
        var band = await BandAsync(conn, tx, ct);
        await conn.ExecuteAsync(new CommandDefinition(OrderingSql.SetJobValue,
            new { JobId = jobId, Value = OrderingBand.Stored(band, value), Mode = mode, Now = now }, tx, cancellationToken: ct));
    }

    /// <summary>
    /// The current band, share-locked until the caller commits, so a rewrite cannot move it meanwhile (it waits for the
    /// caller at its very end, and a caller that comes later waits milliseconds for its commit).
    /// </summary>
    private static Task<int> BandAsync(MySqlConnection conn, MySqlTransaction tx, CancellationToken ct) =>
        conn.ExecuteScalarAsync<int>(new CommandDefinition(OrderingSql.CurrentBand, null, tx, cancellationToken: ct));

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

}

/// <summary>One job of a group to place: its tasks' lanes get the value its facts give (<see cref="OrderingLanes.AddPlacements"/>).</summary>
public sealed record JobPlacement(long JobId, IEnumerable<string> Tasks, PlacementFacts Facts);

/// <summary>What provisional placement reads about a job (<see cref="OrderingSql.PlacementFacts"/>).</summary>
/// <param name="Band">The current band (<see cref="OrderingBand"/>); <paramref name="CurrentOldest"/> and <paramref name="NextOldest"/> are stored values.</param>
public sealed record PlacementFacts(long TenantId, sbyte Blocked, int Band, long Active, long? OverridePriority, long? CurrentOldest, long NextOldest);
