using Dapper;
using Microsoft.Extensions.Logging;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Hosting;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>
/// Removes the lanes of jobs that completions ran dry, after the completion committed and in a transaction of its own,
/// with SKIP LOCKED: a completion never waits for a lane that a rewrite (which may hold every lane for seconds) or an
/// upload holds. Lanes skipped that way are left to their holder: a rewrite removes the lanes of jobs without work
/// itself, an upload gives the job work again, and a claim that finds a lane empty deletes it. Jobs are taken from a
/// bounded queue by one loop at a time, up to <see cref="MaxJobs"/> per transaction.
/// </summary>
public sealed partial class LaneJanitor : IDrainable
{
    public const int MaxJobs = 512;
    private static readonly TimeSpan Linger = TimeSpan.FromMilliseconds(50);
    private const int MaxQueued = 100_000;

    private readonly MySqlDataSource db;
    private readonly ILogger<LaneJanitor> logger;
    private readonly Lock gate = new();
    /// <summary>First in, first out: taking a transaction's jobs from the front never moves the rest (up to 100k).</summary>
    private readonly Queue<long> queued = new();
    private bool running;

    public LaneJanitor(MySqlDataSource db, BackgroundWork host, ILogger<LaneJanitor> logger)
    {
        this.db = db;
        this.logger = logger;
        host.Track(this);
    }

    /// <summary>Queues jobs whose counters showed no active item when their completion committed.</summary>
    public void RanDry(IReadOnlyCollection<long> jobIds)
    {
        if (jobIds.Count == 0)
        {
            return;
        }
        lock (gate)
        {
            // Beyond the bound the lanes are left for claims to find empty and delete: slower, never wrong.
            if (queued.Count + jobIds.Count <= MaxQueued)
            {
                foreach (var job in jobIds)
                {
                    queued.Enqueue(job);
                }
            }
            if (running)
            {
                return;
            }
            running = true;
        }
        _ = Task.Run(LoopAsync, CancellationToken.None);
    }

    /// <summary>Removes the lanes of queued jobs now and waits for a removal in flight (tests, and the host when it stops).</summary>
    public async Task DrainAsync(CancellationToken ct)
    {
        var giveUp = DateTime.UtcNow.AddSeconds(30);
        while (DateTime.UtcNow < giveUp)
        {
            var jobs = Take();
            if (jobs.Count > 0)
            {
                await RemoveAsync(jobs, ct);
                continue;
            }
            lock (gate)
            {
                if (!running)
                {
                    return;
                }
            }
            await Task.Delay(10, ct);
        }
    }

    private async Task LoopAsync()
    {
        while (true)
        {
            // A short wait gathers the dry jobs of many completion batches into one transaction: one commit (fsync)
            // per batch of lanes rather than per completion. A lane lingering that long is hidden by its hint anyway.
            await Task.Delay(Linger);
            List<long> jobs;
            lock (gate)
            {
                if (queued.Count == 0)
                {
                    running = false;
                    return;
                }
                jobs = TakeLocked();
            }
            try
            {
                await RemoveAsync(jobs, CancellationToken.None);
            }
            catch (Exception ex) when (ex is MySqlException or InvalidOperationException or TimeoutException)
            {
                LogFailed(logger, ex, jobs.Count);
            }
        }
    }

    private List<long> Take()
    {
        lock (gate)
        {
            return TakeLocked();
        }
    }

    private List<long> TakeLocked()
    {
        var n = Math.Min(queued.Count, MaxJobs);
        var jobs = new List<long>(n);
        for (var i = 0; i < n; i++)
        {
            jobs.Add(queued.Dequeue());
        }
        return jobs;
    }

    private Task<int> RemoveAsync(List<long> jobs, CancellationToken ct) =>
        Retry.OnDeadlockAsync(async c =>
        {
            await using var conn = await db.OpenConnectionAsync(c);
            await using var tx = await conn.BeginReadCommittedAsync(c);
            var lanes = await LockDryLanesAsync(conn, tx, jobs, c);
            if (lanes.Count > 0)
            {
                await using var batch = new MySqlBatch(conn, tx);
                foreach (var chunk in lanes.Chunk(LaneCommand.MaxLanes))
                {
                    batch.BatchCommands.Add(LaneCommand.Batch(ClaimSql.DeleteLanes, chunk));
                }
                await batch.ExecuteNonQueryAsync(c);
            }
            await tx.CommitAsync(c);
            return lanes.Count;
        }, ct);

    /// <summary>
    /// The dry jobs' lanes, locked, in one round trip: a statement per <see cref="SqlRows.InListValues"/> jobs, so that
    /// each stays a read of point ranges however many jobs a transaction takes (<see cref="MaxJobs"/>).
    /// </summary>
    private static async Task<List<(long JobId, string Task)>> LockDryLanesAsync(MySqlConnection conn, MySqlTransaction tx, List<long> jobs, CancellationToken ct)
    {
        await using var batch = new MySqlBatch(conn, tx);
        foreach (var chunk in jobs.Distinct().Chunk(SqlRows.InListValues))
        {
            var cmd = new MySqlBatchCommand(ClaimSql.LockDryLanes(chunk.Length));
            cmd.Parameters.AddNumbered("@j", chunk);
            batch.BatchCommands.Add(cmd);
        }
        var lanes = new List<(long JobId, string Task)>();
        await using var reader = await batch.ExecuteReaderAsync(ct);
        do
        {
            while (await reader.ReadAsync(ct))
            {
                lanes.Add((reader.GetInt64(0), reader.GetString(1)));
            }
        }
        while (await reader.NextResultAsync(ct));
        return lanes;
    }

    [LoggerMessage(EventId = 3004, Level = LogLevel.Warning, Message = "Removing the lanes of {Count} jobs that ran dry failed; claims will remove them when they find them empty")]
    private static partial void LogFailed(ILogger logger, Exception exception, int count);
}
