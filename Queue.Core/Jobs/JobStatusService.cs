using Dapper;
using MySqlConnector;
using Queue.Core.Ordering;
using Queue.Core.Sql;

namespace Queue.Core.Jobs;

/// <summary>
/// The status of a job (GET /jobs/{id}): counters from the jobs row, live leases from ix_items_job_state, position and
/// ordering from the ordering table, and an ETA from recent throughput. Never scans a job's items.
/// Shared by the customer API, the Admin UI and the explain endpoint.
/// </summary>
public sealed class JobStatusService(MySqlDataSource db, TimeProvider clock, OrderingCalendar calendar, ThroughputMeter throughput) : IDisposable
{
    private static readonly TimeSpan HeadSampleEvery = TimeSpan.FromSeconds(10);
    private readonly SemaphoreSlim headSampling = new(1, 1);
    private (DateTimeOffset At, double ItemsPerJob) headSample = (DateTimeOffset.MinValue, 1);

    public void Dispose() => headSampling.Dispose();

    public async Task<JobStatus?> GetAsync(long tenantId, long jobId, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        var now = clock.GetUtcNow().UtcDateTime;
        await using var multi = await conn.QueryMultipleAsync(new CommandDefinition(JobSql.StatusOfTenant,
            new { JobId = jobId, TenantId = tenantId, Now = now }, cancellationToken: ct));
        var job = await multi.ReadSingleOrDefaultAsync<JobRow>();
        var leases = await multi.ReadSingleAsync<long>();
        var lane = await multi.ReadSingleAsync<JobLanesRow>();
        return job is null ? null : await BuildAsync(conn, job, leases, lane, now, ct);
    }

    /// <summary>
    /// Up to <paramref name="max"/> of a job's documents from <paramref name="from"/> on, as POST /jobs or an upload
    /// answered them, for a retry of the keyed request that stored them.
    /// </summary>
    public async Task<IReadOnlyList<CreatedDocument>> CreatedDocumentsAsync(long jobId, long from, int max, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        var rows = await conn.QueryAsync<(long Id, string Name, long Size, byte[] Sha256)>(new CommandDefinition(JobSql.FirstDocuments,
            new { JobId = jobId, From = from, Max = max }, cancellationToken: ct));
        return rows.Select(r => new CreatedDocument(r.Id, r.Name, r.Size, Convert.ToHexStringLower(r.Sha256))).ToList();
    }

    /// <summary>Any tenant's job, for technicians.</summary>
    public async Task<JobStatus?> GetAnyTenantAsync(long jobId, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        var job = await conn.QuerySingleOrDefaultAsync<JobRow>(new CommandDefinition(JobSql.JobById, new { JobId = jobId }, cancellationToken: ct));
        return job is null ? null : await BuildAsync(conn, job, ct);
    }

    /// <summary>The status of a row already read (job listings), on the caller's connection.</summary>
    public async Task<JobStatus> BuildAsync(MySqlConnection conn, JobRow job, CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        var leases = job.Active > 0
            ? await conn.ExecuteScalarAsync<long>(new CommandDefinition(JobSql.LiveLeases, new { JobId = job.Id, Now = now }, cancellationToken: ct))
            : 0;
        var lane = job.Active > 0 && job.State != JobStates.Cancelled
            ? await conn.QuerySingleAsync<JobLanesRow>(new CommandDefinition(JobSql.JobLanes, new { JobId = job.Id, Now = now }, cancellationToken: ct))
            : new JobLanesRow();
        return await BuildAsync(conn, job, leases, lane, now, ct);
    }

    /// <summary>
    /// The first status of a job just created, from what its transaction wrote: no read of the job back, only the
    /// position (an index dive, and a capped walk when the queue ahead is short).
    /// </summary>
    public async Task<JobStatus> OfNewJobAsync(PendingJob pending, CreatedJob created, CancellationToken ct)
    {
        var items = (long)pending.ItemCount;
        var job = new JobRow(created.JobId, pending.TenantId, pending.Name, (sbyte)(pending.Open ? JobStates.Open : JobStates.Closed),
            string.Join(',', pending.Tasks), (sbyte)(created.Blocked ? 1 : 0), pending.Documents.Count, items, 0, 0, 0,
            created.CreatedAt, pending.Open ? null : created.CreatedAt, null);
        var lane = created.Value is { } value
            ? new JobLanesRow { Lanes = pending.Tasks.Count, Value = value, Mode = created.Mode, Blocked = created.Blocked ? 1 : 0, AnyClaimable = 1 }
            : new JobLanesRow();
        if (created.Ahead is { } known)
        {
            // Read for the whole group after its commit: nothing left to ask the database.
            return await BuildAsync(null, job, 0, lane, clock.GetUtcNow().UtcDateTime, ct, known);
        }
        await using var conn = await db.OpenConnectionAsync(ct);
        return await BuildAsync(conn, job, 0, lane, clock.GetUtcNow().UtcDateTime, ct);
    }

    /// <summary>
    /// The first status of a job just created, read from nothing at all: what its transaction wrote, with the position
    /// and ETA unknown (null, as the contract has unknown fields). It is the answer an Idempotency-Key keeps when the
    /// job committed but the full status could not be read, so that a retry still gets a job status.
    /// </summary>
    public JobStatus OfNewJobUnread(PendingJob pending, CreatedJob created)
    {
        var items = (long)pending.ItemCount;
        var mode = calendar.At(clock.GetUtcNow().UtcDateTime).ModeName;
        var ordering = new OrderingInfo(mode, null, false);
        if (items > 0 && created.Value is { } value)
        {
            var isOverride = created.Mode == OrderingLanes.ModeOverride;
            ordering = new OrderingInfo(isOverride ? mode : created.Mode ?? mode, OrderingBand.Shown(value), isOverride);
        }
        var state = pending.Open ? JobStates.Open : items == 0 ? JobStates.Done : JobStates.Closed;
        return new JobStatus(created.JobId, pending.Name, JobStates.Name(state), created.CreatedAt, pending.Tasks, pending.Documents.Count,
            new ItemCounts(items, items, 0, 0, 0, 0), null, true, ordering, null);
    }

    /// <param name="conn">Where the position is read; unused (and may be null) when <paramref name="known"/> is given.</param>
    private async Task<JobStatus> BuildAsync(MySqlConnection? conn, JobRow job, long liveLeases, JobLanesRow lane, DateTime now, CancellationToken ct,
        AheadFacts? known = null)
    {
        var active = Math.Max(0, job.Active);
        var leased = Math.Min(active, liveLeases);
        var ready = active - leased;
        var mode = calendar.At(now).ModeName;
        var ordering = new OrderingInfo(mode, null, false);
        long? position = null;
        var exact = true;
        long itemsAhead = 0;
        var live = active > 0 && job.State != JobStates.Cancelled;
        var rate = live ? await throughput.ItemsPerSecondAsync(ct) : null;
        if (live && lane.Lanes > 0 && lane.Value is { } value)
        {
            var isOverride = lane.Mode == OrderingLanes.ModeOverride;
            ordering = new OrderingInfo(isOverride ? mode : lane.Mode ?? mode, OrderingBand.Shown(value), isOverride);
            if (ready > 0 && lane.Blocked == 0 && lane.AnyClaimable == 1)
            {
                var ahead = known is { } facts
                    ? await QueuePosition.ResolveAsync(facts, ItemsPerJobAtHeadAsync, ct)
                    : await QueuePosition.AheadAsync(conn!, job.Id, value, lane.Lanes, now, ItemsPerJobAtHeadAsync, ct);
                position = ahead.Jobs + 1;
                exact = ahead.Exact;
                itemsAhead = ahead.Items;
            }
        }
        DateTime? eta = null;
        if (live && rate > 0)
        {
            var seconds = (itemsAhead + active) / rate.Value;
            eta = seconds < TimeSpan.FromDays(3650).TotalSeconds ? now.AddSeconds(Math.Ceiling(seconds)) : null;
        }
        var state = job.State == JobStates.Closed && active == 0 ? JobStates.Done : job.State;
        return new JobStatus(job.Id, job.Name, JobStates.Name(state), job.CreatedAt, job.TaskList, job.Documents,
            new ItemCounts(job.ItemsTotal, ready, leased, job.ItemsDone, job.ItemsDead, job.ItemsCancelled), position, exact, ordering, eta);
    }

    /// <summary>
    /// Active items per claimable job among the first <see cref="QueuePosition.ExactLimit"/> of the ordering, sampled at
    /// most every <see cref="HeadSampleEvery"/>: what an estimated position multiplies by for the items ahead (the ETA).
    /// </summary>
    private async Task<double> ItemsPerJobAtHeadAsync(CancellationToken ct)
    {
        var now = clock.GetUtcNow();
        if (now - headSample.At >= HeadSampleEvery && await headSampling.WaitAsync(0, ct))
        {
            try
            {
                await using var conn = await db.OpenConnectionAsync(ct);
                var head = await conn.QuerySingleAsync<AheadRow>(new CommandDefinition(OrderingSql.CappedJobsAhead,
                    new { Value = long.MaxValue, JobId = long.MaxValue, Now = now.UtcDateTime, Cap = QueuePosition.ExactLimit }, cancellationToken: ct));
                headSample = (now, head.Jobs == 0 ? 1 : (double)head.Items / head.Jobs);
            }
            finally
            {
                headSampling.Release();
            }
        }
        return headSample.ItemsPerJob;
    }

    private sealed class AheadRow
    {
        public long Jobs { get; set; }

        public long Items { get; set; }
    }
}

/// <summary>
/// Recent completions per second across all tenants, for ETAs. Every Api process adds its completions to
/// <c>tenant_counters</c> every few seconds; this samples the total at most every <see cref="SampleEvery"/> and divides the
/// growth over the last <see cref="Window"/> by the time it took. Null until two samples <see cref="MinSpan"/> apart exist,
/// and 0 (so no ETA) when nothing completed in the window.
/// </summary>
public sealed class ThroughputMeter(MySqlDataSource db, TimeProvider clock) : IDisposable
{
    public static readonly TimeSpan SampleEvery = TimeSpan.FromSeconds(5);
    public static readonly TimeSpan Window = TimeSpan.FromMinutes(5);
    public static readonly TimeSpan MinSpan = TimeSpan.FromSeconds(10);

    private readonly List<(DateTimeOffset At, long Total)> samples = [];
    private readonly SemaphoreSlim sampling = new(1, 1);

    public async Task<double?> ItemsPerSecondAsync(CancellationToken ct)
    {
        var now = clock.GetUtcNow();
        bool stale;
        lock (samples)
        {
            stale = samples.Count == 0 || now - samples[^1].At >= SampleEvery;
        }
        // One request samples; the others use what is there rather than queue behind it.
        if (stale && await sampling.WaitAsync(0, ct))
        {
            try
            {
                await using var conn = await db.OpenConnectionAsync(ct);
                var total = await conn.ExecuteScalarAsync<long>(new CommandDefinition(JobSql.TotalCompletions, cancellationToken: ct));
                Record(now, total);
            }
            finally
            {
                sampling.Release();
            }
        }
        lock (samples)
        {
            if (samples.Count < 2)
            {
                return null;
            }
            var (firstAt, firstTotal) = samples[0];
            var (lastAt, lastTotal) = samples[^1];
            var span = lastAt - firstAt;
            return span < MinSpan ? null : Math.Max(0, lastTotal - firstTotal) / span.TotalSeconds;
        }
    }

    public void Dispose() => sampling.Dispose();

    /// <summary>Adds a sample (also used by tests to feed a known rate).</summary>
    public void Record(DateTimeOffset at, long total)
    {
        lock (samples)
        {
            var i = samples.Count;
            while (i > 0 && samples[i - 1].At > at)
            {
                i--;
            }
            samples.Insert(i, (at, total));
            while (samples.Count > 2 && samples[^1].At - samples[0].At > Window)
            {
                samples.RemoveAt(0);
            }
        }
    }
}
