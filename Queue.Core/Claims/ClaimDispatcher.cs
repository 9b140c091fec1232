using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Queue.Core.Data;
using Queue.Core.Hosting;
using Queue.Core.Telemetry;

namespace Queue.Core.Claims;

/// <summary>
/// Groups concurrent /next calls into one claim transaction, and for a busy task filter claims ahead into memory
/// under a short reservation and answers /next from there with no transaction (<see cref="ClaimOptions.Prefetch"/>,
/// <see cref="ClaimAheadBuffer"/>, which hands out in the policy's order). Before any answer from memory, the claim
/// epoch is read (<see cref="ClaimEpoch"/>): what was claimed before a cancel, block or override is never handed out once it answered.
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
    private readonly ILaneSelector turns;
    private readonly ClaimEpoch epochs;
    private readonly WorkSignal signal;
    private readonly ILogger<ClaimDispatcher> logger;
    private readonly GroupCommitQueue<Waiter> queue;
    private readonly Lock gate = new();
    private readonly ClaimAheadFilters aheads = new();
    private readonly CallerPeak callers = new();

    /// <summary>
    /// The callers of each filter waiting on a claim transaction right now (under <see cref="gate"/>): a job adopted
    /// meanwhile serves one of them at once (<see cref="ServeParkedAsync"/>).
    /// </summary>
    private readonly Dictionary<ClaimAheadBuffer, List<Waiter>> parked = new(ReferenceEqualityComparer.Instance);

    /// <summary>Task filters tracked at most (<see cref="ClaimAheadFilters"/>); past it a new filter is served by transactions only.</summary>
    public const int MaxFilters = ClaimAheadFilters.Max;


    /// <summary>
    /// A transaction gathers only up to this many callers. Past it the per-transaction cost is spread thin already, and
    /// waiting for more only idles the box: drains at 64 workers (batches of about 32) lost 7 % gathering for all 64.
    /// </summary>
    private const int GatherBelow = 16;

    public ClaimDispatcher(ClaimEngine engine, LeaseService leases, TimeProvider clock, IOptions<ClaimOptions> options, WorkStats stats,
        HandoutLog handouts, ILaneSelector turns, ClaimEpoch epochs, WorkSignal signal, BackgroundWork host, ILogger<ClaimDispatcher> logger)
    {
        this.engine = engine;
        this.logger = logger;
        this.turns = turns;
        this.epochs = epochs;
        this.signal = signal;
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

    /// <summary>Tests hold a flush here, right before its transaction begins, given how many callers wait on it.</summary>
    internal Func<int, Task>? BeforeTransaction { get; set; }

    private int transactionsRunning;

    /// <summary>
    /// Claim transactions past <see cref="BeforeTransaction"/> and not finished: a test that sets the hook waits for 0,
    /// then no transaction runs until it lets them go (one that began before the hook was set may otherwise take what
    /// the test creates next).
    /// </summary>
    internal int TransactionsRunning => Volatile.Read(ref transactionsRunning);

    /// <summary>
    /// Tests turn answers from memory off, so callers wait on the claim transaction a test holds whatever the buffer
    /// holds (a refill that gets through first would otherwise make the buffer trusted again).
    /// </summary>
    internal bool AnswersFromMemory { get; set; } = true;

    /// <summary>
    /// Whether <paramref name="ahead"/>'s buffer may answer: no new work was signalled (up to
    /// <paramref name="generation"/>, a <see cref="WorkSignal.Generation"/> read) since the claim that last read the
    /// database for its filter (it may wait there, ahead of what is held). Under <see cref="gate"/>.
    /// </summary>
    private bool Trusted(ClaimAheadBuffer ahead, long generation) => AnswersFromMemory && ahead.SeenSignal == generation;

    /// <summary>Items held for <paramref name="request"/>'s task filter (tests).</summary>
    internal int BufferedFor(ClaimRequest request)
    {
        lock (gate)
        {
            return aheads.TryGet(request.Key, out var ahead) ? ahead.Count : 0;
        }
    }

    /// <summary>Calls in progress for <paramref name="request"/>'s task filter (tests).</summary>
    internal int InsideFor(ClaimRequest request)
    {
        lock (gate)
        {
            return aheads.TryGet(request.Key, out var ahead) ? ahead.Inside : 0;
        }
    }

    /// <summary>Items held claimed-ahead in memory right now (all task filters).</summary>
    public int Buffered
    {
        get
        {
            lock (gate)
            {
                return aheads.Buffered;
            }
        }
    }

    /// <summary>Task filters tracked now (bounded by <see cref="MaxFilters"/>).</summary>
    public int Filters
    {
        get
        {
            lock (gate)
            {
                return aheads.Count;
            }
        }
    }

    /// <summary>Claims up to <see cref="ClaimRequest.Max"/> items; an empty answer means nothing is claimable now.</summary>
    public async Task<IReadOnlyList<TakenItem>> ClaimAsync(ClaimRequest request, CancellationToken ct)
    {
        var ahead = Enter(request, out var holding);
        try
        {
            return await ClaimEnteredAsync(request, holding, ct);
        }
        finally
        {
            ahead?.Left();
        }
    }

    /// <summary>The claim of a call <see cref="Enter"/> counted: from memory when it can, else in the next transaction.</summary>
    private async Task<IReadOnlyList<TakenItem>> ClaimEnteredAsync(ClaimRequest request, bool holding, CancellationToken ct)
    {
        var began = QueueTracing.Begin();
        var (ready, promised) = holding ? await HandOutAsync(request, ct) : default;
        if (ready is not null)
        {
            return Traced(began, request, ready);
        }
        var w = new Waiter(request) { Promised = promised };
        callers.Enter();
        try
        {
            try
            {
                queue.Enqueue(w);
            }
            catch (ServiceBusyException)
            {
                // Never queued, so no flush takes its promised turn over: it goes back now.
                ReleasePromise(w);
                throw;
            }
            return Traced(began, request, await w.Result.Task.WaitAsync(TimeSpan.FromMilliseconds(options.Value.DatabaseWaitMilliseconds), ct));
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
            return Traced(began, request, items);
        }
        finally
        {
            callers.Leave();
        }
    }

    /// <summary>
    /// A claim's first round read which tenants wait in the database: the buffer learns them now, not when the
    /// transaction settles. A flood's first claim at a phase start took 25-42 ms when the box was busy; meanwhile the
    /// workers a small job's items went to came back, found nobody else known, and took all ten of them before the
    /// flood's first handout (Jain's index 0.50 in that second). Knowing the flood, they take its turns to the
    /// database instead, and the small job's items go out one turn in two.
    /// </summary>
    /// <remarks>
    /// The buffer is trusted again from the signal generation read just before that round, not from the one its flush
    /// started after (<see cref="ServeFromBuffers"/>): the round reads afresh, so a job that committed (and signalled)
    /// in between is among the tenants it names. Trusted only from the flush's start, the buffer sent every caller to a
    /// second transaction (12 ms in a trace) while it held the items whose turn came next.
    /// </remarks>
    private FirstRoundWatch FirstRound(ClaimAheadBuffer ahead)
    {
        var generation = -1L;
        return new(() => generation = signal.Generation, tenants =>
        {
            lock (gate)
            {
                ahead.SawWaiting([.. tenants], clock.GetUtcNow());
                ahead.SeenSignal = Math.Max(ahead.SeenSignal, generation);
            }
        });
    }

    private void ReleasePromise(Waiter w)
    {
        lock (gate)
        {
            w.Promised?.Release();
            w.Promised = null;
        }
    }

    /// <summary>The claim's spans, in the caller's context (its request's span is linked); a no-op when nobody listens.</summary>
    private static IReadOnlyList<TakenItem> Traced(DateTimeOffset? began, ClaimRequest request, IReadOnlyList<TakenItem> items)
    {
        QueueTracing.Claimed(began, items, request.Worker);
        return items;
    }

    private async Task FlushAsync(List<Waiter> batch)
    {
        // Read before the transaction begins: a change that committed before this read is seen by the transaction, and
        // one after it moves the epoch past the one its items are held under.
        var epoch = options.Value.Prefetch > 0 ? await epochs.ReadAsync() : 0;
        var now = clock.GetUtcNow().UtcDateTime;
        var (groups, served, stale) = ServeFromBuffers(batch, now, epoch);
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
            // Handouts not written yet whose reservation this claim could take as lapsed become leases first (a stall
            // between a handout and its write); normally there are none.
            await handouts.FlushExpiringAsync(now.AddSeconds(1), CancellationToken.None);
            if (groups.Count == 0)
            {
                await leases.ReleaseAsync(giveBack, CancellationToken.None);
                return;
            }
            Interlocked.Increment(ref transactionsRunning);
            try
            {
                if (BeforeTransaction is { } hold)
                {
                    Interlocked.Decrement(ref transactionsRunning);
                    await hold(groups.Sum(g => g.Waiters.Count));
                    Interlocked.Increment(ref transactionsRunning);
                }
                outcomes = await engine.ClaimAsync(groups.Select(g => g.Claim.Order(now, options.Value, FirstRound(g.Ahead))).ToList(), CancellationToken.None);
            }
            finally
            {
                Interlocked.Decrement(ref transactionsRunning);
            }
        }
        catch (Exception ex)
        {
            if (ex is ClaimLandedUnansweredException landed)
            {
                try
                {
                    await leases.ReleaseAsync(landed.Items, CancellationToken.None);
                }
                catch (Exception release) when (release is MySqlConnector.MySqlException or IOException or InvalidOperationException)
                {
                    // The database is out of reach again: the items come back when their leases and reservations expire.
                    LogGiveBackFailed(logger, release, landed.Items.Count);
                }
            }
            Settle(groups, failed: true, epoch);
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
        var requeued = Settle(groups, failed: false, epoch);
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
    private static Waiter? RefillOnce(ClaimAheadBuffer ahead)
    {
        if (ahead.RefillQueued)
        {
            return null;
        }
        ahead.RefillQueued = true;
        return new Waiter(new ClaimRequest(null, ahead.Tasks, 0, 0)) { Refill = true };
    }

    /// <summary>
    /// Claimed-ahead items first, handed out as /next's own path does (<see cref="TakeFresh"/>), unless the filter's
    /// buffer cannot be trusted for the policy's order right now (new work signalled since its last claim). The callers
    /// left over, and the refills, go to the transaction, as one <see cref="Group"/> per task filter. Also decides how
    /// much each filter claims ahead this time: what its callers ask for in a quarter second, and
    /// nothing for a filter that is not busy.
    /// </summary>
    private (List<Group> Groups, List<(Waiter Waiter, List<TakenItem> Items)> Served, List<TakenItem> Stale) ServeFromBuffers(List<Waiter> batch,
        DateTime now, long epoch)
    {
        var o = options.Value;
        var groups = new List<Group>();
        var served = new List<(Waiter, List<TakenItem>)>();
        var stale = new List<TakenItem>();
        var at = clock.GetUtcNow();
        var generation = signal.Generation;
        lock (gate)
        {
            foreach (var byKey in batch.GroupBy(w => w.Request.Key, StringComparer.Ordinal))
            {
                var ahead = aheads.Get(byKey.Key, byKey.First().Request.Tasks, at);
                ahead.RefillQueued = false;
                if (epoch > ahead.Epoch)
                {
                    ahead.DropAll();
                }
                // New work was signalled since the filter's last claim: this flush's transaction sees it, the buffer
                // may not hold the item that comes first.
                var trusted = Trusted(ahead, generation);
                ahead.SeenSignal = generation;
                ahead.DropStale(now);
                stale.AddRange(ahead.Stale);
                ahead.Stale.Clear();
                var left = new List<Waiter>();
                var promises = new List<(long, int)>();
                var want = 0;
                // The buffer holds items but the next one by turn is in the database: a tenant waits there.
                var diverted = false;
                foreach (var w in byKey)
                {
                    want += w.Request.Max;
                    if (w.Promised is { } p)
                    {
                        // Promised a tenant's turn on its way here (HandOutAsync): it takes that turn in this
                        // transaction, which releases the promise when it settles; one who left releases it now.
                        w.Promised = null;
                        if (ReferenceEquals(p.Ahead, ahead) && Volatile.Read(ref w.State) == Pending)
                        {
                            promises.Add((p.Tenant, p.Count));
                            diverted |= ahead.Count > 0;
                            left.Add(w);
                            continue;
                        }
                        p.Release();
                    }
                    if (w.Refill || Volatile.Read(ref w.State) != Pending)
                    {
                        continue;
                    }
                    long? inDatabase = null;
                    if (trusted && TakeFresh(ahead, w.Request, now, out inDatabase) is { } items)
                    {
                        served.Add((w, items));
                        continue;
                    }
                    diverted |= trusted && ahead.Count > 0;
                    left.Add(w);
                    if (inDatabase is { } tenant)
                    {
                        // Its transaction takes that tenant's turn: the next caller sees the turn after it.
                        ahead.Promise(tenant, w.Request.Max);
                        promises.Add((tenant, w.Request.Max));
                    }
                }
                var surplus = ahead.Plan(want, fresh: !trusted || diverted, at, o);
                if (left.Count > 0 || surplus > 0)
                {
                    ahead.InFlight++;
                    groups.Add(new Group(ahead, byKey.Key, left, surplus, promises));
                    if (left.Count > 0)
                    {
                        if (!parked.TryGetValue(ahead, out var waiting))
                        {
                            parked[ahead] = waiting = [];
                        }
                        waiting.AddRange(left);
                    }
                }
            }
        }
        return (groups, served, stale);
    }

    /// <summary>
    /// Up to <paramref name="request"/>'s max items from <paramref name="ahead"/>'s buffer in the policy's order, as the
    /// caller's leases, or null when it has none to give (<see cref="ClaimAheadBuffer.Take"/>). The leases are written
    /// down after the answer (<see cref="HandoutLog"/>). Under <see cref="gate"/>.
    /// </summary>
    private List<TakenItem>? TakeFresh(ClaimAheadBuffer ahead, ClaimRequest request, DateTime now, out long? inDatabase)
    {
        var taken = ahead.Take(request.Max, now, turns, out inDatabase);
        if (taken.Count == 0)
        {
            return null;
        }
        return taken.ConvertAll(b => LeaseOut(b, request, now));
    }

    /// <summary>
    /// A reserved item from a buffer as <paramref name="request"/>'s caller's lease, under the reservation's own token;
    /// the lease is written down after the answer (<see cref="HandoutLog"/>). Under <see cref="gate"/>.
    /// </summary>
    private TakenItem LeaseOut(TakenItem reserved, ClaimRequest request, DateTime now)
    {
        var item = reserved with { Attempt = reserved.Attempt + 1, Until = now.AddSeconds(request.LeaseSeconds), Reservation = false };
        handouts.Add(item, request.Worker, reserved.Until);
        return item;
    }

    /// <summary>
    /// Buffers what was claimed ahead, and serves again the callers who got nothing while this process holds items of
    /// their filter (buffered, or being claimed by a concurrent flush): those are claimable by no one else, so "nothing
    /// for you" would be wrong. After a failed transaction (<paramref name="failed"/>) only the bookkeeping is undone.
    /// </summary>
    private HashSet<Waiter> Settle(List<Group> groups, bool failed, long epoch)
    {
        var requeued = new HashSet<Waiter>();
        var o = options.Value;
        var byTenants = turns.TakesTurns;
        lock (gate)
        {
            foreach (var g in groups)
            {
                var ahead = g.Ahead;
                ahead.InFlight--;
                ahead.Release(g.Promises);
                if (parked.TryGetValue(ahead, out var waiting))
                {
                    waiting.RemoveAll(g.Waiters.Contains);
                    if (waiting.Count == 0)
                    {
                        parked.Remove(ahead);
                    }
                }
                if (failed)
                {
                    continue;
                }
                ahead.SawWaiting(g.Claim.Waiting, clock.GetUtcNow());
                foreach (var b in g.Claim.NewBuffer)
                {
                    // Fresh for the hold time from the claim's own clock, the one the reservation's expiry was written with.
                    ahead.Add(b, b.Until.AddSeconds(-o.ReservationSeconds).AddMilliseconds(o.PrefetchHoldMilliseconds), epoch, byTenants);
                }
                for (var i = 0; i < g.Waiters.Count; i++)
                {
                    var w = g.Waiters[i];
                    // A caller served meanwhile (a job adopted while it waited) is not served again.
                    if (g.Claim.Results[i].Count == 0 && Volatile.Read(ref w.State) == Pending && w.Requeues < MaxRequeues && (ahead.Count > 0 || ahead.Stale.Count > 0 || ahead.InFlight > 0))
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
    /// never runs beside a claim that would then find those items neither buffered nor claimable. Forgets filters idle
    /// (<see cref="ClaimAheadFilters"/>). At shutdown (<paramref name="all"/>) everything buffered goes back at once.
    /// </summary>
    public async Task ReleaseStaleAsync(bool all, CancellationToken ct)
    {
        var back = new List<TakenItem>();
        var tidy = new List<Waiter>();
        lock (gate)
        {
            if (all)
            {
                back = aheads.TakeAll();
            }
            else
            {
                foreach (var ahead in aheads.Sweep(clock.GetUtcNow(), TimeSpan.FromMilliseconds(options.Value.PrefetchHoldMilliseconds)))
                {
                    if (RefillOnce(ahead) is { } refill)
                    {
                        tidy.Add(refill);
                    }
                }
            }
        }
        foreach (var w in tidy)
        {
            queue.Requeue(w);
        }
        await leases.ReleaseAsync(back, ct);
    }

    /// <summary>
    /// Counts <paramref name="request"/> for its task filter's rate and its calls in progress, and says whether the
    /// filter's buffer holds anything worth a handout (<paramref name="holding"/>). Null without claim-ahead.
    /// </summary>
    private ClaimAheadBuffer? Enter(ClaimRequest request, out bool holding)
    {
        holding = false;
        if (options.Value.Prefetch == 0)
        {
            return null;
        }
        lock (gate)
        {
            var at = clock.GetUtcNow();
            var ahead = aheads.Get(request.Key, request.Tasks, at);
            ahead.Called(at, request.Max);
            ahead.DropStale(at.UtcDateTime);
            holding = ahead.Count > 0 && Trusted(ahead, signal.Generation);
            return ahead;
        }
    }

    /// <summary>
    /// Serves <paramref name="request"/> from the claim-ahead buffer without a transaction (<see cref="TakeFresh"/>),
    /// and queues a refill once the buffer is half spent. Null when the buffer has nothing to give in the policy's
    /// order, or new work was signalled since the filter's last claim: the caller joins the next claim transaction.
    /// First the claim epoch, read after this call began: a buffer claimed under an older one is given back unread.
    /// docs/DESIGN.md "Claim-ahead that keeps the policy".
    /// </summary>
    private async Task<(List<TakenItem>? Items, Promised? Promised)> HandOutAsync(ClaimRequest request, CancellationToken ct)
    {
        var epoch = await epochs.ReadAsync().WaitAsync(TimeSpan.FromMilliseconds(options.Value.DatabaseWaitMilliseconds), ct);
        List<TakenItem>? given;
        Waiter? refill = null;
        lock (gate)
        {
            if (!aheads.TryGet(request.Key, out var ahead) || !Trusted(ahead, signal.Generation))
            {
                return default;
            }
            if (epoch > ahead.Epoch)
            {
                // The caller's own flush gives these back before its transaction.
                ahead.DropAll();
                return default;
            }
            given = TakeFresh(ahead, request, clock.GetUtcNow().UtcDateTime, out var indb);
            if (given is null)
            {
                if (indb is not { } tenant)
                {
                    return default;
                }
                // The turn is a tenant's whose items are in the database: this caller takes it there, now, so the
                // callers that come while a transaction runs see the turns after it (ClaimAheadBuffer.Promise) instead
                // of all waiting for that transaction and the next one while another tenant's items sit here.
                ahead.Promise(tenant, request.Max);
                return (null, new Promised(ahead, tenant, request.Max));
            }
            if (ahead.InFlight == 0 && ahead.Target > 0 && ahead.Count * 2 <= ahead.Target)
            {
                refill = RefillOnce(ahead);
            }
        }
        CountClaimed(request.Worker, given);
        if (refill is not null)
        {
            queue.Requeue(refill);
        }
        return (given, null);
    }

    [LoggerMessage(EventId = 3009, Level = LogLevel.Warning, Message = "{Count} items of a claim whose commit got no answer could not be given back; they come back when their leases expire")]
    private static partial void LogGiveBackFailed(ILogger logger, Exception exception, int count);

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

        /// <summary>The turn this caller was promised when the buffer sent it to a transaction; taken over by its flush.</summary>
        public Promised? Promised { get; set; }
    }

    /// <summary>A turn of <paramref name="Tenant"/> promised in <paramref name="Ahead"/> to a caller on its way to a transaction.</summary>
    private sealed record Promised(ClaimAheadBuffer Ahead, long Tenant, int Count)
    {
        /// <summary>Gives the turn back, for a caller no transaction took it over for. Under <see cref="gate"/>.</summary>
        public void Release() => Ahead.Release([(Tenant, Count)]);
    }

    /// <summary>One task filter's callers left for the transaction, and what it claims ahead for the buffer.</summary>
    private sealed class Group(ClaimAheadBuffer ahead, string key, List<Waiter> waiters, int surplus, List<(long Tenant, int Count)> promises)
    {
        public ClaimAheadBuffer Ahead { get; } = ahead;

        /// <summary>The turns its callers were promised in the buffer (<see cref="ClaimAheadBuffer.Promise"/>), released when it settles.</summary>
        public List<(long Tenant, int Count)> Promises { get; } = promises;

        public List<Waiter> Waiters { get; } = waiters;

        public ClaimGroup Claim { get; } = new(key, ahead.Tasks, waiters.ConvertAll(w => w.Request), surplus);
    }
}
