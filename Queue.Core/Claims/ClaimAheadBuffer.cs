namespace Queue.Core.Claims;

/// <summary>
/// One task filter's claim-ahead buffer in this process: items reserved in the database and held in memory, handed out
/// in the order the database would serve them (docs/DESIGN.md "Claim-ahead that keeps the policy"): override items
/// first, then, under a policy that takes turns between tenants (<see cref="ILaneSelector.TurnOf"/>), one sub-buffer per
/// tenant served by turn and each in lane order (value, job, item id); under seed, one buffer in lane order. A tenant
/// that the last claim saw with work and that has nothing here stops the handouts while its turn is earlier: its caller
/// goes to a claim transaction instead of taking another tenant's item. Not thread-safe: the dispatcher's lock guards it.
/// </summary>
internal sealed class ClaimAheadBuffer(IReadOnlyList<string> tasks)
{
    private readonly PriorityQueue<Held, (long Value, long JobId, long Id)> overrides = new();
    private readonly Dictionary<long, PriorityQueue<Held, (long Value, long JobId, long Id)>> byTenant = [];
    private DateTime firstStale = DateTime.MaxValue;

    public IReadOnlyList<string> Tasks { get; } = tasks;

    /// <summary>Items held now.</summary>
    public int Count { get; private set; }

    /// <summary>The claim epoch every held item was claimed under (<see cref="ClaimEpoch"/>).</summary>
    public long Epoch { get; private set; }

    /// <summary>Items to give back: held past their freshness, or claimed under an older epoch. The filter's next flush gives them back.</summary>
    public List<TakenItem> Stale { get; } = [];

    /// <summary>The last claim's <see cref="ClaimOrder.Waiting"/>: tenants with work in the database, earliest turns first.</summary>
    public HashSet<long> Waiting { get; private set; } = [];

    /// <summary>When the claim that saw <see cref="Waiting"/> settled.</summary>
    public DateTimeOffset WaitingSeen { get; private set; } = DateTimeOffset.MinValue;

    public void SawWaiting(HashSet<long> tenants, DateTimeOffset at) => (Waiting, WaitingSeen) = (tenants, at);

    /// <summary>
    /// Turns promised to tenants of <see cref="Waiting"/>: callers sent to a claim transaction because such a tenant's
    /// turn came first take its items there, so the callers after them (in the same flush, or while that transaction
    /// runs) see the turns that follow, and are handed a held item of another tenant whose turn it then is, instead of
    /// all queueing behind the one tenant's turn. At a flood's start, 5 callers in a row went to one transaction for
    /// the flood's items while a small job's items sat here. Released when the transaction settles, by which time its
    /// items are charged.
    /// </summary>
    private readonly Dictionary<long, int> promised = [];

    /// <summary>Promises <paramref name="tenant"/> <paramref name="count"/> turns (<see cref="promised"/>).</summary>
    public void Promise(long tenant, int count) => promised[tenant] = promised.GetValueOrDefault(tenant) + count;

    /// <summary>Releases what <see cref="Promise"/> promised, once the transaction it was promised for settled or failed.</summary>
    public void Release(IEnumerable<(long Tenant, int Count)> promises)
    {
        foreach (var (tenant, count) in promises)
        {
            var left = promised.GetValueOrDefault(tenant) - count;
            if (left > 0)
            {
                promised[tenant] = left;
            }
            else
            {
                promised.Remove(tenant);
            }
        }
    }

    /// <summary>
    /// The <see cref="WorkSignal.Generation"/> read before the filter's last claim read the database (its first round,
    /// or its flush's start until then): a newer one means new work may wait in the database.
    /// </summary>
    public long SeenSignal { get; set; } = -1;

    public int InFlight { get; set; }

    public DateTimeOffset LastFlush { get; set; }

    public DateTimeOffset LastUsed { get; set; }

    /// <summary>What the last flush meant to hold; a refill is queued once the buffer is down to half of it.</summary>
    public int Target { get; set; }

    public bool RefillQueued { get; set; }

    /// <summary>False for a filter past the dispatcher's bound of filters: it never claims ahead and is not kept.</summary>
    public bool Kept { get; init; } = true;

    /// <summary>Nothing held, nothing to give back, no claim running or queued: the filter can be forgotten.</summary>
    public bool Idle => Count == 0 && Stale.Count == 0 && InFlight == 0 && !RefillQueued;

    /// <summary>
    /// Holds <paramref name="item"/>, a reservation claimed under <paramref name="epoch"/>, until
    /// <paramref name="freshUntil"/>: a time counted from the reservation's own expiry in the database, never from when
    /// it reached memory, so a claim transaction that ran slow cannot leave items here whose reservation another claim
    /// may already take. Items of an older epoch than those held are not trusted; a newer epoch drops what is held.
    /// </summary>
    public void Add(TakenItem item, DateTime freshUntil, long epoch, bool byTenants)
    {
        if (epoch < Epoch)
        {
            Stale.Add(item);
            return;
        }
        if (epoch > Epoch)
        {
            DropAll();
            Epoch = epoch;
        }
        Put(new Held(item, freshUntil, byTenants ? item.TenantId : 0));
    }

    /// <summary>
    /// Up to <paramref name="max"/> items in the policy's order, each charged to its tenant through
    /// <paramref name="turns"/>; empty when the next item by that order is not here or nothing fresh is held.
    /// <paramref name="inDatabase"/>: the tenant waiting in the database whose earlier turn stopped the handouts, if one did.
    /// </summary>
    public List<TakenItem> Take(int max, DateTime now, ILaneSelector turns, out long? inDatabase)
    {
        DropStale(now);
        inDatabase = null;
        var given = new List<TakenItem>();
        while (given.Count < max && Count > 0)
        {
            if (!overrides.TryDequeue(out var held, out _))
            {
                if (NextTenant(turns, out inDatabase) is not { } queue)
                {
                    break;
                }
                held = queue.Dequeue();
            }
            given.Add(Out(held, turns));
        }
        return given;
    }

    /// <summary>An item leaving the buffer: counted out here, and charged to its tenant's turn.</summary>
    private TakenItem Out(Held held, ILaneSelector turns)
    {
        Count--;
        turns.Claimed(held.Item.TenantId, 1);
        return held.Item;
    }

    /// <summary>
    /// Whether a fresh item of <paramref name="tenant"/>'s own sub-buffer is held, after dropping the stale ones: then
    /// <see cref="TakeOf"/> with the same <paramref name="now"/> gives one.
    /// </summary>
    public bool HoldsFreshOf(long tenant, DateTime now)
    {
        DropStale(now);
        return byTenant.TryGetValue(tenant, out var queue) && queue.Count > 0;
    }

    /// <summary>
    /// The first held item of <paramref name="tenant"/> in its order, charged to it through <paramref name="turns"/>,
    /// whatever the turns of the others say: for a caller whose claim transaction is bringing the others' items to the
    /// callers beside it (<see cref="ClaimDispatcher"/>'s adoption). Null when none is held.
    /// </summary>
    public TakenItem? TakeOf(long tenant, ILaneSelector turns)
    {
        return byTenant.TryGetValue(tenant, out var queue) && queue.TryDequeue(out var held, out _) ? Out(held, turns) : null;
    }

    /// <summary>
    /// How many of <paramref name="callers"/> callers waiting on a claim transaction <paramref name="tenant"/>'s held
    /// items serve now, the rest getting what the transaction brings: by stride, the tenant against the earliest turn
    /// among the others this filter knows with work (held here, or seen waiting in the database), or against a newcomer's
    /// turn (<see cref="ILaneSelector.TurnOfNewcomer"/>) when it knows none, since the transaction may be bringing a
    /// tenant no claim has shown yet. At least one, at most what is held. Charges nothing: <see cref="TakeOf"/> does.
    /// </summary>
    public int ParkedShareOf(long tenant, int callers, ILaneSelector turns)
    {
        var held = byTenant.TryGetValue(tenant, out var own) ? own.Count : 0;
        if (callers == 0 || held == 0)
        {
            return 0;
        }
        if (TurnOf(tenant, turns) is not { } mine)
        {
            return 1;
        }
        var (rival, rivalStep) = (double.MaxValue, 1.0);
        var heldTenants = HeldTenants();
        foreach (var t in Waiting.Concat(heldTenants).Where(t => t != tenant).Distinct())
        {
            if (TurnOf(t, turns, inDatabase: !heldTenants.Contains(t)) is { } turn && turn < rival)
            {
                (rival, rivalStep) = (turn, turns.TurnLength(t));
            }
        }
        if (rival == double.MaxValue)
        {
            rival = turns.TurnOfNewcomer() ?? mine;
        }
        var (step, n) = (turns.TurnLength(tenant), 1);
        mine += step;
        for (var k = 1; k < callers && n < held; k++)
        {
            if (mine <= rival)
            {
                (mine, n) = (mine + step, n + 1);
            }
            else
            {
                rival += rivalStep;
            }
        }
        return n;
    }

    /// <summary>Whether a job with <paramref name="tasks"/> is this filter's work: an empty filter takes every task.</summary>
    public bool Covers(IReadOnlyList<string> tasks) => Tasks.Count == 0 || tasks.All(t => Tasks.Contains(t, StringComparer.Ordinal));

    /// <summary>
    /// The tenant has items held here, or the last claim saw it with work in the database: a new job of its own may
    /// not come before those in its tenant's order, so it is created claimable and taken by a claim. A view of the
    /// database older than <paramref name="trustWaiting"/> is not asked: it is another phase's (a flood that starts
    /// after a pause still had in it the small tenant of the last claim before the pause, and its job was refused).
    /// </summary>
    public bool HasWorkOf(long tenant, DateTimeOffset now, TimeSpan trustWaiting) =>
        (now - WaitingSeen < trustWaiting && Waiting.Contains(tenant)) || (byTenant.TryGetValue(tenant, out var queue) && queue.Count > 0);

    /// <summary>The tenants with items held here (other than technicians' overrides).</summary>
    public List<long> HeldTenants() => byTenant.Where(t => t.Value.Count > 0).Select(t => t.Key).ToList();

    /// <summary>Moves the items past their freshness to <see cref="Stale"/>. Cheap while none is: the earliest time is kept.</summary>
    public void DropStale(DateTime now)
    {
        if (now < firstStale)
        {
            return;
        }
        var keep = TakeAllHeld();
        foreach (var held in keep)
        {
            if (held.FreshUntil <= now)
            {
                Stale.Add(held.Item);
            }
            else
            {
                Put(held);
            }
        }
    }

    /// <summary>Moves everything held to <see cref="Stale"/>: a newer epoch, or a shutdown.</summary>
    public void DropAll() => Stale.AddRange(TakeAllHeld().Select(h => h.Item));

    /// <summary>Empties every sub-buffer and returns what they held.</summary>
    private List<Held> TakeAllHeld()
    {
        var all = new List<Held>(Count);
        foreach (var queue in byTenant.Values.Append(overrides))
        {
            while (queue.TryDequeue(out var held, out _))
            {
                all.Add(held);
            }
        }
        byTenant.Clear();
        Count = 0;
        firstStale = DateTime.MaxValue;
        return all;
    }

    private void Put(Held held)
    {
        var item = held.Item;
        var key = (item.Value, item.JobId, item.Id);
        if (item.Override)
        {
            overrides.Enqueue(held, key);
        }
        else
        {
            if (!byTenant.TryGetValue(held.Tenant, out var queue))
            {
                queue = new();
                byTenant[held.Tenant] = queue;
            }
            queue.Enqueue(held, key);
        }
        Count++;
        if (held.FreshUntil < firstStale)
        {
            firstStale = held.FreshUntil;
        }
    }

    /// <summary>
    /// The sub-buffer whose tenant's turn comes first (ties to the lower id), or null when a tenant of
    /// <see cref="Waiting"/> with nothing held has an earlier turn still (<paramref name="inDatabase"/>): that tenant's
    /// work is in the database. Turns count the ones <see cref="promised"/>.
    /// </summary>
    private PriorityQueue<Held, (long, long, long)>? NextTenant(ILaneSelector turns, out long? inDatabase)
    {
        inDatabase = null;
        PriorityQueue<Held, (long, long, long)>? best = null;
        var bestTurn = double.MaxValue;
        var bestTenant = long.MaxValue;
        foreach (var (tenant, queue) in byTenant)
        {
            if (queue.Count == 0)
            {
                continue;
            }
            var turn = TurnOf(tenant, turns) ?? 0;
            if (turn < bestTurn || (turn == bestTurn && tenant < bestTenant))
            {
                (best, bestTurn, bestTenant) = (queue, turn, tenant);
            }
        }
        if (best is null)
        {
            return null;
        }
        foreach (var tenant in Waiting)
        {
            if ((!byTenant.TryGetValue(tenant, out var queue) || queue.Count == 0) && TurnOf(tenant, turns, inDatabase: true) is { } turn
                && (turn < bestTurn || (turn == bestTurn && tenant < bestTenant)))
            {
                (bestTurn, bestTenant) = (turn, tenant);
                inDatabase = tenant;
            }
        }
        return inDatabase is null ? best : null;
    }

    /// <summary>
    /// The tenant's turn after the turns <see cref="promised"/> to it; null when the policy takes no turns.
    /// <paramref name="inDatabase"/>: none of its items is held, and it is ranked where the next claim would rank it.
    /// </summary>
    private double? TurnOf(long tenant, ILaneSelector turns, bool inDatabase = false) =>
        (inDatabase ? turns.TurnInDatabaseOf(tenant) : turns.TurnOf(tenant)) + (promised.TryGetValue(tenant, out var n) ? n * turns.TurnLength(tenant) : 0);

    /// <summary>
    /// A busy filter claims ahead what its callers ask for in this time (at most <see cref="ClaimOptions.Prefetch"/>),
    /// and refills at half: the rest outlasts a refill's transaction, and every item leaves well within the hold time.
    /// Sized by the buffer's own past (twice what went out since the last claim) it grew to the cap at any rate: at
    /// 430 items/s, 256 items lasted 0.6 s, past the hold, so a fifth of them went stale and back, and a claim that had
    /// to reserve that much for a new tenant took 40 ms instead of 10.
    /// </summary>
    private const int RunwayMilliseconds = 250;

    /// <summary>
    /// A filter with this many calls in progress at once (<see cref="Inside"/>: those waiting on a transaction among
    /// them) is busy whatever its rate so far: a flood's first claims were transactions alone for 300 ms (until the
    /// rate showed), and a small tenant's job that came with the flood took 3 times its solo turnaround.
    /// </summary>
    private const int BusyCallers = 4;

    /// <summary>
    /// Sets <see cref="Target"/> for this flush, and returns how many items its transaction reserves beyond the callers'
    /// leases: a target's worth of what <paramref name="want"/> and the recent rate ask for, and nothing for a filter
    /// that is not busy. <paramref name="fresh"/>: new work was signalled, or a tenant waits in the database; then at
    /// least half a target is claimed even if the buffer is full of others' items, so the claim's round of quotas
    /// reserves the waiting tenant's share too and its items are handed out from memory by turn, not one transaction at
    /// a time (within twice the cap). A whole target overfilled the buffer past its hold time with the others' items,
    /// and made the claim the new tenant's first item waits for 3-4 times longer.
    /// </summary>
    /// <remarks>
    /// A filter that is not busy (yet) but holds items still claims ahead when <paramref name="fresh"/>: as many as it
    /// holds, so that the waiting tenant's share lands beside the others' and is handed out by turn. Claiming only for
    /// its callers, a flood's first 60 ms (before its rate showed) served a small job's items one per transaction, each
    /// to one caller sent there for the small tenant's turn, while the flood's 15 held items went out between them: the
    /// job's first to last handout took 48 ms against 12 alone (a trace of every flush, 2026-12-07).
    /// </remarks>
    public int Plan(int want, bool fresh, DateTimeOffset at, ClaimOptions o)
    {
        Target = o.Prefetch == 0 || !Busy(at, o) ? 0
            : Math.Min(o.Prefetch, Math.Max(want, AskedPerSecond(at) * RunwayMilliseconds / 1000));
        LastFlush = at;
        if (!fresh)
        {
            return Math.Max(0, Target - Count);
        }
        var share = Target == 0 ? Math.Min(Count, o.Prefetch) : Math.Max(Target - Count, Target / 2);
        return Math.Min(share, Math.Max(0, (2 * o.Prefetch) - Count));
    }

    /// <summary>The rate is counted per quarter second: a flood's first claims are transactions for at most half a second.</summary>
    private const int RateBucketMilliseconds = 250;

    private long bucket;

    /// <summary>This quarter second's and the last one's /next calls, and the items they asked for.</summary>
    private (int Calls, int Asked) thisBucket, lastBucket;

    /// <summary>Counts a /next of this filter asking for <paramref name="max"/> items, per quarter second of the clock.</summary>
    public void Called(DateTimeOffset now, int max)
    {
        Roll(now);
        thisBucket = (thisBucket.Calls + 1, thisBucket.Asked + max);
        LastUsed = now;
        Interlocked.Increment(ref inside);
    }

    /// <summary>A /next counted by <see cref="Called"/> was answered (or gave up).</summary>
    public void Left() => Interlocked.Decrement(ref inside);

    private int inside;

    /// <summary>
    /// This filter's /next calls in progress: counted in <see cref="Called"/>, until <see cref="Left"/>. As many as
    /// <see cref="BusyCallers"/> at once make the filter busy before its rate shows. When a flood's workers started
    /// together, their 8 first calls came within a millisecond, but the rate needs 25 calls in a quarter second, and each
    /// flush took only the 2-5 callers queued when it began: the first 80 ms were five transactions of 2-3 items, one at
    /// a time, while a small job's items went out from memory (a trace of every flush, 2026-11-29). A lone worker, however
    /// fast, is one call at a time.
    /// </summary>
    public int Inside => Volatile.Read(ref inside);

    /// <summary>
    /// Claims ahead only for a filter polled at <see cref="ClaimOptions.PrefetchAboveCallsPerSecond"/> or more (in the
    /// last quarter second or this one), or with <see cref="BusyCallers"/> calls in progress at once
    /// (<see cref="Inside"/>): a worker now and then is served by a transaction of its own, and sees the order as it is
    /// at that moment. Counted per second, a flood of 8 workers was served by transactions alone for its
    /// first 1.5 s (about 200 items/s, just under the bar), and a small tenant's jobs in that time took 2-3 times longer.
    /// </summary>
    public bool Busy(DateTimeOffset now, ClaimOptions o)
    {
        Roll(now);
        return Kept && (Math.Max(thisBucket.Calls, lastBucket.Calls) * (1000 / RateBucketMilliseconds) >= o.PrefetchAboveCallsPerSecond || Inside >= BusyCallers);
    }

    /// <summary>
    /// Whether a new job may go straight into this buffer (<see cref="Jobs.INewWorkIntake"/>): the filter is busy, or
    /// its workers called within <paramref name="hold"/> (the hold time), so they come back for what it holds before it
    /// goes stale. A flood's first claims come before the filter shows as busy: a small job sent with them waited
    /// 40-70 ms for a second claim transaction.
    /// </summary>
    public bool Takes(DateTimeOffset now, ClaimOptions o, TimeSpan hold) => Kept && (Busy(now, o) || now - LastUsed < hold);

    /// <summary>
    /// Items asked for per second by this filter's /next calls: the last quarter second's, or this one's over the time
    /// it has run so far (at least <see cref="RateAfterMilliseconds"/>), whichever is higher.
    /// </summary>
    public int AskedPerSecond(DateTimeOffset now)
    {
        Roll(now);
        var elapsed = Math.Max(RateAfterMilliseconds, now.ToUnixTimeMilliseconds() - (bucket * RateBucketMilliseconds));
        return (int)Math.Max(thisBucket.Asked * 1000 / elapsed, lastBucket.Asked * (1000 / RateBucketMilliseconds));
    }

    /// <summary>
    /// The shortest time this quarter second's calls are taken as a rate over. Counted over the whole quarter second,
    /// a flood's workers that started together showed a quarter of their rate at first: its first claims reserved 3-8
    /// items each, the buffer ran dry, and all 8 callers waited on one transaction after another while the small job
    /// sent with the flood was handed out between them (a trace of every flush, 2026-11-29).
    /// </summary>
    private const long RateAfterMilliseconds = 50;

    private void Roll(DateTimeOffset now)
    {
        var current = now.ToUnixTimeMilliseconds() / RateBucketMilliseconds;
        if (current != bucket)
        {
            lastBucket = current == bucket + 1 ? thisBucket : default;
            thisBucket = default;
            bucket = current;
        }
    }

    /// <param name="Tenant">The sub-buffer: the item's tenant, or 0 under a policy that takes no turns.</param>
    private readonly record struct Held(TakenItem Item, DateTime FreshUntil, long Tenant);
}
