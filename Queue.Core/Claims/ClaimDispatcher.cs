using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Queue.Core.Data;
using Queue.Core.Hosting;

namespace Queue.Core.Claims;

/// <summary>
/// Groups concurrent /next calls into one claim transaction, and for a busy task filter claims ahead into memory
/// under a short reservation and answers /next from there with no transaction (<see cref="ClaimOptions.Prefetch"/>).
/// A lease always goes to exactly one caller: a reserved item leaves the buffer once, to one caller, under the
/// reservation's token, and its lease is written down after the answer (<see cref="HandoutLog"/>); an item taken by a
/// transaction is written with the caller's own token; items whose caller left before the answer are given back. The
/// transaction itself is <see cref="ClaimEngine"/>'s; this class only decides who gets what. See docs/DESIGN.md
/// "Claims" and "Handouts from memory".
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
    private readonly HandoutLog handouts;
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
        HandoutLog handouts, BackgroundWork host, ILogger<ClaimDispatcher> logger)
    {
        this.engine = engine;
        this.handouts = handouts;
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
        if (HandOut(request) is { } ready)
        {
            return ready;
        }
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
        var now = clock.GetUtcNow().UtcDateTime;
        var (groups, served, stale) = ServeFromBuffers(batch, now);
        var giveBack = new List<TakenItem>();
        foreach (var (w, items) in served)
        {
            if (!Answer(w, items))
            {
                giveBack.AddRange(items);
            }
        }
        IReadOnlyList<TakenItem>[] outcomes;
        try
        {
            // Stale reservations go back before the transaction, in this flush: claims run one flush at a time, so the
            // transaction below (and every later one) can take them again, and no caller is told "nothing" while they
            // are on their way back.
            await leases.ReleaseAsync(stale, CancellationToken.None);
            if (groups.Count == 0)
            {
                await leases.ReleaseAsync(giveBack, CancellationToken.None);
                return;
            }
            outcomes = await engine.ClaimAsync(groups.Select(g => g.Claim.Order(now, options.Value)).ToList(), CancellationToken.None);
        }
        catch (Exception ex)
        {
            Settle(groups, failed: true);
            foreach (var w in groups.SelectMany(g => g.Waiters))
            {
                if (Interlocked.CompareExchange(ref w.State, Assigned, Pending) == Pending)
                {
                    w.Result.TrySetException(ex);
                }
            }
            throw;
        }
        for (var i = 0; i < groups.Count; i++)
        {
            groups[i].Claim.Share(outcomes[i]);
        }
        var requeued = Settle(groups, failed: false);
        foreach (var g in groups)
        {
            for (var i = 0; i < g.Waiters.Count; i++)
            {
                var w = g.Waiters[i];
                if (!requeued.Contains(w) && !Answer(w, g.Claim.Results[i]))
                {
                    giveBack.AddRange(g.Claim.Results[i]);
                }
            }
        }
        await leases.ReleaseAsync(giveBack, CancellationToken.None);
    }

    /// <summary>Gives <paramref name="items"/> to <paramref name="w"/>'s caller; false when the caller already left.</summary>
    private bool Answer(Waiter w, IReadOnlyList<TakenItem> items)
    {
        if (Interlocked.CompareExchange(ref w.State, Assigned, Pending) != Pending)
        {
            return false;
        }
        CountClaimed(w.Request.Worker, items);
        w.Result.TrySetResult(items);
        return true;
    }

    private void CountClaimed(string? worker, IReadOnlyList<TakenItem> items)
    {
        foreach (var t in items.GroupBy(t => t.TenantId))
        {
            stats.Claimed(t.Key, worker, t.Count());
        }
    }

    /// <summary>
    /// A flush of <paramref name="ahead"/>'s filter with no caller (it refills the buffer and gives back what went
    /// stale), unless one is queued already: at most one per filter, so it is queued without the callers' bound.
    /// Under <see cref="gate"/>.
    /// </summary>
    private static Waiter? RefillOnce(ClaimAhead ahead)
    {
        if (ahead.RefillQueued)
        {
            return null;
        }
        ahead.RefillQueued = true;
        return new Waiter(new ClaimRequest(null, ahead.Tasks, 0, 0)) { Refill = true };
    }

    /// <summary>
    /// Claimed-ahead items first, handed out as /next's own path does (<see cref="TakeFresh"/>): they were at the head
    /// of the order when they were taken. The callers left over, and the refills, go to the transaction, as one
    /// <see cref="Group"/> per task filter. Also decides how much each filter claims ahead this time: what it handed
    /// out since its last flush plus what this flush is asked for, twice over while the buffer is being served from
    /// (so a refill lands before it runs dry), and nothing for a filter that is not busy.
    /// </summary>
    private (List<Group> Groups, List<(Waiter Waiter, List<TakenItem> Items)> Served, List<TakenItem> Stale) ServeFromBuffers(List<Waiter> batch, DateTime now)
    {
        var o = options.Value;
        var groups = new List<Group>();
        var served = new List<(Waiter, List<TakenItem>)>();
        var stale = new List<TakenItem>();
        lock (gate)
        {
            var tick = Environment.TickCount64;
            foreach (var byKey in batch.GroupBy(w => w.Request.Key, StringComparer.Ordinal))
            {
                var ahead = Ahead(byKey.Key, byKey.First().Request.Tasks);
                ahead.RefillQueued = false;
                DropStale(ahead, tick);
                stale.AddRange(ahead.Stale);
                ahead.Stale.Clear();
                var left = new List<Waiter>();
                var want = 0;
                foreach (var w in byKey)
                {
                    want += w.Request.Max;
                    if (w.Refill || Volatile.Read(ref w.State) != Pending)
                    {
                        continue;
                    }
                    if (TakeFresh(ahead, w.Request, tick, now) is { } items)
                    {
                        served.Add((w, items));
                    }
                    else
                    {
                        left.Add(w);
                    }
                }
                var demand = want + ahead.HandedOut;
                var target = o.Prefetch == 0 || !ahead.Busy(tick, o) ? 0
                    : Math.Min(o.Prefetch, ahead.HandedOut > 0 ? 2 * demand : Math.Min(ahead.LastDemand, demand));
                ahead.Target = target;
                ahead.LastDemand = demand;
                ahead.HandedOut = 0;
                ahead.LastFlush = tick;
                var surplus = Math.Max(0, target - ahead.Buffer.Count);
                if (left.Count > 0 || surplus > 0)
                {
                    ahead.InFlight++;
                    groups.Add(new Group(byKey.Key, ahead.Tasks, left, surplus));
                }
            }
        }
        return (groups, served, stale);
    }

    /// <summary>
    /// Up to <paramref name="request"/>'s max fresh items from <paramref name="ahead"/>'s buffer, as the caller's
    /// leases, or null when it has none. The leases are written down after the answer (<see cref="HandoutLog"/>).
    /// Under <see cref="gate"/>.
    /// </summary>
    private List<TakenItem>? TakeFresh(ClaimAhead ahead, ClaimRequest request, long tick, DateTime now)
    {
        List<TakenItem>? given = null;
        DropStale(ahead, tick);
        while ((given?.Count ?? 0) < request.Max && ahead.Buffer.TryDequeue(out var b))
        {
            (given ??= []).Add(b.Item with { Attempt = b.Item.Attempt + 1, Until = now.AddSeconds(request.LeaseSeconds), Reservation = false });
        }
        if (given is not null)
        {
            ahead.HandedOut += given.Count;
            foreach (var item in given)
            {
                handouts.Add(item, request.Worker);
            }
        }
        return given;
    }

    /// <summary>
    /// Moves the items held past <see cref="ClaimOptions.PrefetchHoldMilliseconds"/> (the buffer is oldest first) to
    /// <see cref="ClaimAhead.Stale"/>, for the next flush of the filter to give back. Under <see cref="gate"/>.
    /// </summary>
    private void DropStale(ClaimAhead ahead, long tick)
    {
        while (ahead.Buffer.TryPeek(out var b) && tick - b.At >= options.Value.PrefetchHoldMilliseconds)
        {
            ahead.Stale.Add(ahead.Buffer.Dequeue().Item);
        }
    }

    /// <summary>
    /// Buffers what was claimed ahead, and serves again the callers who got nothing while this process holds items of
    /// their filter (buffered, or being claimed by a concurrent flush): those are claimable by no one else, so "nothing
    /// for you" would be wrong. After a failed transaction (<paramref name="failed"/>) only the bookkeeping is undone.
    /// </summary>
    private HashSet<Waiter> Settle(List<Group> groups, bool failed)
    {
        var requeued = new HashSet<Waiter>();
        lock (gate)
        {
            var tick = Environment.TickCount64;
            foreach (var g in groups)
            {
                var ahead = Ahead(g.Claim.Key, g.Claim.Tasks);
                ahead.InFlight--;
                if (failed)
                {
                    continue;
                }
                foreach (var b in g.Claim.NewBuffer)
                {
                    ahead.Buffer.Enqueue((b, tick));
                }
                for (var i = 0; i < g.Waiters.Count; i++)
                {
                    var w = g.Waiters[i];
                    if (g.Claim.Results[i].Count == 0 && w.Requeues < MaxRequeues && (ahead.Buffer.Count > 0 || ahead.Stale.Count > 0 || ahead.InFlight > 0))
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

    /// <summary>
    /// Has claimed-ahead items that waited longer than the hold time given back, so the buffer never serves a stale
    /// order for long: through the claim queue, by a flush of their filter (<see cref="FlushAsync"/>), so that a give-back
    /// never runs beside a claim that would then find those items neither buffered nor claimable. At shutdown
    /// (<paramref name="all"/>) everything buffered goes back at once.
    /// </summary>
    public async Task ReleaseStaleAsync(bool all, CancellationToken ct)
    {
        var hold = options.Value.PrefetchHoldMilliseconds;
        var back = new List<TakenItem>();
        var tidy = new List<Waiter>();
        lock (gate)
        {
            var tick = Environment.TickCount64;
            foreach (var ahead in aheads.Values)
            {
                if (all)
                {
                    back.AddRange(ahead.Stale);
                    ahead.Stale.Clear();
                    back.AddRange(ahead.Buffer.Select(b => b.Item));
                    ahead.Buffer.Clear();
                    continue;
                }
                DropStale(ahead, tick);
                if (ahead.Stale.Count > 0 && RefillOnce(ahead) is { } refill)
                {
                    tidy.Add(refill);
                }
                if (ahead.Buffer.Count == 0 && tick - ahead.LastFlush >= hold)
                {
                    ahead.LastDemand = 0; // idle filter: stop claiming ahead for it
                }
            }
        }
        foreach (var w in tidy)
        {
            queue.Requeue(w);
        }
        await leases.ReleaseAsync(back, ct);
    }

    private ClaimAhead Ahead(string key, IReadOnlyList<string> tasks)
    {
        if (!aheads.TryGetValue(key, out var ahead))
        {
            ahead = new ClaimAhead(tasks);
            aheads[key] = ahead;
        }
        return ahead;
    }

    /// <summary>
    /// Serves <paramref name="request"/> from the claim-ahead buffer without a transaction (<see cref="TakeFresh"/>),
    /// and queues a refill once the buffer is half spent. Null when the buffer has nothing fresh: the caller joins the
    /// next claim transaction. docs/DESIGN.md "Handouts from memory".
    /// </summary>
    private List<TakenItem>? HandOut(ClaimRequest request)
    {
        if (options.Value.Prefetch == 0)
        {
            return null;
        }
        List<TakenItem>? given;
        Waiter? refill = null;
        lock (gate)
        {
            var tick = Environment.TickCount64;
            var ahead = Ahead(request.Key, request.Tasks);
            ahead.Called(tick);
            given = TakeFresh(ahead, request, tick, clock.GetUtcNow().UtcDateTime);
            if (given is null)
            {
                return null;
            }
            if (ahead.InFlight == 0 && ahead.Target > 0 && ahead.Buffer.Count * 2 <= ahead.Target)
            {
                refill = RefillOnce(ahead);
            }
        }
        CountClaimed(request.Worker, given);
        if (refill is not null)
        {
            queue.Requeue(refill);
        }
        return given;
    }

    [LoggerMessage(EventId = 3001, Level = LogLevel.Warning, Message = "A claim transaction for {Count} callers failed")]
    private static partial void LogFlushFailed(ILogger logger, Exception exception, int count);

    private sealed class Waiter(ClaimRequest request)
    {
        public readonly ClaimRequest Request = request;
        public readonly TaskCompletionSource<IReadOnlyList<TakenItem>> Result = new(TaskCreationOptions.RunContinuationsAsynchronously);
        public int State;
        public int Requeues;

        /// <summary>No caller: a transaction queued only to refill the buffer (its request asks for nothing).</summary>
        public bool Refill { get; init; }
    }

    /// <summary>One task filter's callers left for the transaction, and what it claims ahead for the buffer.</summary>
    private sealed class Group(string key, IReadOnlyList<string> tasks, List<Waiter> waiters, int surplus)
    {
        public List<Waiter> Waiters { get; } = waiters;

        public ClaimGroup Claim { get; } = new(key, tasks, waiters.ConvertAll(w => w.Request), surplus);
    }

    /// <summary>One task filter's claim-ahead state in this process.</summary>
    private sealed class ClaimAhead(IReadOnlyList<string> tasks)
    {
        public readonly Queue<(TakenItem Item, long At)> Buffer = new();

        /// <summary>Reservations held past the hold time, given back by the filter's next flush.</summary>
        public readonly List<TakenItem> Stale = [];

        public readonly IReadOnlyList<string> Tasks = tasks;
        public int LastDemand;
        public int InFlight;
        public long LastFlush;

        /// <summary>Items handed out from <see cref="Buffer"/> since the last flush.</summary>
        public int HandedOut;

        /// <summary>What the last flush meant to hold; a refill is queued once the buffer is down to half of it.</summary>
        public int Target;

        public bool RefillQueued;
        private long second;
        private int thisSecond;
        private int lastSecond;

        /// <summary>Counts a /next of this filter, per second of the process's clock.</summary>
        public void Called(long tick)
        {
            Roll(tick);
            thisSecond++;
        }

        /// <summary>
        /// Claims ahead only for a filter polled at <see cref="ClaimOptions.PrefetchAboveCallsPerSecond"/> or more:
        /// a worker now and then is served by a transaction of its own, and sees the order as it is at that moment.
        /// </summary>
        public bool Busy(long tick, ClaimOptions o)
        {
            Roll(tick);
            return Math.Max(thisSecond, lastSecond) >= o.PrefetchAboveCallsPerSecond;
        }

        private void Roll(long tick)
        {
            var now = tick / 1000;
            if (now != second)
            {
                lastSecond = now == second + 1 ? thisSecond : 0;
                thisSecond = 0;
                second = now;
            }
        }
    }
}
