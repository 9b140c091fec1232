using System.Diagnostics;
using Dapper;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Time.Testing;
using MySqlConnector;
using Queue.Core.Claims;
using Queue.Core.Hosting;
using Queue.Core.Data;
using Queue.Core.Fairness;
using Queue.Core.Ordering;
using Queue.Core.Security;
using Queue.Bench.Sql;
using Queue.Core.Sql;

namespace Queue.Bench.Simulation;

public sealed record SimResult(
    Scenario Scenario, string Policy, List<TraceEvent> Trace, Dictionary<long, string> TenantNames, Dictionary<string, int> Weights,
    DateTime Start, DateTime End, List<(double Minute, Dictionary<string, long> Completed)> Timeline, TimeSpan Wall, long Claims,
    OrderingCalendar Calendar);

/// <summary>
/// Runs a scenario through the real Core code (provisional placement, the Scheduler's rewrite, the claim engine with the
/// chosen lane selector, completions) against a private MariaDB, with a fake clock and simulated workers: every
/// simulated second, finished items are completed and free workers claim, all in real transactions.
/// </summary>
public sealed class Simulation(Scenario scenario, string policy, string connectionString)
{
    private static readonly DateTimeOffset Epoch = new(2026, 1, 5, 0, 0, 0, TimeSpan.Zero);
    private static readonly TimeSpan Tick = TimeSpan.FromSeconds(1);
    private static readonly string[] Tasks = ["default"];

    public async Task<SimResult> RunAsync(CancellationToken ct)
    {
        var wall = Stopwatch.StartNew();
        var clock = new FakeTimeProvider(Epoch);
        await using var db = new MySqlDataSourceBuilder(QueueDatabase.Normalize(connectionString)).Build();
        var options = Options.Create(new OrderingOptions { Period = scenario.Period, Policy = policy == "tenant-fair" ? "tenant-fair" : "seed" });
        var calendar = new OrderingCalendar(clock, options);
        var lanes = new OrderingLanes(calendar, clock);
        var rewriter = new OrderingRewriter(db, calendar, lanes, clock, options, NullLogger<OrderingRewriter>.Instance);
        ILaneSelector selector = policy switch
        {
            "tenant-fair" => new TenantFairLaneSelector(new FairShare(new OrderingOptions().ReturnCredit), clock),
            "fifo" => new FifoLaneSelector(),
            _ => new SeedLaneSelector(),
        };
        var engine = new ClaimEngine(db, selector, clock, new ClaimCounters());
        var leases = new LeaseService(db, clock, new LaneJanitor(db, new BackgroundWork(), NullLogger<LaneJanitor>.Instance));

        var tenantService = new TenantService(db, clock);
        var ids = new Dictionary<string, long>(StringComparer.Ordinal);
        var weights = new Dictionary<string, int>(StringComparer.Ordinal);
        foreach (var name in scenario.Tenants)
        {
            var w = scenario.Weights.GetValueOrDefault(name, 1);
            ids[name] = (await tenantService.CreateAsync(name, new TenantSettings(Tasks, Weight: w), ct)).Id;
            weights[name] = w;
        }
        var names = ids.ToDictionary(kv => kv.Value, kv => kv.Key);

        var trace = new List<TraceEvent>();
        var running = new PriorityQueue<TakenItem, DateTime>();
        var completed = scenario.Tenants.ToDictionary(t => t, _ => 0L, StringComparer.Ordinal);
        var timeline = new List<(double, Dictionary<string, long>)>();
        var next = 0;
        var maybeWork = false;
        long claims = 0;
        var period = long.MinValue;
        for (var t = TimeSpan.Zero; t <= scenario.Duration; t += Tick)
        {
            clock.SetUtcNow(Epoch + t);
            var now = clock.GetUtcNow().UtcDateTime;
            var p = calendar.At(Epoch + t);
            if (p.Index != period)
            {
                period = p.Index;
                await rewriter.RewriteAsync("simulator", Epoch + t, ct: ct);
                maybeWork = true;
            }
            while (next < scenario.Arrivals.Count && scenario.Arrivals[next].At <= t)
            {
                var a = scenario.Arrivals[next++];
                var job = await SubmitAsync(db, lanes, ids[a.Tenant], a.Items, now, ct);
                trace.Add(new TraceEvent(now, TraceKind.Submitted, ids[a.Tenant], job, a.Items));
                maybeWork = true;
            }
            var done = new List<TakenItem>();
            while (running.TryPeek(out _, out var due) && due <= now)
            {
                done.Add(running.Dequeue());
            }
            if (done.Count > 0)
            {
                await leases.CompleteAsync(done.Select(d => new LeaseRef(d.Id, d.Token)).ToList(), ct);
                foreach (var g in Runs(done))
                {
                    trace.Add(new TraceEvent(now, TraceKind.Completed, g.Tenant, g.Job, g.Count));
                    completed[names[g.Tenant]] += g.Count;
                }
                maybeWork = true;
            }
            var free = scenario.Workers - running.Count;
            if (free > 0 && maybeWork)
            {
                var slots = Enumerable.Range(0, free).Select(i => new ClaimSlot($"w{i}", now.AddMinutes(5), Reservation: false)).ToList();
                var taken = (await engine.ClaimAsync([new ClaimOrder([], slots)], ct))[0];
                foreach (var item in taken)
                {
                    running.Enqueue(item, now + scenario.ItemTime);
                }
                foreach (var g in Runs(taken))
                {
                    trace.Add(new TraceEvent(now, TraceKind.Claimed, g.Tenant, g.Job, g.Count));
                }
                claims += taken.Count;
                maybeWork = taken.Count == free;
            }
            if (t.Ticks % TimeSpan.FromSeconds(30).Ticks == 0)
            {
                timeline.Add((t.TotalMinutes, new Dictionary<string, long>(completed, StringComparer.Ordinal)));
            }
        }
        return new SimResult(scenario, policy, trace, names, weights, Epoch.UtcDateTime, (Epoch + scenario.Duration).UtcDateTime,
            timeline, wall.Elapsed, claims, calendar);
    }

    /// <summary>Consecutive items of one job, as one trace event (the trace keeps the claim order).</summary>
    private static IEnumerable<(long Tenant, long Job, int Count)> Runs(IEnumerable<TakenItem> items)
    {
        (long Tenant, long Job, int Count)? run = null;
        foreach (var i in items)
        {
            if (run is { } r && r.Job == i.JobId)
            {
                run = (r.Tenant, r.Job, r.Count + 1);
                continue;
            }
            if (run is { } done)
            {
                yield return done;
            }
            run = (i.TenantId, i.JobId, 1);
        }
        if (run is { } last)
        {
            yield return last;
        }
    }

    /// <summary>A closed job of <paramref name="items"/> items on one document, placed in the ordering by the real code.</summary>
    private static async Task<long> SubmitAsync(MySqlDataSource db, OrderingLanes lanes, long tenantId, int items, DateTime now, CancellationToken ct)
    {
        return await Retry.OnDeadlockAsync(async c =>
        {
            await using var conn = await db.OpenConnectionAsync(c);
            await using var tx = await conn.BeginReadCommittedAsync(c);
            var job = await conn.ExecuteScalarAsync<long>(new CommandDefinition(SimulationSql.InsertJob,
                new { TenantId = tenantId, Name = "sim", Items = items, Now = now }, tx, cancellationToken: c));
            var doc = await conn.ExecuteScalarAsync<long>(new CommandDefinition(SimulationSql.InsertDocument,
                new { JobId = job, TenantId = tenantId, Sha = new byte[32], Now = now }, tx, cancellationToken: c));
            await conn.ExecuteAsync(new CommandDefinition(SimulationSql.InsertItems,
                new { JobId = job, DocumentId = doc, Items = items, Now = now }, tx, cancellationToken: c));
            await lanes.PlaceAsync(conn, tx, job, Tasks, c);
            await tx.CommitAsync(c);
            return job;
        }, ct);
    }
}

/// <summary>Simulator-only policy: the oldest job first (job id), whatever its ordering value. A plain FIFO queue.</summary>
public sealed class FifoLaneSelector : ILaneSelector
{
    public async Task<IReadOnlyList<Lane>> SelectAsync(MySqlConnection conn, LaneQuery query, CancellationToken ct) =>
        (await conn.QueryAsync<(long JobId, string Task, long TenantId, long Value)>(new CommandDefinition(SimulationSql.FifoLanes,
            new { query.Now, query.Limit }, cancellationToken: ct))).Select(r => new Lane(r.JobId, r.Task, r.TenantId, r.Value)).ToList();

    public void Claimed(long tenantId, int count)
    {
    }

    public double? TurnOf(long tenantId) => null;

    public bool TakesTurns => false;
}
