using Queue.Core.Hosting;

namespace Queue.Core.Data;

/// <summary>
/// The queue in front of every group commit of this process (claims, completions, job creations, small uploads):
/// callers queue an operation, and flush loops, at most <c>maxFlushes</c> at once, take a batch at a time and write it
/// in one transaction. Admission is bounded, so a slow database gets 503 at once instead of a backlog. The loops are
/// counted, so the host waits for the transactions in flight when it stops (<see cref="BackgroundWork"/>).
/// </summary>
/// <remarks>
/// The flush delegate owns its batch's outcome: it hands each caller its result or its error. An exception it lets
/// escape is reported to <c>failed</c> and the loop goes on, so queued operations are never stranded.
/// </remarks>
internal sealed class GroupCommitQueue<T> : IDrainable
{
    private readonly Lock gate = new();
    private readonly List<T> pending = [];
    private readonly string what;
    private readonly int maxPending;
    private readonly int maxFlushes;
    private readonly Func<IReadOnlyList<T>, int> batchSize;
    private readonly Func<List<T>, Task> flush;
    private readonly Action<Exception, int> failed;
    private readonly Predicate<T>? gone;
    private int flushing;
    private TaskCompletionSource? idle;
    private Func<int>? gatherTarget;
    private TimeSpan gatherFor;
    private TaskCompletionSource? gathered;
    private int gatherAt;

    /// <summary>
    /// Before taking a batch, wait up to <paramref name="within"/> until <paramref name="target"/>() operations are
    /// queued, so callers who are about to come back join this transaction instead of the next.
    /// </summary>
    public void GatherUpTo(Func<int> target, TimeSpan within)
    {
        gatherTarget = target;
        gatherFor = within;
    }

    /// <param name="batchSize">How many operations from the head of the queue (never empty) the next batch takes; at least 1.</param>
    /// <param name="gone">Operations whose caller gave up before their batch was taken: dropped unwritten.</param>
    public GroupCommitQueue(BackgroundWork host, string what, int maxPending, int maxFlushes, Func<IReadOnlyList<T>, int> batchSize,
        Func<List<T>, Task> flush, Action<Exception, int> failed, Predicate<T>? gone = null)
    {
        this.what = what;
        this.maxPending = maxPending;
        this.maxFlushes = maxFlushes;
        this.batchSize = batchSize;
        this.flush = flush;
        this.failed = failed;
        this.gone = gone;
        host.Track(this);
    }

    /// <summary>Queues <paramref name="item"/>, or throws <see cref="ServiceBusyException"/> when too many wait already.</summary>
    public void Enqueue(T item)
    {
        lock (gate)
        {
            if (pending.Count >= maxPending)
            {
                throw new ServiceBusyException($"too many {what} are waiting for the database");
            }
            AddLocked(item);
        }
    }

    /// <summary>Takes <paramref name="item"/> out of the queue unless a batch has taken it already: true when it will never be written.</summary>
    public bool TryWithdraw(T item)
    {
        lock (gate)
        {
            return pending.Remove(item);
        }
    }

    /// <summary>Queues again an operation that was admitted before (a claim caller served a second time): no bound.</summary>
    public void Requeue(T item)
    {
        lock (gate)
        {
            AddLocked(item);
        }
    }

    private void AddLocked(T item)
    {
        pending.Add(item);
        if (gathered is not null && pending.Count >= gatherAt)
        {
            gathered.TrySetResult();
        }
        StartLocked();
    }

    /// <summary>Completes when no batch is queued or in flight (or <paramref name="ct"/> gives up).</summary>
    public Task DrainAsync(CancellationToken ct)
    {
        lock (gate)
        {
            if (flushing == 0)
            {
                return Task.CompletedTask;
            }
            idle ??= new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            return idle.Task.WaitAsync(ct);
        }
    }

    private void StartLocked()
    {
        if (flushing < maxFlushes)
        {
            flushing++;
            _ = Task.Run(FlushLoopAsync, CancellationToken.None);
        }
    }

    /// <summary>Waits, before a batch is taken, until the gather target is queued or the gather time is up (see <see cref="GatherUpTo"/>).</summary>
    private async Task GatherAsync()
    {
        Task enough;
        lock (gate)
        {
            // One loop gathers at a time; with more flushes allowed, the others take what is there.
            var target = gatherTarget!();
            if (gathered is not null || pending.Count == 0 || pending.Count >= target)
            {
                return;
            }
            gatherAt = target;
            gathered = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            enough = gathered.Task;
        }
        // When the callers do not all come back in time, the batch goes with those that did. The time running out is
        // the common case, not an error: awaited without throwing, it costs no exception per transaction.
        await enough.WaitAsync(gatherFor).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        lock (gate)
        {
            gathered = null;
        }
    }

    private async Task FlushLoopAsync()
    {
        while (true)
        {
            if (gatherTarget is not null)
            {
                await GatherAsync();
            }
            List<T> batch;
            lock (gate)
            {
                if (gone is not null)
                {
                    pending.RemoveAll(gone);
                }
                if (pending.Count == 0)
                {
                    if (--flushing == 0)
                    {
                        idle?.TrySetResult();
                        idle = null;
                    }
                    return;
                }
                var n = Math.Clamp(batchSize(pending), 1, pending.Count);
                batch = pending.GetRange(0, n);
                pending.RemoveRange(0, n);
            }
            try
            {
                await flush(batch);
            }
#pragma warning disable CA1031 // the loop must outlive any one batch, or the operations queued behind it would wait forever
            catch (Exception ex)
#pragma warning restore CA1031
            {
                failed(ex, batch.Count);
            }
        }
    }
}
