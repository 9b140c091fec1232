using Queue.Core.Hosting;

namespace Queue.Core.Claims;

/// <summary>Settings of the claim path (section <c>Claims</c>). The defaults are what the claim benchmark was run with.</summary>
public sealed class ClaimOptions
{
    /// <summary>
    /// Items each task filter may hold claimed ahead in memory, for a filter polled often enough
    /// (<see cref="PrefetchAboveCallsPerSecond"/>): /next is then answered from memory, with no transaction, and the
    /// buffer is refilled in the background. 0 turns claim-ahead off: every /next is then served by the grouped claim
    /// transaction it joins. docs/DESIGN.md "Handouts from memory".
    /// </summary>
    public int Prefetch { get; set; } = 256;

    /// <summary>How long a claimed-ahead item is reserved in the database. If the process dies, it is claimable again after this.</summary>
    public int ReservationSeconds { get; set; } = 10;

    /// <summary>A claimed-ahead item not handed out within this time is given back, so the buffer never serves a stale order for long.</summary>
    public int PrefetchHoldMilliseconds { get; set; } = 500;

    /// <summary>
    /// Claim-ahead starts only for a task filter polled this often (calls per second in the last quarter second, in
    /// this process), or with 4 callers waiting on one claim transaction; 0 claims ahead for any filter. A worker now
    /// and then gets a transaction of its own and the order as it is at that moment.
    /// </summary>
    public int PrefetchAboveCallsPerSecond { get; set; } = 100;

    /// <summary>
    /// How long a lease handed out from the claim-ahead buffer may stay unwritten (<see cref="HandoutLog"/>): one
    /// finished sooner is never written, and one still out is written within about twice this.
    /// </summary>
    public int HandoutFlushMilliseconds { get; set; } = 50;

    /// <summary>/next calls waiting for a claim transaction, beyond which new ones get 503 at once.</summary>
    public int MaxPending { get; set; } = 4096;

    /// <summary>Calls served by one claim transaction at most.</summary>
    public int MaxBatch { get; set; } = 256;

    /// <summary>
    /// Claim (and completion) transactions in flight at once. One: while it commits, the next calls gather into a larger
    /// group, and on this 2-core box fewer, larger transactions beat overlapping ones (drains of one-item jobs at 16 and
    /// 64 workers: 1,264 -> 1,621 and 1,974 -> 2,579 items/s, p99 lower too; docs/DESIGN.md "Peer speed").
    /// </summary>
    public int MaxConcurrentFlushes { get; set; } = 1;

    /// <summary>
    /// How long a claim transaction may wait, before it starts, for the callers that are about to come back: until as many
    /// are queued as were inside /next at once lately (<see cref="CallerPeak"/>). A lone worker never waits. 0 turns it
    /// off. With 16 workers draining one-item jobs, callers came in two alternating halves, each a transaction of its
    /// own; gathered, one transaction serves them all (docs/DESIGN.md "Gathering claims").
    /// </summary>
    public int GatherMicroseconds { get; set; } = 1000;

    /// <summary>How long a call waits for its grouped transaction before it answers 503 with Retry-After.</summary>
    public int DatabaseWaitMilliseconds { get; set; } = 5000;

    /// <summary>Interval of the one shared poll per process that wakes long-polling workers for work other processes made.</summary>
    public int PollMilliseconds { get; set; } = 250;

    /// <summary>
    /// While workers wait, how often this process checks whether another process committed new items (one read of the
    /// end of the items' primary key), so work submitted through any Api process wakes waiting workers within about
    /// this long. The full poll above still finds retries falling due and expired leases.
    /// </summary>
    public int WakeMilliseconds { get; set; } = 40;

    /// <summary>How often per-tenant and per-worker counts are added to tenant_counters and workers.</summary>
    public int StatsFlushMilliseconds { get; set; } = 5000;
}

public sealed class ClaimOptionsRules() : OptionsRules<ClaimOptions>("Claims")
{
    protected override IEnumerable<(string Field, bool Holds, string MustBe)> Rules(ClaimOptions o) =>
    [
        (nameof(o.Prefetch), o.Prefetch is >= 0 and <= 10_000, "must be 0 to 10000"),
        (nameof(o.ReservationSeconds), o.ReservationSeconds is >= 2 and <= 300, "must be 2 to 300"),
        (nameof(o.PrefetchHoldMilliseconds), o.PrefetchHoldMilliseconds > 0 && o.PrefetchHoldMilliseconds < o.ReservationSeconds * 500,
            "must be positive and below half of ReservationSeconds"),
        (nameof(o.PrefetchAboveCallsPerSecond), o.PrefetchAboveCallsPerSecond >= 0, "must be 0 or more"),
        (nameof(o.HandoutFlushMilliseconds), o.HandoutFlushMilliseconds > 0 && o.HandoutFlushMilliseconds < o.ReservationSeconds * 250,
            "must be positive and below a quarter of ReservationSeconds"),
        (nameof(o.MaxPending), o.MaxPending > 0, "must be positive"),
        (nameof(o.MaxBatch), o.MaxBatch is > 0 and <= 10_000, "must be 1 to 10000"),
        (nameof(o.MaxConcurrentFlushes), o.MaxConcurrentFlushes is >= 1 and <= 16, "must be 1 to 16"),
        (nameof(o.GatherMicroseconds), o.GatherMicroseconds is >= 0 and <= 100_000, "must be 0 to 100000"),
        (nameof(o.DatabaseWaitMilliseconds), o.DatabaseWaitMilliseconds > 0, "must be positive"),
        (nameof(o.PollMilliseconds), o.PollMilliseconds is >= 10 and <= 60_000, "must be 10 to 60000"),
        (nameof(o.WakeMilliseconds), o.WakeMilliseconds is >= 5 and <= 60_000, "must be 5 to 60000"),
        (nameof(o.StatsFlushMilliseconds), o.StatsFlushMilliseconds >= 100, "must be at least 100"),
    ];
}
