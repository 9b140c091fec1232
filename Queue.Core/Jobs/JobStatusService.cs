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
public sealed class JobStatusService(MySqlDataSource db, TimeProvider clock, OrderingCalendar calendar, ThroughputMeter throughput)
{
    public async Task<JobStatus?> GetAsync(long tenantId, long jobId, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        var job = await conn.QuerySingleOrDefaultAsync<JobRow>(new CommandDefinition(JobSql.JobOfTenant, new { JobId = jobId, TenantId = tenantId }, cancellationToken: ct));
        return job is null ? null : await BuildAsync(conn, job, ct);
    }

    /// <summary>Any tenant's job, for technicians.</summary>
    public async Task<JobStatus?> GetAnyTenantAsync(long jobId, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        var job = await conn.QuerySingleOrDefaultAsync<JobRow>(new CommandDefinition(JobSql.JobById, new { JobId = jobId }, cancellationToken: ct));
        return job is null ? null : await BuildAsync(conn, job, ct);
    }

    public async Task<JobStatus> BuildAsync(MySqlConnection conn, JobRow job, CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        var active = Math.Max(0, job.Active);
        long leased = 0;
        if (active > 0)
        {
            leased = Math.Min(active, await conn.ExecuteScalarAsync<long>(new CommandDefinition(JobSql.LiveLeases, new { JobId = job.Id, Now = now }, cancellationToken: ct)));
        }
        var ready = active - leased;
        var mode = calendar.At(now).ModeName;
        var ordering = new OrderingInfo(mode, null, false);
        long? position = null;
        long itemsAhead = 0;
        if (active > 0 && job.State != JobStates.Cancelled)
        {
            var lane = await conn.QuerySingleAsync<LaneRow>(new CommandDefinition(JobSql.JobLanes, new { JobId = job.Id, Now = now }, cancellationToken: ct));
            if (lane.Lanes > 0 && lane.Value is { } value)
            {
                var isOverride = lane.Mode == OrderingLanes.ModeOverride;
                ordering = new OrderingInfo(isOverride ? mode : lane.Mode ?? mode, value, isOverride);
                if (ready > 0 && lane.Blocked == 0 && lane.AnyClaimable == 1)
                {
                    var ahead = await conn.QuerySingleAsync<AheadRow>(new CommandDefinition(JobSql.Ahead, new { JobId = job.Id, Value = value, Now = now }, cancellationToken: ct));
                    position = ahead.Jobs + 1;
                    itemsAhead = ahead.Items;
                }
            }
        }
        DateTime? eta = null;
        if (active > 0 && job.State != JobStates.Cancelled && await throughput.ItemsPerSecondAsync(ct) is { } rate and > 0)
        {
            var seconds = (itemsAhead + active) / rate;
            eta = seconds < TimeSpan.FromDays(3650).TotalSeconds ? now.AddSeconds(Math.Ceiling(seconds)) : null;
        }
        var state = job.State == JobStates.Closed && active == 0 ? JobStates.Done : job.State;
        return new JobStatus(job.Id, job.Name, JobStates.Name(state), job.CreatedAt, job.TaskList, job.Documents,
            new ItemCounts(job.ItemsTotal, ready, leased, job.ItemsDone, job.ItemsDead, job.ItemsCancelled), position, ordering, eta);
    }

    private sealed class LaneRow
    {
        public long Lanes { get; set; }

        public long? Value { get; set; }

        public string? Mode { get; set; }

        public long? Blocked { get; set; }

        public long? AnyClaimable { get; set; }

        public long? AllWaiting { get; set; }
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
