namespace Queue.Core;

/// <summary>
/// Wakes long-polling workers of this process as soon as claimable work may exist. Anything that makes items claimable
/// calls <see cref="Notify"/> after its transaction commits (an upload, a requeue, an unblock); work made by other
/// processes, retries falling due and expiring leases are found by the one shared poll per process
/// (Claims.ClaimBackgroundService), which runs only while someone waits.
/// </summary>
public sealed class WorkSignal
{
    private TaskCompletionSource current = New();
    private int waiters;
    private long generation;
    private long local;
    private long heldThrough;

    /// <summary>Completes at the next <see cref="Notify"/>. Take it before looking for work, then wait on it, so a
    /// notification between the look and the wait is never missed.</summary>
    public Task Next => Volatile.Read(ref current).Task;

    /// <summary>Workers waiting right now; the shared poll runs only while this is above zero.</summary>
    public int Waiters => Volatile.Read(ref waiters);

    /// <summary>
    /// Counts <see cref="Notify"/> calls: the claim-ahead buffer compares it with the value its last claim started
    /// after, and sends the next caller to a claim transaction when new work may wait in the database.
    /// </summary>
    public long Generation => Interlocked.Read(ref generation);

    /// <summary>
    /// Counts this process's own submissions (<see cref="Notify"/> and <see cref="NotifyHeld"/>): the wake loop signals
    /// for new items it sees only when none came from here since its last look.
    /// </summary>
    public long Local => Interlocked.Read(ref local);

    /// <summary>
    /// The highest item id this process created straight into its claim-ahead buffer (<see cref="Holding"/>): the wake
    /// loop takes new items no higher than this for this process's own, already held.
    /// </summary>
    public long HeldThrough => Interlocked.Read(ref heldThrough);

    /// <summary>
    /// Items up to <paramref name="lastItemId"/> are being created straight into this process's claim-ahead buffer:
    /// called before their transaction commits (a transaction that then fails leaves an id no one will see).
    /// </summary>
    public void Holding(long lastItemId)
    {
        var seen = Interlocked.Read(ref heldThrough);
        while (lastItemId > seen && Interlocked.CompareExchange(ref heldThrough, lastItemId, seen) is var was && was != seen)
        {
            seen = was;
        }
    }

    public void Notify()
    {
        Interlocked.Increment(ref local);
        Interlocked.Increment(ref generation);
        Wake();
    }

    /// <summary>
    /// New work that this process's claim-ahead buffer already holds (docs/DESIGN.md "New work straight into the
    /// buffer"): wakes the workers, without sending the buffer to a claim transaction that would find nothing new.
    /// </summary>
    public void NotifyHeld()
    {
        Interlocked.Increment(ref local);
        Wake();
    }

    /// <summary>
    /// Wakes the long-polling workers without moving <see cref="Generation"/>: for work that a claim which started
    /// after the last <see cref="Notify"/> may already have seen.
    /// </summary>
    public void Wake() => Interlocked.Exchange(ref current, New()).TrySetResult();

    /// <summary>Waits for <paramref name="observed"/> (a <see cref="Next"/> taken earlier) or the timeout; true when notified.</summary>
    public async Task<bool> WaitAsync(Task observed, TimeSpan timeout, CancellationToken ct)
    {
        if (timeout <= TimeSpan.Zero)
        {
            return observed.IsCompleted;
        }
        Interlocked.Increment(ref waiters);
        try
        {
            // A long poll that ends with no work is the common case: awaited without throwing, it costs no exception.
            await observed.WaitAsync(timeout, ct).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
            ct.ThrowIfCancellationRequested();
            return observed.IsCompleted;
        }
        finally
        {
            Interlocked.Decrement(ref waiters);
        }
    }

    private static TaskCompletionSource New() => new(TaskCreationOptions.RunContinuationsAsynchronously);
}
