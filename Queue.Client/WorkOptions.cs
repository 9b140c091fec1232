namespace Queue.Client;

/// <summary>How <see cref="QueueClient.WorkAsync"/> claims, holds and lets go of items.</summary>
public sealed class WorkOptions
{
    /// <summary>Shown in the Admin's worker list.</summary>
    public string Worker { get; set; } = Environment.MachineName;

    /// <summary>The lease asked for, and renewed at a third of it while the handler runs (10 s to 1 h).</summary>
    public TimeSpan Lease { get; set; } = TimeSpan.FromMinutes(1);

    /// <summary>The long-poll of /next (at most 30 s).</summary>
    public TimeSpan PollWait { get; set; } = TimeSpan.FromSeconds(20);

    /// <summary>Return after this long with no item claimed and none running; null works until cancelled.</summary>
    public TimeSpan? IdleExit { get; set; }

    /// <summary>After cancellation, how long running handlers may still finish before their items are released.</summary>
    public TimeSpan ShutdownGrace { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>A handler's exception of this type fails the item for good (<c>retry: false</c>).</summary>
    public Func<Exception, bool> IsPermanent { get; set; } = e => e is PermanentWorkException;

    /// <summary>
    /// True (the default): a slot claims its next item as soon as its handler returns, while that item's complete or
    /// fail is still in flight (up to <see cref="FinishesInFlight"/> such calls at once). A worker of one slot then does
    /// about twice the items per second (docs/DESIGN.md "Peer speed"). False: the next claim waits until the service has
    /// answered the complete or fail, and with <see cref="ClaimWithFinish"/> comes in that same answer. Either way the
    /// call is awaited before <see cref="QueueClient.WorkAsync"/> returns, and a completion the service never confirms
    /// leaves the item leased until its lease expires, to be handed out again.
    /// </summary>
    public bool FinishInBackground { get; set; } = true;

    /// <summary>
    /// With <see cref="FinishInBackground"/>, how many completes and fails may be unanswered at once, over all slots;
    /// a slot whose handler returns beyond that waits for one of them before it claims again. Null (the default): the
    /// concurrency + 4, the bound graphile-worker's fire-and-forget completions have from its pool of concurrency + 4
    /// connections. The service groups the calls that arrive together into one transaction, so a slot's completions
    /// need not wait for each other's commit.
    /// </summary>
    public int? FinishesInFlight { get; set; }

    /// <summary>
    /// True (the default): when a slot finishes its item and waits for the answer (<see cref="FinishInBackground"/>
    /// false), the complete or fail also claims the slot's next item, in one exchange with the service instead of a
    /// finish and a <c>/next</c> (CONTRACT v1.3, <see cref="QueueClient.CompleteAndClaimAsync"/>); the slot runs that item
    /// at once, or goes back to the long-poll when none came. It claims nothing once the worker is stopping. False: a
    /// finish, then the long-poll, as before v1.3.
    /// </summary>
    public bool ClaimWithFinish { get; set; } = true;

    /// <summary>Called with each finished item and how it ended, e.g. for logs and counters.</summary>
    public Action<WorkItem, WorkOutcome, Exception?>? OnFinished { get; set; }
}

public enum WorkOutcome
{
    Completed,
    Failed,

    /// <summary>Handed back for someone else (shutdown); it counts as a failed attempt on the server.</summary>
    Released,

    /// <summary>The lease was lost (expired and reclaimed): the result was dropped.</summary>
    LeaseLost,
}

/// <summary>Thrown by a handler: the item can never succeed, so it goes dead at once.</summary>
public sealed class PermanentWorkException : Exception
{
    public PermanentWorkException()
    {
    }

    public PermanentWorkException(string message) : base(message)
    {
    }

    public PermanentWorkException(string message, Exception inner) : base(message, inner)
    {
    }
}

/// <summary>An item a handler works on: its fields, and its document.</summary>
public sealed class WorkItem(QueueClient client, LeasedItem item)
{
    public LeasedItem Item { get; } = item;

    /// <summary>The document's bytes, streamed under the item's lease.</summary>
    public Task<Stream> OpenDocumentAsync(CancellationToken ct) => client.OpenItemDocumentAsync(Item, ct);
}
