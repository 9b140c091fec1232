using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Claims;
using Queue.Core.Ordering;
using Queue.Core.Sql;

namespace Queue.Core.Admin;

/// <summary>
/// Read side of the Admin UI. Reads are plain consistent reads (no locks), so looking never slows claims down.
/// </summary>
/// <remarks>
/// Lists, charts, the dashboard, the audit log and the workers page read through <see cref="ReadSource"/> (the replica
/// when there is one); a single job's page reads the primary, because it is what a technician looks at right after acting.
/// </remarks>
public sealed class AdminQueries(MySqlDataSource db, ReadSource reads, OrderingCalendar calendar, TimeProvider clock)
{
    public const int MaxPageSize = 200;

    /// <summary>
    /// One page of the ordering as the next claim walks it: jobs by (value, job_id), unblocked first. Positions count
    /// only unblocked jobs that have a lane claimable now, so they match what docs/CONTRACT.md calls <c>position</c>.
    /// </summary>
    public async Task<QueuePage> QueueAsync(QueueFilter filter, QueueCursor cursor, int limit, CancellationToken ct)
    {
        limit = Math.Clamp(limit, 1, MaxPageSize);
        var now = clock.GetUtcNow().UtcDateTime;
        await using var conn = await reads.OpenAsync(ct);
        var sql = filter.Task is not null ? AdminSql.QueuePageForTask : filter.TenantId is not null ? AdminSql.QueuePageForTenant : AdminSql.QueuePage;
        var rows = (await conn.QueryAsync<LaneGroup>(new CommandDefinition(sql, new
        {
            Blocked = cursor.Blocked ? 1 : 0,
            cursor.Value,
            cursor.JobId,
            filter.Task,
            filter.TenantId,
            Limit = limit + 1,
        }, cancellationToken: ct))).AsList();
        var more = rows.Count > limit;
        if (more)
        {
            rows.RemoveAt(rows.Count - 1);
        }
        var ids = rows.Select(r => r.JobId).ToArray();
        var jobs = await JobsAsync(conn, ids, ct);
        var modes = ids.Length == 0 ? new Dictionary<long, string>() :
            (await conn.QueryAsync<(long JobId, string Mode)>(new CommandDefinition(AdminSql.ModesByIds, new { Ids = ids }, cancellationToken: ct)))
            .ToDictionary(m => m.JobId, m => m.Mode);
        var overrides = await OverridesAsync(conn, ids, ct);
        var position = cursor.Position;
        var entries = new List<QueueEntry>(rows.Count);
        foreach (var r in rows)
        {
            var claimable = !r.Blocked && r.AvailableAt <= now;
            int? pos = null;
            if (claimable)
            {
                pos = ++position;
            }
            if (!jobs.TryGetValue(r.JobId, out var job))
            {
                continue; // removed by retention since the lanes were read
            }
            entries.Add(new QueueEntry(pos, job, OrderingBand.Shown(r.Value), modes.GetValueOrDefault(r.JobId, "?"), r.Blocked, claimable, r.AvailableAt, r.Tasks,
                overrides.GetValueOrDefault(r.JobId)));
        }
        QueueCursor? next = null;
        if (more && rows.Count > 0)
        {
            var last = rows[^1];
            next = new QueueCursor(last.Blocked, last.Value, last.JobId, position);
        }
        return new QueuePage(entries, next, await LowestValueAsync(conn, ct));
    }

    /// <summary>The lowest value among unblocked jobs: an override below it puts a job first.</summary>
    public async Task<long?> LowestValueAsync(CancellationToken ct)
    {
        await using var conn = await reads.OpenAsync(ct);
        return await LowestValueAsync(conn, ct);
    }

    /// <summary>As a technician enters it: an override's priority, so without the band (<see cref="OrderingBand"/>).</summary>
    private static async Task<long?> LowestValueAsync(MySqlConnection conn, CancellationToken ct) =>
        await conn.ExecuteScalarAsync<long?>(new CommandDefinition(AdminSql.LowestValue, cancellationToken: ct)) is { } lowest
            ? OrderingBand.Shown(lowest)
            : null;

    /// <summary>Newest jobs first; the next page starts before the last id returned.</summary>
    public async Task<(IReadOnlyList<AdminJob> Jobs, long? NextBefore)> RecentJobsAsync(long before, int limit, CancellationToken ct)
    {
        limit = Math.Clamp(limit, 1, MaxPageSize);
        await using var conn = await reads.OpenAsync(ct);
        var rows = (await conn.QueryAsync<AdminJob>(new CommandDefinition(AdminSql.RecentJobs, new { Before = before, Limit = limit + 1 }, cancellationToken: ct))).AsList();
        long? next = null;
        if (rows.Count > limit)
        {
            rows.RemoveAt(rows.Count - 1);
            next = rows[^1].Id;
        }
        return (rows, next);
    }

    public async Task<AdminJob?> JobAsync(long jobId, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        return await conn.QuerySingleOrDefaultAsync<AdminJob>(new CommandDefinition(AdminSql.JobById, new { JobId = jobId }, cancellationToken: ct));
    }

    /// <summary>Everything the job page shows; dead items are paged by id after <paramref name="deadAfter"/>.</summary>
    public async Task<JobDetail?> JobDetailAsync(long jobId, long deadAfter, int deadLimit, CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        await using var conn = await db.OpenConnectionAsync(ct);
        var job = await conn.QuerySingleOrDefaultAsync<AdminJob>(new CommandDefinition(AdminSql.JobById, new { JobId = jobId }, cancellationToken: ct));
        if (job is null)
        {
            return null;
        }
        var leases = await conn.ExecuteScalarAsync<long>(new CommandDefinition(JobSql.LiveLeases, new { JobId = jobId, Now = now }, cancellationToken: ct));
        var laneList = (await conn.QueryAsync<LaneInfo>(new CommandDefinition(AdminSql.LanesOfJob, new { JobId = jobId }, cancellationToken: ct))).AsList();
        int? position = null;
        var lowerBound = false;
        if (laneList.Count > 0 && !laneList[0].Blocked && laneList.Min(l => l.AvailableAt) <= now)
        {
            // The customer status's rule (docs/CONTRACT.md "GET /jobs/{id}"): exact up to 1,000 ahead, an index-dive estimate beyond.
            var ahead = await QueuePosition.AheadAsync(conn, jobId, laneList[0].Stored, laneList.Count, now, _ => Task.FromResult(0d), ct);
            position = (int)Math.Min(int.MaxValue, ahead.Jobs + 1);
            lowerBound = !ahead.Exact;
        }
        var history = (await conn.QueryAsync<OverrideInfo>(new CommandDefinition(AdminSql.OverridesOfJob, new { JobId = jobId }, cancellationToken: ct))).AsList();
        var current = history.FirstOrDefault(o => o.Active);
        var dead = (await conn.QueryAsync<DeadItem>(new CommandDefinition(AdminSql.DeadItemsOfJob,
            new { JobId = jobId, After = deadAfter, Limit = deadLimit + 1 }, cancellationToken: ct))).AsList();
        long? nextDead = null;
        if (dead.Count > deadLimit)
        {
            dead.RemoveAt(dead.Count - 1);
            nextDead = dead[^1].Id;
        }
        if (dead.Count > 0)
        {
            var errors = (await conn.QueryAsync<ItemError>(new CommandDefinition(AdminSql.ErrorsOfItems,
                new { Ids = dead.Select(d => d.Id).ToArray() }, cancellationToken: ct))).ToLookup(e => e.ItemId);
            foreach (var d in dead)
            {
                d.Errors = errors[d.Id].ToList();
            }
        }
        var audit = (await conn.QueryAsync<AuditEntry>(new CommandDefinition(AdminSql.AuditPageForJob,
            new { JobId = jobId, Before = long.MaxValue, Limit = 20 }, cancellationToken: ct))).AsList();
        return new JobDetail(job, leases, position, lowerBound, laneList, current, history, dead, nextDead, audit);
    }

    public async Task<AuditPage> AuditAsync(long? jobId, long before, int limit, CancellationToken ct)
    {
        limit = Math.Clamp(limit, 1, MaxPageSize);
        await using var conn = await reads.OpenAsync(ct);
        var rows = (await conn.QueryAsync<AuditEntry>(new CommandDefinition(jobId is null ? AdminSql.AuditPage : AdminSql.AuditPageForJob,
            new { JobId = jobId, Before = before, Limit = limit + 1 }, cancellationToken: ct))).AsList();
        long? next = null;
        if (rows.Count > limit)
        {
            rows.RemoveAt(rows.Count - 1);
            next = rows[^1].Id;
        }
        return new AuditPage(rows, next);
    }

    public async Task<Dashboard> DashboardAsync(CancellationToken ct)
    {
        var nowOffset = clock.GetUtcNow();
        var now = nowOffset.UtcDateTime;
        var period = calendar.At(nowOffset);
        // The two linear queries (the jobs counters and the lease probe) each cost a few hundred ms at 100k jobs with
        // work; on their own connections they overlap instead of adding up. The small ones ride along on a third.
        var depthTask = OnOwnConnectionAsync(async conn =>
            (await conn.QueryAsync<TenantDepth>(new CommandDefinition(AdminSql.DepthByTenant, cancellationToken: ct))).ToDictionary(d => d.TenantId), ct);
        var holdersTask = OnOwnConnectionAsync(conn => WorkerRoster.LeaseRowsAsync(conn, now, ct), ct);
        await using var conn = await reads.OpenAsync(ct);
        var rewrite = await conn.QuerySingleOrDefaultAsync<RewriteInfo>(new CommandDefinition(AdminSql.LastRewrite, cancellationToken: ct));
        var names = (await conn.QueryAsync<(long Id, string Name)>(new CommandDefinition(AdminSql.TenantNames, cancellationToken: ct)))
            .ToDictionary(t => t.Id, t => t.Name);
        var throughput = (await conn.QueryAsync<ThroughputPoint>(new CommandDefinition(AdminSql.ThroughputSince,
            new { Since = now.AddHours(-24) }, cancellationToken: ct))).AsList();
        var oldestId = await conn.ExecuteScalarAsync<long?>(new CommandDefinition(AdminSql.OldestWaiting, new { Now = now }, cancellationToken: ct));
        AdminJob? oldest = null;
        if (oldestId is { } id)
        {
            oldest = await conn.QuerySingleOrDefaultAsync<AdminJob>(new CommandDefinition(AdminSql.JobById, new { JobId = id }, cancellationToken: ct));
        }
        var known = await WorkerRoster.KnownAsync(conn, ct);
        var depth = await depthTask;
        var holders = await holdersTask;
        foreach (var tenantId in names.Keys.Where(k => !depth.ContainsKey(k)))
        {
            depth[tenantId] = new TenantDepth { TenantId = tenantId }; // a tenant without jobs still gets its row
        }
        foreach (var d in depth.Values)
        {
            d.TenantName = names.GetValueOrDefault(d.TenantId, $"#{d.TenantId}");
            d.Leased = holders.Where(h => h.TenantId == d.TenantId).Sum(h => h.Live);
        }
        var queued = depth.Values.Sum(d => d.JobsWithWork);
        var workers = WorkerRoster.Holders(holders, known);
        var nextMode = period.NextMode == OrderingMode.Smallest ? "smallest" : "oldest";
        return new Dashboard(nowOffset, period.ModeName, period.Start, period.End, nextMode, rewrite,
            depth.Values.OrderBy(d => d.TenantName, StringComparer.Ordinal).ToList(), throughput, oldest, queued, workers);
    }

    /// <summary>Each tenant's share of the claims in the newest minute snapshot, beside its weight (<see cref="TenantShares"/>).</summary>
    public async Task<TenantShares> SharesAsync(CancellationToken ct)
    {
        await using var conn = await reads.OpenAsync(ct);
        var rows = (await conn.QueryAsync<TenantShares.Row>(new CommandDefinition(AdminSql.LastMinuteShares, cancellationToken: ct))).AsList();
        return TenantShares.Of(rows);
    }

    private async Task<T> OnOwnConnectionAsync<T>(Func<MySqlConnection, Task<T>> query, CancellationToken ct)
    {
        await using var conn = await reads.OpenAsync(ct);
        return await query(conn);
    }

    public async Task<IReadOnlyList<LeaseHolder>> WorkersAsync(CancellationToken ct)
    {
        await using var conn = await reads.OpenAsync(ct);
        return await WorkerRoster.HoldersAsync(conn, clock.GetUtcNow().UtcDateTime, ct);
    }

    private static async Task<Dictionary<long, AdminJob>> JobsAsync(MySqlConnection conn, long[] ids, CancellationToken ct) =>
        ids.Length == 0 ? [] :
        (await conn.QueryAsync<AdminJob>(new CommandDefinition(AdminSql.JobsByIds, new { Ids = ids }, cancellationToken: ct))).ToDictionary(j => j.Id);

    private static async Task<Dictionary<long, OverrideInfo>> OverridesAsync(MySqlConnection conn, long[] ids, CancellationToken ct)
    {
        var result = new Dictionary<long, OverrideInfo>();
        if (ids.Length == 0)
        {
            return result;
        }
        foreach (var o in await conn.QueryAsync<OverrideInfo>(new CommandDefinition(AdminSql.ActiveOverridesByIds, new { Ids = ids }, cancellationToken: ct)))
        {
            result.TryAdd(o.JobId, o); // newest first
        }
        return result;
    }

    private sealed class LaneGroup
    {
        public long JobId { get; init; }

        public bool Blocked { get; init; }

        public long Value { get; init; }

        public DateTime AvailableAt { get; init; }

        public long Lanes { get; init; }

        public string Tasks { get; init; } = "";
    }
}
