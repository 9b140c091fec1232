using System.Text.Json;
using Dapper;
using MySqlConnector;
using Queue.Core.Jobs;
using Queue.Core.Sql;

namespace Queue.Core.Ordering;

/// <summary>
/// See ahead (docs/DESIGN.md "Preview"): the ordering the next rewrite into a mode would write, or the ordering as it
/// stands with an override a technician is considering, and the order claims would follow it under a policy. Read
/// only: it writes no lane, override or audit entry. The values come from the rewrite's own SQL
/// (<see cref="PreviewSql.NextRewrite"/>), sorted by the server and streamed; <see cref="PreviewPlanner"/> keeps the
/// best <see cref="PreviewRequest.Top"/> jobs and one sum per tenant, so a deep queue costs time, not memory.
/// The CLI, the Admin's preview page and the job page's what-if all call this one class.
/// </summary>
public sealed class OrderingPreview(MySqlDataSource db, TimeProvider clock, ThroughputMeter throughput)
{
    public const int DefaultTop = 50;

    public const int MaxTop = 10_000;

    /// <summary>How deep today's and the what-if's positions are compared (jobs beyond it are "further back").</summary>
    public const int WhatIfDepth = 1000;

    /// <summary>The jobs a what-if lists as moving back; the rest are counted.</summary>
    public const int WhatIfListed = 20;

    public const string CurrentMode = "current";

    public async Task<PreviewResult> PreviewAsync(PreviewRequest request, CancellationToken ct)
    {
        if (request.Mode is not (null or "smallest" or "oldest"))
        {
            throw new ArgumentException("mode must be smallest or oldest", nameof(request));
        }
        if (request.Policy is not (OrderingOptions.Seed or OrderingOptions.TenantFair))
        {
            throw new ArgumentException("policy must be seed or tenant-fair", nameof(request));
        }
        var top = Math.Clamp(request.Top, 1, MaxTop);
        var now = clock.GetUtcNow().UtcDateTime;
        var tenantFair = request.Policy == OrderingOptions.TenantFair;
        await using var conn = await db.OpenConnectionAsync(ct);
        var tenants = (await conn.QueryAsync<TenantRow>(new CommandDefinition(PreviewSql.Tenants, cancellationToken: ct))).ToDictionary(t => t.Id);
        var planner = new PreviewPlanner(tenantFair, top, tenants.ToDictionary(t => t.Key, t => t.Value.Weight), request.TenantId);
        var args = new
        {
            request.Mode,
            BandBase = 0L,
            RankBase = 0L,
            Now = now,
            WhatIf = WhatIfJson(request.Overrides),
            request.Task,
            OverridesFirst = tenantFair ? 1 : 0,
        };
        var sql = request.Mode is null ? PreviewSql.Current : PreviewSql.NextRewrite;
        await foreach (var row in conn.QueryUnbufferedAsync<PreviewRow>(sql, args).WithCancellation(ct))
        {
            planner.Add(row);
        }
        var (positions, sums) = planner.Finish();
        var names = positions.Count == 0 ? [] : (await conn.QueryAsync<(long Id, string Name)>(new CommandDefinition(PreviewSql.JobNames,
            new { Ids = positions.Select(p => p.Row.JobId).ToArray() }, cancellationToken: ct))).ToDictionary(r => r.Id, r => r.Name);
        var rate = await RateAsync(conn, now, ct);
        string TenantName(long id) => tenants.TryGetValue(id, out var t) ? t.Name : "#" + id;
        DateTime? Eta(long claims) => rate is > 0 && claims / rate.Value < TimeSpan.FromDays(3650).TotalSeconds ? now.AddSeconds(Math.Ceiling(claims / rate.Value)) : null;
        return new PreviewResult(request.Mode ?? CurrentMode, request.Policy, now,
            [.. positions.Select(p => new PreviewPosition(p.Position, p.Row.JobId, p.Row.TenantId, TenantName(p.Row.TenantId), names.GetValueOrDefault(p.Row.JobId, ""),
                p.Row.Items, p.Row.Value, Reason(request.Mode, p.Row), p.ClaimsBefore, Eta(p.ClaimsBefore)))],
            [.. sums.Where(s => request.TenantId is null || s.TenantId == request.TenantId)
                .Select(s => new PreviewTenant(s.TenantId, TenantName(s.TenantId), s.Jobs, s.Items, s.Share, Eta(s.FirstClaimsBefore), Eta(s.LastClaimEnd)))],
            planner.Jobs, planner.BlockedJobs, rate);
    }

    /// <summary>
    /// The job page's "Preview": the ordering as it stands, and the same with the override (<paramref name="value"/>) in
    /// force, compared over the first <see cref="WhatIfDepth"/> positions. Writes nothing.
    /// </summary>
    public async Task<WhatIfResult> WhatIfAsync(long jobId, long value, string policy, CancellationToken ct)
    {
        // Two connections side by side: each is one pass over every job.
        var todayTask = PreviewAsync(new PreviewRequest(null, policy, Top: WhatIfDepth), ct);
        var thenTask = PreviewAsync(new PreviewRequest(null, policy, new Dictionary<long, long> { [jobId] = value }, Top: WhatIfDepth), ct);
        var (today, then) = (await todayTask, await thenTask);
        var before = today.Positions.ToDictionary(p => p.JobId, p => p.Position);
        var moved = new List<(PreviewPosition Job, int By)>();
        var count = 0;
        foreach (var p in then.Positions)
        {
            if (p.JobId != jobId && before.TryGetValue(p.JobId, out var was) && p.Position > was)
            {
                count++;
                if (moved.Count < WhatIfListed)
                {
                    moved.Add((p, p.Position - was));
                }
            }
        }
        return new WhatIfResult(jobId, value, today.PositionOf(jobId), then.PositionOf(jobId), moved, count);
    }

    /// <summary>
    /// Explain's drain rate (<see cref="ThroughputMeter"/>); a process that has not watched it for long enough (the CLI)
    /// takes the completions of the Scheduler's last five minute snapshots instead.
    /// </summary>
    private async Task<double?> RateAsync(MySqlConnection conn, DateTime now, CancellationToken ct)
    {
        if (await throughput.ItemsPerSecondAsync(ct) is { } measured and > 0)
        {
            return measured;
        }
        var recent = await conn.QuerySingleAsync<CompletionsRow>(new CommandDefinition(PreviewSql.RecentCompletions,
            new { Since = now.AddMinutes(-5) }, cancellationToken: ct));
        if (recent.First is not { } first || recent.Last is not { } last || recent.Completions <= 0)
        {
            return null;
        }
        // Each snapshot row covers the minute that ends at its time.
        return recent.Completions / ((last - first).TotalSeconds + 60);
    }

    private static string Reason(string? mode, PreviewRow row) =>
        row.WhatIf != 0 ? "override (what-if)"
        : row.IsOverride != 0 ? "override"
        : (mode ?? row.Mode) == "smallest" ? $"smallest: {row.Items} left"
        : mode == "oldest" ? $"oldest #{((row.Value - 10000) / 5) + 1}"
        : row.Mode ?? "";

    private static string WhatIfJson(IReadOnlyDictionary<long, long>? overrides)
    {
        using var buffer = new MemoryStream();
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartArray();
            foreach (var (job, value) in overrides ?? new Dictionary<long, long>())
            {
                w.WriteStartObject();
                w.WriteNumber("j", job);
                w.WriteNumber("v", value);
                w.WriteEndObject();
            }
            w.WriteEndArray();
        }
        return System.Text.Encoding.UTF8.GetString(buffer.ToArray());
    }

    private sealed record TenantRow(long Id, string Name, int Weight);

    private sealed record CompletionsRow(long Completions, DateTime? First, DateTime? Last);
}
