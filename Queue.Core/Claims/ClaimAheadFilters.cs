namespace Queue.Core.Claims;

/// <summary>
/// The claim-ahead buffers of this process, one per task filter (a distinct task list a worker sends), bounded: a
/// filter idle for <see cref="IdleSeconds"/> is forgotten, and past <see cref="Max"/> a new filter gets a buffer that
/// is not kept and never claims ahead, so a fleet sending ever new task lists cannot grow the map or the walks over it.
/// Not thread-safe: <see cref="ClaimDispatcher"/>'s lock guards it.
/// </summary>
internal sealed class ClaimAheadFilters
{
    public const int Max = 1024;

    private const int IdleSeconds = 30;

    private readonly Dictionary<string, ClaimAheadBuffer> map = new(StringComparer.Ordinal);

    public int Count => map.Count;

    public int Buffered => map.Values.Sum(b => b.Count);

    public bool TryGet(string key, out ClaimAheadBuffer ahead) => map.TryGetValue(key, out ahead!);

    /// <summary>The filter's buffer, made on first use; past <see cref="Max"/>, idle filters are forgotten first.</summary>
    public ClaimAheadBuffer Get(string key, IReadOnlyList<string> tasks, DateTimeOffset at)
    {
        if (map.TryGetValue(key, out var ahead))
        {
            return ahead;
        }
        if (map.Count >= Max)
        {
            foreach (var idle in map.Where(a => a.Value.Idle).OrderBy(a => a.Value.LastUsed).Take(Max / 8).Select(a => a.Key).ToList())
            {
                map.Remove(idle);
            }
            if (map.Count >= Max)
            {
                return new ClaimAheadBuffer(tasks) { Kept = false, LastUsed = at };
            }
        }
        ahead = new ClaimAheadBuffer(tasks) { LastUsed = at };
        map[key] = ahead;
        return ahead;
    }

    /// <summary>
    /// The maintenance pass: moves what went stale to each buffer's give-back list and returns the buffers that have
    /// something to give back; stops claiming ahead for filters idle past the hold time, and forgets idle filters.
    /// </summary>
    public List<ClaimAheadBuffer> Sweep(DateTimeOffset at, TimeSpan hold)
    {
        var stale = new List<ClaimAheadBuffer>();
        List<string>? idle = null;
        foreach (var (key, ahead) in map)
        {
            ahead.DropStale(at.UtcDateTime);
            if (ahead.Stale.Count > 0)
            {
                stale.Add(ahead);
            }
            if (ahead.Idle && at - ahead.LastUsed >= TimeSpan.FromSeconds(IdleSeconds))
            {
                (idle ??= []).Add(key);
            }
        }
        foreach (var key in idle ?? [])
        {
            map.Remove(key);
        }
        return stale;
    }

    /// <summary>
    /// The filter that takes a new job of <paramref name="tenant"/> straight into its buffer (the busiest, if several
    /// cover its tasks; <see cref="ClaimAheadBuffer.Takes"/>), or null: none is being worked now, the tenant already has
    /// work in one, or the job would overfill it (<see cref="Jobs.INewWorkIntake"/>).
    /// </summary>
    public string? Intake(long tenant, IReadOnlyList<string> tasks, int items, DateTimeOffset at, ClaimOptions o)
    {
        string? best = null;
        var bestRate = 0;
        var hold = TimeSpan.FromMilliseconds(o.PrefetchHoldMilliseconds);
        foreach (var (key, ahead) in map)
        {
            if (!ahead.Takes(at, o, hold) || !ahead.Covers(tasks) || ahead.Count + items > 2 * o.Prefetch)
            {
                continue;
            }
            if (ahead.HasWorkOf(tenant, at, hold))
            {
                return null;
            }
            var rate = ahead.AskedPerSecond(at);
            if (best is null || rate > bestRate)
            {
                (best, bestRate) = (key, rate);
            }
        }
        return best;
    }

    /// <summary>Everything held and everything stale, taken out of every buffer: the shutdown's give-back.</summary>
    public List<TakenItem> TakeAll()
    {
        var back = new List<TakenItem>();
        foreach (var ahead in map.Values)
        {
            ahead.DropAll();
            back.AddRange(ahead.Stale);
            ahead.Stale.Clear();
        }
        return back;
    }
}
