namespace Queue.Core.Claims;

/// <summary>A worker's /next, validated.</summary>
/// <param name="Tasks">Distinct task names; empty accepts any task.</param>
public sealed record ClaimRequest(string? Worker, IReadOnlyList<string> Tasks, int Max, int LeaseSeconds)
{
    /// <summary>Requests with the same key can share claimed-ahead items and one pass over the lanes.</summary>
    public string Key { get; } = Tasks.Count == 0 ? "" : string.Join(',', Tasks.Order(StringComparer.Ordinal));
}

/// <summary>What a claim slot becomes: a worker's lease, or a reservation held in this process's claim-ahead buffer.</summary>
public sealed record ClaimSlot(string? Worker, DateTime Until, bool Reservation);

/// <summary>An item taken by a claim transaction, with everything the /next answer needs.</summary>
public sealed record TakenItem(long Id, long JobId, long TenantId, long DocumentId, string Task, int Attempt, byte[] Token,
    DateTime Until, bool Reservation)
{
    public string TenantName { get; set; } = "";

    public string DocumentName { get; set; } = "";

    public string ContentType { get; set; } = "";

    /// <summary>Its lane's ordering value when it was claimed: the claim-ahead buffer hands out lowest first, as the database would.</summary>
    public long Value { get; init; }

    /// <summary>Its lane was a technician's override: the claim-ahead buffer hands it out before any tenant's turn.</summary>
    public bool Override { get; init; }
}

/// <summary>One task filter's share of a claim transaction: the slots to fill, workers' leases first, then reservations.</summary>
public sealed record ClaimOrder(IReadOnlyList<string> Tasks, IReadOnlyList<ClaimSlot> Slots)
{
    /// <summary>
    /// Filled by the claim: the tenants whose lanes the selector offered first (for tenant-fair, the tenants with
    /// claimable work whose turn comes first). The claim-ahead buffer sends a caller to a transaction rather than hand
    /// out another tenant's buffered item while one of these has an earlier turn and nothing buffered.
    /// </summary>
    public HashSet<long> Waiting { get; } = [];

    /// <summary>Who is told about the claim's first round (<see cref="FirstRoundWatch"/>).</summary>
    public FirstRoundWatch? FirstRound { get; init; }
}

/// <summary>
/// A claim's first round, told as it happens: the claim-ahead buffer then knows which tenants wait in the database
/// while the transaction goes on locking and writing.
/// </summary>
/// <param name="Starts">Called right before the first round reads the lanes. Claims read committed, afresh per
/// statement, so whatever committed before this call is in what <paramref name="Saw"/> is then told.</param>
/// <param name="Saw">Told <see cref="ClaimOrder.Waiting"/> as soon as the first round's lanes are read.</param>
public sealed record FirstRoundWatch(Action Starts, Action<IReadOnlySet<long>> Saw);

public enum FinishOutcome
{
    Done,
    NotFound,
    Stale,
}

/// <summary>A lease as the worker presents it.</summary>
public readonly record struct LeaseRef(long ItemId, byte[] Token);

public sealed record LeaseDocument(long Id, string Name, string ContentType, long Size);

/// <summary>Process-wide counts the web layer turns into metrics.</summary>
public sealed class ClaimCounters
{
    private long leasesExpired;

    public long LeasesExpired => Interlocked.Read(ref leasesExpired);

    public event Action<int>? LeaseExpired;

    internal void OnLeaseExpired()
    {
        Interlocked.Increment(ref leasesExpired);
        LeaseExpired?.Invoke(1);
    }
}
