using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Data;

namespace Queue.Core.Claims;

/// <summary>A worker's /next, validated.</summary>
/// <param name="Tasks">Distinct task names; empty accepts any task.</param>
public sealed record ClaimRequest(string? Worker, IReadOnlyList<string> Tasks, int Max, int LeaseSeconds)
{
    /// <summary>Requests with the same key can share claimed-ahead items and one pass over the lanes.</summary>
    public string Key { get; } = Tasks.Count == 0 ? "" : string.Join(',', Tasks.Order(StringComparer.Ordinal));
}

/// <summary>The database is too slow or too busy right now: answer 503 with Retry-After rather than queue without limit.</summary>
public sealed class ServiceBusyException(string message) : Exception(message);

/// <summary>
/// Groups concurrent /next calls into one claim transaction (and, when <see cref="ClaimOptions.Prefetch"/> is on,
/// claims ahead into memory under a short reservation). A lease always goes to exactly one caller: an item is written
/// with the caller's own token in the transaction that hands it out, and items whose caller left before the answer
/// are given back. See docs/DESIGN.md "Claims".
/// </summary>
public sealed partial class ClaimDispatcher(ClaimEngine engine, MySqlDataSource db, TimeProvider clock, IOptions<ClaimOptions> options,
    WorkStats stats, ILogger<ClaimDispatcher> logger)
{
    private const int Pending = 0;
    private const int Assigned = 1;
    private const int Abandoned = 2;

    private readonly Lock gate = new();
    private readonly List<Waiter> pending = [];
    private readonly Dictionary<string, KeyState> keys = new(StringComparer.Ordinal);
    private int flushing;

    /// <summary>Items held claimed-ahead in memory right now (all task filters).</summary>
    public int Buffered
    {
        get
        {
            lock (gate)
            {
                return keys.Values.Sum(k => k.Buffer.Count);
            }
        }
    }

    /// <summary>Claims up to <see cref="ClaimRequest.Max"/> items; an empty answer means nothing is claimable now.</summary>
    public async Task<IReadOnlyList<TakenItem>> ClaimAsync(ClaimRequest request, CancellationToken ct)
    {
        var o = options.Value;
        var w = new Waiter(request);
        bool start;
        lock (gate)
        {
            start = GroupCommit.Enqueue(pending, w, ref flushing, o, "claims");
        }
        if (start)
        {
            _ = Task.Run(FlushLoopAsync, CancellationToken.None);
        }
        try
        {
            return await w.Result.Task.WaitAsync(TimeSpan.FromMilliseconds(o.DatabaseWaitMilliseconds), ct);
        }
        catch (Exception ex) when (ex is TimeoutException or OperationCanceledException)
        {
            if (Interlocked.CompareExchange(ref w.State, Abandoned, Pending) == Pending)
            {
                if (ex is TimeoutException)
                {
                    throw new ServiceBusyException("the database did not answer the claim in time");
                }
                throw;
            }
            // The flush handed us items just as we gave up: they are ours, so give them back if our caller left.
            var items = await w.Result.Task;
            if (ct.IsCancellationRequested)
            {
                await engine.ReleaseAsync(items, CancellationToken.None);
                throw;
            }
            return items;
        }
    }

    private async Task FlushLoopAsync()
    {
        var o = options.Value;
        while (true)
        {
            List<Waiter> batch;
            lock (gate)
            {
                pending.RemoveAll(p => Volatile.Read(ref p.State) == Abandoned);
                if (pending.Count == 0)
                {
                    flushing--;
                    return;
                }
                var n = Math.Min(pending.Count, o.MaxBatch);
                batch = pending.GetRange(0, n);
                pending.RemoveRange(0, n);
            }
            try
            {
                await FlushAsync(batch, o);
            }
            catch (Exception ex)
            {
                LogFlushFailed(logger, ex, batch.Count);
                foreach (var w in batch)
                {
                    if (Interlocked.CompareExchange(ref w.State, Assigned, Pending) == Pending)
                    {
                        w.Result.TrySetException(ex);
                    }
                }
            }
        }
    }

    private async Task FlushAsync(List<Waiter> batch, ClaimOptions o)
    {
        var groups = batch.GroupBy(w => w.Request.Key, StringComparer.Ordinal).Select(g => new Group(g.Key, g.ToList())).ToList();
        lock (gate)
        {
            foreach (var g in groups)
            {
                State(g.Key).InFlight++;
            }
            // Claimed-ahead items first: they were at the head of the order when they were taken.
            var tick = Environment.TickCount64;
            foreach (var g in groups)
            {
                var ks = State(g.Key);
                var want = g.Waiters.Sum(w => w.Request.Max);
                while (g.FromBuffer.Count < want && ks.Buffer.TryDequeue(out var b))
                {
                    if (tick - b.At < o.PrefetchHoldMilliseconds)
                    {
                        g.FromBuffer.Add(b.Item);
                    }
                    else
                    {
                        g.Stale.Add(b.Item);
                    }
                }
                // Claim ahead about as much as the previous flush of this filter was asked for: enough for the next
                // wave of callers, and nothing for a filter nobody asks for any more.
                g.Surplus = o.Prefetch == 0 ? 0 : Math.Max(0, Math.Min(o.Prefetch, ks.LastDemand) - ks.Buffer.Count);
                ks.LastDemand = want;
                ks.LastFlush = tick;
            }
        }
        var stale = groups.SelectMany(g => g.Stale).ToList();
        try
        {
            await Retry.OnDeadlockAsync(async c =>
            {
                var now = clock.GetUtcNow().UtcDateTime;
                await using var conn = await db.OpenConnectionAsync(c);
                await using var tx = await conn.BeginReadCommittedAsync(c);
                foreach (var g in groups)
                {
                    await FillAsync(conn, tx, g, now, c);
                }
                await tx.CommitAsync(c);
                return true;
            }, CancellationToken.None);
        }
        catch
        {
            lock (gate)
            {
                foreach (var g in groups)
                {
                    var ks = State(g.Key);
                    ks.InFlight--;
                    foreach (var b in g.FromBuffer)
                    {
                        ks.Buffer.Enqueue((b, Environment.TickCount64));
                    }
                }
            }
            throw;
        }
        var giveBack = new List<TakenItem>(stale);
        var requeued = new HashSet<Waiter>();
        lock (gate)
        {
            var tick = Environment.TickCount64;
            foreach (var g in groups)
            {
                var ks = State(g.Key);
                ks.InFlight--;
                foreach (var b in g.NewBuffer)
                {
                    ks.Buffer.Enqueue((b, tick));
                }
                // Items claimed ahead by this process (buffered, or being claimed by a concurrent flush) are not
                // claimable by anyone else, so "nothing for you" would be wrong: serve these callers again instead.
                for (var i = 0; i < g.Waiters.Count; i++)
                {
                    var w = g.Waiters[i];
                    if (g.Results[i].Count == 0 && w.Requeues < 3 && (ks.Buffer.Count > 0 || ks.InFlight > 0))
                    {
                        w.Requeues++;
                        requeued.Add(w);
                        pending.Add(w);
                    }
                }
            }
        }
        foreach (var g in groups)
        {
            for (var i = 0; i < g.Waiters.Count; i++)
            {
                var w = g.Waiters[i];
                var items = g.Results[i];
                if (requeued.Contains(w))
                {
                    continue;
                }
                if (Interlocked.CompareExchange(ref w.State, Assigned, Pending) == Pending)
                {
                    foreach (var t in items.GroupBy(t => t.TenantId))
                    {
                        stats.Claimed(t.Key, w.Request.Worker, t.Count());
                    }
                    w.Result.TrySetResult(items);
                }
                else
                {
                    giveBack.AddRange(items);
                }
            }
        }
        if (giveBack.Count > 0)
        {
            await engine.ReleaseAsync(giveBack, CancellationToken.None);
        }
    }

    /// <summary>Serves one task filter's callers inside the flush transaction: claimed-ahead items, then fresh claims.</summary>
    private async Task FillAsync(MySqlConnection conn, MySqlTransaction tx, Group g, DateTime now, CancellationToken ct)
    {
        g.Results = g.Waiters.Select(_ => new List<TakenItem>()).ToArray();
        g.NewBuffer.Clear();
        var need = g.Waiters.Select(w => w.Request.Max).ToArray();
        var handouts = new List<(TakenItem Item, string? Worker, DateTime Expires)>();
        var owners = new List<int>();
        var wi = 0;
        foreach (var item in g.FromBuffer)
        {
            while (need[wi] == 0)
            {
                wi++;
            }
            var r = g.Waiters[wi].Request;
            handouts.Add((item, r.Worker, now.AddSeconds(r.LeaseSeconds)));
            owners.Add(wi);
            need[wi]--;
        }
        var ok = await ClaimEngine.ConfirmAsync(conn, tx, handouts, now, ct);
        for (var k = 0; k < handouts.Count; k++)
        {
            if (ok[k])
            {
                var (item, _, expires) = handouts[k];
                g.Results[owners[k]].Add(item with { Attempt = item.Attempt + 1, Until = expires, Reservation = false });
            }
            else
            {
                need[owners[k]]++; // the reservation was lost (blocked, cancelled, or expired): claim afresh instead
            }
        }
        var slots = new List<ClaimSlot>();
        owners.Clear();
        for (var i = 0; i < g.Waiters.Count; i++)
        {
            var r = g.Waiters[i].Request;
            for (var k = 0; k < need[i]; k++)
            {
                slots.Add(new ClaimSlot(r.Worker, now.AddSeconds(r.LeaseSeconds), Reservation: false));
                owners.Add(i);
            }
        }
        var reservedUntil = now.AddSeconds(options.Value.ReservationSeconds);
        for (var k = 0; k < g.Surplus; k++)
        {
            slots.Add(new ClaimSlot(null, reservedUntil, Reservation: true));
        }
        var taken = await engine.TakeAsync(conn, tx, g.Waiters[0].Request.Tasks, slots, now, ct);
        for (var k = 0; k < taken.Count; k++)
        {
            if (k < owners.Count)
            {
                g.Results[owners[k]].Add(taken[k]);
            }
            else
            {
                g.NewBuffer.Add(taken[k]);
            }
        }
    }

    /// <summary>Gives back claimed-ahead items that waited longer than the hold time, so the buffer never serves a stale order.</summary>
    public async Task ReleaseStaleAsync(bool all, CancellationToken ct)
    {
        var hold = options.Value.PrefetchHoldMilliseconds;
        var stale = new List<TakenItem>();
        lock (gate)
        {
            var tick = Environment.TickCount64;
            foreach (var ks in keys.Values)
            {
                while (ks.Buffer.TryPeek(out var b) && (all || tick - b.At >= hold))
                {
                    stale.Add(ks.Buffer.Dequeue().Item);
                }
                if (ks.Buffer.Count == 0 && tick - ks.LastFlush >= hold)
                {
                    ks.LastDemand = 0; // idle filter: stop claiming ahead for it
                }
            }
        }
        await engine.ReleaseAsync(stale, ct);
    }

    private KeyState State(string key)
    {
        if (!keys.TryGetValue(key, out var ks))
        {
            ks = new KeyState();
            keys[key] = ks;
        }
        return ks;
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "A claim transaction for {Count} callers failed")]
    private static partial void LogFlushFailed(ILogger logger, Exception exception, int count);

    private sealed class Waiter(ClaimRequest request)
    {
        public readonly ClaimRequest Request = request;
        public readonly TaskCompletionSource<IReadOnlyList<TakenItem>> Result = new(TaskCreationOptions.RunContinuationsAsynchronously);
        public int State;
        public int Requeues;
    }

    private sealed class KeyState
    {
        public readonly Queue<(TakenItem Item, long At)> Buffer = new();
        public int LastDemand;
        public int InFlight;
        public long LastFlush;
    }

    private sealed class Group(string key, List<Waiter> waiters)
    {
        public string Key { get; } = key;

        public List<Waiter> Waiters { get; } = waiters;

        public List<TakenItem> FromBuffer { get; } = [];

        public List<TakenItem> Stale { get; } = [];

        public List<TakenItem> NewBuffer { get; } = [];

        public int Surplus { get; set; }

        public List<TakenItem>[] Results { get; set; } = [];
    }
}
