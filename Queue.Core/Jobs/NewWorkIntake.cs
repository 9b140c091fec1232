namespace Queue.Core.Jobs;

/// <summary>
/// Where a new job's items can go straight from its creating transaction: this process's claim-ahead buffer, when one
/// is busy serving a task filter that covers the job and the job's tenant has nothing there and nothing waiting in the
/// database (docs/DESIGN.md "New work straight into the buffer"). Then the creating transaction reserves the items as
/// a claim would, and /next hands them out by turn with no claim transaction: under a flood, a small tenant's first
/// item waited for one (10-40 ms on 2 cores) while the flood's workers went on from memory.
/// </summary>
public interface INewWorkIntake
{
    /// <summary>How long the creating transaction reserves the items for (the claim path's reservation).</summary>
    TimeSpan Reservation { get; }

    /// <summary>
    /// The buffer that would take a new job of <paramref name="tenantId"/> with <paramref name="tasks"/> and
    /// <paramref name="items"/> items right now, or null: the job is then created claimable, as always.
    /// </summary>
    string? Offer(long tenantId, IReadOnlyList<string> tasks, int items);

    /// <summary>
    /// After the commit: hands the reserved items to the buffer <paramref name="filter"/> named (or gives them back if it
    /// is gone), under <paramref name="epoch"/>, the claim epoch read in the creating transaction.
    /// </summary>
    Task AdoptAsync(string filter, NewJobItems job, long epoch, CancellationToken ct);
}

/// <summary>A new job's items as its creating transaction reserved them: token and reservation as a claim writes them.</summary>
public sealed record NewJobItems(long JobId, long TenantId, string TenantName, long Value, DateTime ReservedAt, DateTime ReservedUntil,
    IReadOnlyList<ReservedNewItem> Items);

public sealed record ReservedNewItem(long Id, long DocumentId, string Task, byte[] Token, string DocumentName, string ContentType);

/// <summary>A host without a claim path (Admin, Scheduler): new jobs are always created claimable.</summary>
public sealed class NoNewWorkIntake : INewWorkIntake
{
    public TimeSpan Reservation => TimeSpan.Zero;

    public string? Offer(long tenantId, IReadOnlyList<string> tasks, int items) => null;

    public Task AdoptAsync(string filter, NewJobItems job, long epoch, CancellationToken ct) => Task.CompletedTask;
}
