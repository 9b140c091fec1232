using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Queue.Core.Data;
using Queue.Core.Hosting;

namespace Queue.Core.Claims;

/// <summary>
/// Groups concurrent /next calls into one claim transaction (and, when <see cref="ClaimOptions.Prefetch"/> is on,
/// claims ahead into memory under a short reservation). A lease always goes to exactly one caller: an item is written
/// with the caller's own token in the transaction that hands it out, and items whose caller left before the answer
/// are given back. The transaction itself is <see cref="ClaimEngine"/>'s; this class only decides who gets what.
/// See docs/DESIGN.md "Claims".
/// </summary>
public sealed partial class ClaimDispatcher
{
    private const int Pending = 0;
    private const int Assigned = 1;
    private const int Abandoned = 2;

    /// <summary>How often a caller who got nothing while this process holds or is claiming items for its filter is served again.</summary>
    private const int MaxRequeues = 3;

    private readonly ClaimEngine engine;
    private readonly LeaseService leases;
    private readonly TimeProvider clock;
    private readonly IOptions<ClaimOptions> options;
    private readonly WorkStats stats;
    private readonly GroupCommitQueue<Waiter> queue;
    private readonly Lock gate = new();
    private readonly Dictionary<string, ClaimAhead> aheads = new(StringComparer.Ordinal);
    private readonly CallerPeak callers = new();

    /// <summary>
    /// A transaction gathers only up to this many callers. Past it the per-transaction cost is spread thin already, and
    /// waiting for more only idles the box: drains at 64 workers (batches of about 32) lost 7 % gathering for all 64.
    /// </summary>
    private const int GatherBelow = 16;

    public ClaimDispatcher(ClaimEngine engine, LeaseService leases, TimeProvider clock, IOptions<ClaimOptions> options, WorkStats stats,
        BackgroundWork host, ILogger<ClaimDispatcher> logger)
    {
        this.engine = engine;
        this.leases = leases;
        this.clock = clock;
        this.options = options;
        this.stats = stats;
        var o = options.Value;
        queue = new(host, "claims", o.MaxPending, o.MaxConcurrentFlushes, p => Math.Min(p.Count, o.MaxBatch), FlushAsync,
            (ex, n) => LogFlushFailed(logger, ex, n), w => Volatile.Read(ref w.State) == Abandoned);
        if (o.GatherMicroseconds > 0)
        {
            queue.GatherUpTo(() => Math.Min(callers.Peak, Math.Min(GatherBelow, o.MaxBatch)), TimeSpan.FromMicroseconds(o.GatherMicroseconds));
        }
    }

    /// <summary>Items held claimed-ahead in memory right now (all task filters).</summary>
    public int Buffered
    {
        get
        {
            lock (gate)
            {
                return aheads.Values.Sum(k => k.Buffer.Count);
            }
        }
    }

    /// <summary>Claims up to <see cref="ClaimRequest.Max"/> items; an empty answer means nothing is claimable now.</summary>
    public async Task<IReadOnlyList<TakenItem>> ClaimAsync(ClaimRequest request, CancellationToken ct)
    {
        var w = new Waiter(request);
        callers.Enter();
        try
        {
            queue.Enqueue(w);
            return await w.Result.Task.WaitAsync(TimeSpan.FromMilliseconds(options.Value.DatabaseWaitMilliseconds), ct);
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
                await leases.ReleaseAsync(items, CancellationToken.None);
                throw;
            }
            return items;
        }
        finally
        {
            callers.Leave();
        }
    }

    private async Task FlushAsync(List<Waiter> batch)
    {
        var groups = batch.GroupBy(w => w.Request.Key, StringComparer.Ordinal).Select(g => new Group(g.Key, g.ToList())).ToList();
        var stale = TakeFromBuffers(groups);
        var now = clock.GetUtcNow().UtcDateTime;
        ClaimOutcome[] outcomes;
        try
        {
            outcomes = await engine.ClaimAsync(groups.Select(g => g.Claim.Order(now, options.Value)).ToList(), CancellationToken.None);
        }
        catch (Exception ex)
        {
            PutBack(groups);
            foreach (var w in batch)
            {
                if (Interlocked.CompareExchange(ref w.State, Assigned, Pending) == Pending)
                {
                    w.Result.TrySetException(ex);
                }
            }
            throw;
        }
        var giveBack = new List<TakenItem>(stale);
        for (var i = 0; i < groups.Count; i++)
        {
            groups[i].Claim.Share(outcomes[i]);
        }
        var requeued = Settle(groups);
        foreach (var g in groups)
        {
            for (var i = 0; i < g.Waiters.Count; i++)
            {
                var w = g.Waiters[i];
                if (requeued.Contains(w))
                {
                    continue;
                }
                if (Interlocked.CompareExchange(ref w.State, Assigned, Pending) == Pending)
                {
                    foreach (var t in g.Claim.Results[i].GroupBy(t => t.TenantId))
                    {
                        stats.Claimed(t.Key, w.Request.Worker, t.Count());
                    }
                    w.Result.TrySetResult(g.Claim.Results[i]);
                }
                else
                {
                    giveBack.AddRange(g.Claim.Results[i]);
                }
            }
        }
        await leases.ReleaseAsync(giveBack, CancellationToken.None);
    }

    /// <summary>
    /// Claimed-ahead items first: they were at the head of the order when they were taken. Returns the items that
    /// waited past the hold time, to give back. Also decides how much each filter claims ahead this time: about as much
    /// as its previous flush was asked for, enough for the next wave of callers and nothing for a filter nobody asks for.
    /// </summary>
    private List<TakenItem> TakeFromBuffers(List<Group> groups)
    {
        var o = options.Value;
        var stale = new List<TakenItem>();
        lock (gate)
        {
            var tick = Environment.TickCount64;
            foreach (var g in groups)
            {
                var ahead = Ahead(g.Claim.Key);
                ahead.InFlight++;
                var want = g.Waiters.Sum(w => w.Request.Max);
                while (g.Claim.FromBuffer.Count < want && ahead.Buffer.TryDequeue(out var b))
                {
                    (tick - b.At < o.PrefetchHoldMilliseconds ? g.Claim.FromBuffer : stale).Add(b.Item);
                }
                g.Claim.Surplus = o.Prefetch == 0 ? 0 : Math.Max(0, Math.Min(o.Prefetch, ahead.LastDemand) - ahead.Buffer.Count);
                ahead.LastDemand = want;
                ahead.LastFlush = tick;
            }
        }
        return stale;
    }

    /// <summary>The transaction failed: the claimed-ahead items it would have handed out are still reserved, so they go back.</summary>
    private void PutBack(List<Group> groups)
    {
        lock (gate)
        {
            foreach (var g in groups)
            {
                var ahead = Ahead(g.Claim.Key);
                ahead.InFlight--;
                foreach (var b in g.Claim.FromBuffer)
                {
                    ahead.Buffer.Enqueue((b, Environment.TickCount64));
                }
            }
        }
    }

    /// <summary>
    /// Buffers what was claimed ahead, and serves again the callers who got nothing while this process holds items of
    /// their filter (buffered, or being claimed by a concurrent flush): those are claimable by no one else, so "nothing
    /// for you" would be wrong.
    /// </summary>
    private HashSet<Waiter> Settle(List<Group> groups)
    {
        var requeued = new HashSet<Waiter>();
        lock (gate)
        {
            var tick = Environment.TickCount64;
            foreach (var g in groups)
            {
                var ahead = Ahead(g.Claim.Key);
                ahead.InFlight--;
                foreach (var b in g.Claim.NewBuffer)
                {
                    ahead.Buffer.Enqueue((b, tick));
                }
                for (var i = 0; i < g.Waiters.Count; i++)
                {
                    var w = g.Waiters[i];
                    if (g.Claim.Results[i].Count == 0 && w.Requeues < MaxRequeues && (ahead.Buffer.Count > 0 || ahead.InFlight > 0))
                    {
                        w.Requeues++;
                        requeued.Add(w);
                    }
                }
            }
        }
        foreach (var w in requeued)
        {
            queue.Requeue(w);
        }
        return requeued;
    }

    /// <summary>Gives back claimed-ahead items that waited longer than the hold time, so the buffer never serves a stale order.</summary>
    public async Task ReleaseStaleAsync(bool all, CancellationToken ct)
    {
        var hold = options.Value.PrefetchHoldMilliseconds;
        var stale = new List<TakenItem>();
        lock (gate)
        {
            var tick = Environment.TickCount64;
            foreach (var ahead in aheads.Values)
            {
                while (ahead.Buffer.TryPeek(out var b) && (all || tick - b.At >= hold))
                {
                    stale.Add(ahead.Buffer.Dequeue().Item);
                }
                if (ahead.Buffer.Count == 0 && tick - ahead.LastFlush >= hold)
                {
                    ahead.LastDemand = 0; // idle filter: stop claiming ahead for it
                }
            }
        }
        await leases.ReleaseAsync(stale, ct);
    }

    private ClaimAhead Ahead(string key)
    {
        if (!aheads.TryGetValue(key, out var ahead))
        {
            ahead = new ClaimAhead();
            aheads[key] = ahead;
        }
        return ahead;
    }

    [LoggerMessage(EventId = 3001, Level = LogLevel.Warning, Message = "A claim transaction for {Count} callers failed")]
    private static partial void LogFlushFailed(ILogger logger, Exception exception, int count);

    private sealed class Waiter(ClaimRequest request)
    {
        public readonly ClaimRequest Request = request;
        public readonly TaskCompletionSource<IReadOnlyList<TakenItem>> Result = new(TaskCreationOptions.RunContinuationsAsynchronously);
        public int State;
        public int Requeues;
    }

    private sealed class Group(string key, List<Waiter> waiters)
    {
        public List<Waiter> Waiters { get; } = waiters;

        public ClaimGroup Claim { get; } = new(key, waiters.ConvertAll(w => w.Request));
    }

    /// <summary>One task filter's claim-ahead state in this process.</summary>
    private sealed class ClaimAhead
    {
        public readonly Queue<(TakenItem Item, long At)> Buffer = new();
        public int LastDemand;
        public int InFlight;
        public long LastFlush;
    }
}
