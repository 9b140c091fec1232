namespace Queue.Core.Claims;

/// <summary>
/// Admission to a group-commit queue (claims and completions alike): bounded, so a slow database gets 503 at once
/// instead of an unbounded backlog, and with at most <see cref="ClaimOptions.MaxConcurrentFlushes"/> flush loops.
/// </summary>
internal static class GroupCommit
{
    /// <summary>Queues <paramref name="item"/>; call under the owner's lock. True when the caller must start a flush loop.</summary>
    public static bool Enqueue<T>(List<T> pending, T item, ref int flushing, ClaimOptions options, string what) =>
        Enqueue(pending, item, ref flushing, options.MaxPending, options.MaxConcurrentFlushes, what);

    /// <summary>The same with explicit limits (submissions have their own).</summary>
    public static bool Enqueue<T>(List<T> pending, T item, ref int flushing, int maxPending, int maxFlushes, string what)
    {
        if (pending.Count >= maxPending)
        {
            throw new ServiceBusyException($"too many {what} are waiting for the database");
        }
        pending.Add(item);
        if (flushing >= maxFlushes)
        {
            return false;
        }
        flushing++;
        return true;
    }
}
