using System.Text.Json;
using System.Text.Json.Serialization;
using Dapper;
using MySqlConnector;
using Queue.Core.Claims;
using Queue.Core.Sql;

namespace Queue.Core.Fairness;

public sealed record TenantStarvation(string Tenant, double Seconds);

/// <summary>What one Api process reports every minute: its fairness metrics over the last <see cref="FairnessMonitor.Window"/>.</summary>
/// <param name="PeakItemsPerSecond">The pool's capacity as the stretch assumes it: the best minute's completion rate in the last hour.</param>
public sealed record FairnessSnapshot(
    string Instance, DateTime At, IReadOnlyList<MinuteFairness> Minutes, IReadOnlyList<StretchBucket> Stretch,
    IReadOnlyList<TenantStarvation> Starvation, double? PeakItemsPerSecond)
{
    /// <summary>Jain's index of the last whole minute, if it had claims.</summary>
    public double? LastMinuteJain => Minutes.Count == 0 ? null : Minutes[^1].Jain;

    public double? MinJain => Minutes.Count == 0 ? null : Minutes.Min(m => m.Jain);
}

/// <summary>
/// The production side of the fairness metrics (docs/DESIGN.md "Fairness"). Each Api process keeps a trace of the
/// claims it hands out (tenant, job, count) and, every <see cref="SampleEvery"/>, a sample of the jobs that have
/// claimable work (their active items, which over-count ready ones by the leases out). Every minute it runs the same
/// pure <see cref="FairnessMetrics"/> as the simulator over the last <see cref="Window"/> and keeps the result; stretch
/// comes from the jobs finished in the last hour, against the best completion rate of the last hour as capacity.
/// With several Api processes each reports its own claims (their sum is what the workers got).
/// </summary>
public sealed class FairnessMonitor(MySqlDataSource db, TimeProvider clock)
{
    public static readonly TimeSpan Window = TimeSpan.FromMinutes(15);
    public static readonly TimeSpan SampleEvery = TimeSpan.FromSeconds(10);
    public static readonly TimeSpan StretchWindow = TimeSpan.FromHours(1);
    /// <summary>At most this many events are held (20 MB): past it the oldest are folded into the baseline early.</summary>
    public const int MaxEvents = 500_000;

    /// <summary>Lanes read per sample, from the head of the ordering: the sample costs the same at any backlog.</summary>
    public const int MaxSampledLanes = 5_000;

    private readonly Lock gate = new();
    private readonly TraceBuffer trace = new();

    /// <summary>The last ready count traced per sampled job: a sample adds an event only for what changed.</summary>
    private readonly Dictionary<long, (long Tenant, int Ready)> sampled = [];

    /// <summary>Jobs claimed since the last sample: their traced ready count moved, so the next sample re-sets it.</summary>
    private readonly HashSet<long> claimedSinceSample = [];

    /// <summary>Ready counts carried by events trimmed off the front of the trace, re-stated at the window's start.</summary>
    private readonly Dictionary<long, (long Tenant, int Ready)> baseline = [];

    /// <summary>Events held in memory: bounded by <see cref="MaxEvents"/>, and flat while the backlog does not change.</summary>
    public int TracedEvents
    {
        get
        {
            lock (gate)
            {
                return trace.Count;
            }
        }
    }
    private readonly Queue<(DateTime At, long Total)> completions = new();

    public string Instance { get; } = $"{Environment.MachineName}:{Environment.ProcessId}";

    public FairnessSnapshot? Latest { get; private set; }

    /// <summary>Items just handed out, in claim order (called by the worker endpoint).</summary>
    public void Claimed(IReadOnlyList<TakenItem> items)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        lock (gate)
        {
            for (var i = 0; i < items.Count;)
            {
                var j = i + 1;
                while (j < items.Count && items[j].JobId == items[i].JobId)
                {
                    j++;
                }
                trace.Add(new TraceEvent(now, TraceKind.Claimed, items[i].TenantId, items[i].JobId, j - i));
                claimedSinceSample.Add(items[i].JobId);
                i = j;
            }
            TrimTo(MaxEvents);
        }
    }

    /// <summary>Sets every job's ready count from the ordering: jobs that had work and have none now drop to 0.</summary>
    public async Task SampleAsync(CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        await using var conn = await db.OpenConnectionAsync(ct);
        var rows = (await conn.QueryAsync<(long TenantId, long JobId, long Active)>(new CommandDefinition(MonitorSql.SampleHead,
            new { Now = now, MaxLanes = MaxSampledLanes }, cancellationToken: ct))).AsList();
        lock (gate)
        {
            var seen = new HashSet<long>();
            foreach (var r in rows)
            {
                seen.Add(r.JobId);
                var ready = (int)Math.Min(int.MaxValue, Math.Max(0, r.Active));
                // An unchanged backlog adds nothing: the trace grows with claims and changes, not with samples.
                if (!sampled.TryGetValue(r.JobId, out var last) || last.Ready != ready || claimedSinceSample.Contains(r.JobId))
                {
                    trace.Add(new TraceEvent(now, TraceKind.ReadySample, r.TenantId, r.JobId, ready));
                }
                sampled[r.JobId] = (r.TenantId, ready);
            }
            foreach (var gone in sampled.Keys.Where(j => !seen.Contains(j)).ToList())
            {
                trace.Add(new TraceEvent(now, TraceKind.ReadySample, sampled[gone].Tenant, gone, 0));
                sampled.Remove(gone);
            }
            claimedSinceSample.Clear();
            TrimTo(MaxEvents);
        }
    }

    /// <summary>Drops the oldest events beyond <paramref name="max"/>, folding the ready counts they set into the baseline.</summary>
    private void TrimTo(int max)
    {
        while (trace.Count > max)
        {
            Fold(trace.RemoveOldest());
        }
    }

    /// <summary>Folds an event trimmed off the front of the trace into the baseline of ready counts.</summary>
    private void Fold(TraceEvent e)
    {
        var ready = baseline.TryGetValue(e.Job, out var b) ? b.Ready : 0;
        ready = e.Kind switch
        {
            TraceKind.ReadySample => e.Count,
            TraceKind.Claimed => Math.Max(0, ready - e.Count),
            TraceKind.Submitted or TraceKind.Released => ready + e.Count,
            _ => ready,
        };
        if (ready > 0)
        {
            baseline[e.Job] = (e.Tenant, ready);
        }
        else
        {
            baseline.Remove(e.Job);
        }
    }

    /// <summary>Computes the metrics over the window and keeps them as <see cref="Latest"/>; writes them for the Admin.</summary>
    public async Task<FairnessSnapshot> ReportAsync(CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        await using var conn = await db.OpenConnectionAsync(ct);
        var total = await conn.ExecuteScalarAsync<long>(new CommandDefinition(FairnessSql.TotalCompletions, cancellationToken: ct));
        var names = (await conn.QueryAsync<(long Id, string Name)>(new CommandDefinition(FairnessSql.TenantNames, cancellationToken: ct)))
            .ToDictionary(r => r.Id, r => r.Name);
        var weights = (await conn.QueryAsync<(long Id, int Weight)>(new CommandDefinition(FairnessSql.TenantWeights, cancellationToken: ct)))
            .ToDictionary(r => r.Id, r => r.Weight);
        var finished = (await conn.QueryAsync<FinishedRow>(new CommandDefinition(FairnessSql.FinishedJobs,
            new { Since = now - StretchWindow }, cancellationToken: ct))).AsList();

        TraceEvent[] events;
        lock (gate)
        {
            var start = now - Window;
            while (trace.Count > 0 && trace.Oldest.At < start)
            {
                Fold(trace.RemoveOldest());
            }
            // Work that was ready before the window and unchanged since is re-stated at its start. One array of the exact
            // size, the trace copied chunk by chunk: this runs under the lock every /next takes, once a minute.
            events = new TraceEvent[baseline.Count + trace.Count];
            var n = 0;
            foreach (var (job, b) in baseline)
            {
                events[n++] = new TraceEvent(start, TraceKind.ReadySample, b.Tenant, job, b.Ready);
            }
            trace.CopyTo(events, n);
            completions.Enqueue((now, total));
            while (completions.Count > 2 && now - completions.Peek().At > StretchWindow)
            {
                completions.Dequeue();
            }
        }
        var peak = PeakRate();
        var claims = FairnessMetrics.Analyze(events, new ServiceModel(1, TimeSpan.FromSeconds(1)), weights, now);
        // Whole minutes only: the one in progress would read as unfair just because it is short.
        var thisMinute = new DateTime(now.Ticks - (now.Ticks % TimeSpan.TicksPerMinute), DateTimeKind.Utc);
        var minutes = claims.Minutes.Where(m => m.Minute < thisMinute).ToList();
        IReadOnlyList<StretchBucket> stretch = [];
        if (peak is > 0)
        {
            var jobTrace = finished.SelectMany(f => new[]
            {
                new TraceEvent(f.CreatedAt, TraceKind.Submitted, f.TenantId, f.JobId, (int)Math.Min(int.MaxValue, f.Items)),
                new TraceEvent(f.FinishedAt, TraceKind.Completed, f.TenantId, f.JobId, (int)Math.Min(int.MaxValue, f.Items)),
            }).OrderBy(e => e.At).ToList();
            stretch = FairnessMetrics.Analyze(jobTrace, new ServiceModel(1, TimeSpan.FromSeconds(1 / peak.Value)), end: now).Stretch;
        }
        var starvation = claims.Starvation.Select(kv => new TenantStarvation(names.GetValueOrDefault(kv.Key, kv.Key.ToString(System.Globalization.CultureInfo.InvariantCulture)), kv.Value.TotalSeconds))
            .OrderBy(s => s.Tenant, StringComparer.Ordinal).ToList();
        var snapshot = new FairnessSnapshot(Instance, now, minutes, stretch, starvation, peak);
        Latest = snapshot;
        await conn.ExecuteAsync(new CommandDefinition(FairnessSql.UpsertReport,
            new { Instance, At = now, Report = JsonSerializer.Serialize(snapshot, FairnessJson.Default.FairnessSnapshot) }, cancellationToken: ct));
        return snapshot;
    }

    /// <summary>Reports of every Api process written within the last five minutes (for the Admin dashboard).</summary>
    public static async Task<IReadOnlyList<FairnessSnapshot>> RecentAsync(MySqlDataSource db, DateTime now, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        var rows = await conn.QueryAsync<(string Instance, DateTime At, string Report)>(new CommandDefinition(FairnessSql.RecentReports,
            new { Since = now.AddMinutes(-5) }, cancellationToken: ct));
        return rows.Select(r => JsonSerializer.Deserialize(r.Report, FairnessJson.Default.FairnessSnapshot)).OfType<FairnessSnapshot>().ToList();
    }

    private double? PeakRate()
    {
        lock (gate)
        {
            double? best = null;
            (DateTime At, long Total)? prev = null;
            foreach (var c in completions)
            {
                if (prev is { } p && c.At > p.At)
                {
                    var rate = Math.Max(0, c.Total - p.Total) / (c.At - p.At).TotalSeconds;
                    best = Math.Max(best ?? 0, rate);
                }
                prev = c;
            }
            return best;
        }
    }

    private sealed record FinishedRow(long TenantId, long JobId, long Items, DateTime CreatedAt, DateTime FinishedAt);
}

[JsonSourceGenerationOptions(JsonSerializerDefaults.Web)]
[JsonSerializable(typeof(FairnessSnapshot))]
internal sealed partial class FairnessJson : JsonSerializerContext;
