namespace Queue.Core.Data;

/// <summary>The database is too slow or too busy right now: answer 503 with Retry-After rather than queue without limit.</summary>
public class ServiceBusyException(string message, Exception? inner = null) : Exception(message, inner);

/// <summary>
/// The caller's grouped write was already in a transaction when the caller had to answer (its wait ran out, or it went
/// away): it may still commit. <see cref="Landing"/> completes with what it wrote, or fails if nothing landed; whoever
/// holds an Idempotency-Key for it must keep the key until then (docs/DESIGN.md "Writes whose outcome is not known yet").
/// </summary>
public sealed class WriteStillRunningException(string message, Task landing) : ServiceBusyException(message)
{
    public Task Landing { get; } = landing;

    /// <summary><see cref="Landing"/> with the write's own result type.</summary>
    public Task<T> LandingOf<T>() => (Task<T>)Landing;
}

/// <summary>
/// A transaction's COMMIT was sent and no answer came back, and whether it committed could not be found out either (the
/// database stayed out of reach): the write may have landed, so it is neither redone nor reported as not done.
/// </summary>
public sealed class CommitOutcomeUnknownException(string message, Exception inner) : ServiceBusyException(message, inner);
