using System.Collections.Concurrent;
using System.Diagnostics;

namespace Queue.Client;

/// <summary>The loop behind <see cref="QueueClient.WorkAsync"/>: one long-poll for all free slots, one task per item.</summary>
internal sealed class QueueWorker(QueueClient client, IReadOnlyList<string> tasks, Func<WorkItem, CancellationToken, Task> handler,
    int concurrency, WorkOptions options)
{
    /// <summary>The slots' running chains of items, by a number of their own (a chain goes on with the items its finishes claim).</summary>
    private readonly ConcurrentDictionary<long, Task> running = new();
    private long lastActivity = Stopwatch.GetTimestamp();
    private long chains;

    public async Task RunAsync(CancellationToken ct)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(concurrency, 1);
        using var slots = new SemaphoreSlim(concurrency);
        // Completions and fails still in flight after their slot went back to claiming.
        var finishes = options.FinishesInFlight ?? concurrency + 4;
        ArgumentOutOfRangeException.ThrowIfLessThan(finishes, 1, nameof(WorkOptions.FinishesInFlight));
        using var finishing = new SemaphoreSlim(finishes);
        // Running handlers outlive the caller's token by the grace period, so a Ctrl-C lets short work finish.
        using var grace = new CancellationTokenSource();
        await using var registration = ct.Register(() => grace.CancelAfter(options.ShutdownGrace));
        try
        {
            while (true)
            {
                await slots.WaitAsync(ct);
                var free = 1;
                while (free < Math.Min(concurrency, 100) && slots.Wait(0, CancellationToken.None))
                {
                    free++;
                }
                var wait = options.PollWait > TimeSpan.FromSeconds(30) ? TimeSpan.FromSeconds(30) : options.PollWait;
                if (options.IdleExit is { } idle)
                {
                    var left = idle - Stopwatch.GetElapsedTime(Interlocked.Read(ref lastActivity));
                    if (left <= TimeSpan.Zero && running.IsEmpty)
                    {
                        break;
                    }
                    wait = left < wait ? (left > TimeSpan.Zero ? left : TimeSpan.Zero) : wait;
                }
                var items = await client.ClaimAsync(tasks, free, wait, options.Lease, options.Worker, ct);
                if (free > items.Count)
                {
                    slots.Release(free - items.Count);
                }
                foreach (var item in items)
                {
                    Touch();
                    var chain = Interlocked.Increment(ref chains);
                    running[chain] = RunOneAsync(chain, item, slots, finishing, ct, grace.Token);
                }
            }
        }
        catch (OperationCanceledException) when (ct.IsCancellationRequested)
        {
            // Stop claiming; what is held is finished or released below.
        }
        await Task.WhenAll(running.Values);
    }

    private void Touch() => Interlocked.Exchange(ref lastActivity, Stopwatch.GetTimestamp());

    /// <summary>
    /// Runs the handler, then finishes the item. With <see cref="WorkOptions.FinishInBackground"/> the slot claims its
    /// next item as soon as the handler returns, while this item's complete or fail is still on its way: the claim and
    /// the completion then overlap instead of following each other (graphile-worker's workers do the same). The
    /// finishing call is still awaited before this task ends, so shutdown and <see cref="WorkOptions.OnFinished"/> see it.
    /// Without it, and with <see cref="WorkOptions.ClaimWithFinish"/>, the complete or fail claims the slot's next item
    /// in the same exchange (CONTRACT v1.3), and the slot goes on with that item; with none, it goes back to the long-poll.
    /// </summary>
    private async Task RunOneAsync(long chain, LeasedItem first, SemaphoreSlim slots, SemaphoreSlim finishing, CancellationToken stop, CancellationToken grace)
    {
        await Task.Yield();
        var holdsSlot = true;
        try
        {
            for (LeasedItem? item = first; item is not null;)
            {
                var (lost, error) = await RunHandlerAsync(item, grace);
                var outcome = WorkOutcome.LeaseLost;
                LeasedItem? next = null;
                if (!lost)
                {
                    if (options.FinishInBackground)
                    {
                        await finishing.WaitAsync(CancellationToken.None);
                        slots.Release();
                        holdsSlot = false;
                    }
                    try
                    {
                        (outcome, error, next) = await FinishAsync(item, error, claim: holdsSlot && options.ClaimWithFinish && !stop.IsCancellationRequested, grace);
                    }
                    finally
                    {
                        if (!holdsSlot)
                        {
                            finishing.Release();
                        }
                    }
                }
                options.OnFinished?.Invoke(new WorkItem(client, item), outcome, error);
                Touch();
                item = next;
            }
        }
        finally
        {
            running.TryRemove(chain, out _);
            Touch();
            if (holdsSlot)
            {
                slots.Release();
            }
        }
    }

    /// <summary>The handler, with the lease extended while it runs; whether the lease was lost meanwhile, and what it threw.</summary>
    private async Task<(bool Lost, Exception? Error)> RunHandlerAsync(LeasedItem item, CancellationToken grace)
    {
        using var handlerCts = CancellationTokenSource.CreateLinkedTokenSource(grace);
        using var extenderCts = new CancellationTokenSource();
        var lost = false;
        var extender = ExtendWhileRunningAsync(item, () => { lost = true; handlerCts.Cancel(); }, extenderCts.Token);
        Exception? error = null;
        try
        {
            await handler(new WorkItem(client, item), handlerCts.Token);
        }
#pragma warning disable CA1031 // whatever the handler throws fails the item; the worker loop must go on
        catch (Exception e)
#pragma warning restore CA1031
        {
            error = e;
        }
        await extenderCts.CancelAsync();
        await extender;
        return (lost, error);
    }

    /// <summary>
    /// Completes the item, or fails it with the handler's error (released when the worker shut down first); with
    /// <paramref name="claim"/> the same call claims the slot's next item (CONTRACT v1.3), returned as the third value.
    /// </summary>
    private async Task<(WorkOutcome, Exception?, LeasedItem?)> FinishAsync(LeasedItem item, Exception? error, bool claim, CancellationToken grace)
    {
        // The finishing call must still go out after a Ctrl-C; it is bounded on its own instead.
        using var finish = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        try
        {
            if (error is OperationCanceledException && grace.IsCancellationRequested)
            {
                await client.FailAsync(item, "released: the worker shut down before finishing", retry: true, finish.Token);
                return (WorkOutcome.Released, error, null);
            }
            IReadOnlyList<LeasedItem> next = [];
            if (error is null)
            {
                if (claim)
                {
                    next = await client.CompleteAndClaimAsync(item, tasks, 1, TimeSpan.Zero, options.Lease, options.Worker, finish.Token);
                }
                else
                {
                    await client.CompleteAsync(item, finish.Token);
                }
                return (WorkOutcome.Completed, null, next.Count > 0 ? next[0] : null);
            }
            var retry = !options.IsPermanent(error);
            if (claim)
            {
                next = await client.FailAndClaimAsync(item, error.Message, retry, tasks, 1, TimeSpan.Zero, options.Lease, options.Worker, finish.Token);
            }
            else
            {
                await client.FailAsync(item, error.Message, retry, finish.Token);
            }
            return (WorkOutcome.Failed, error, next.Count > 0 ? next[0] : null);
        }
        catch (Exception e) when (e is QueueApiException or OperationCanceledException)
        {
            // Stale lease, or the service stayed unreachable: the lease expires and the item is handed out again.
            return (WorkOutcome.LeaseLost, e, null);
        }
    }

    private async Task ExtendWhileRunningAsync(LeasedItem item, Action onLost, CancellationToken ct)
    {
        var every = options.Lease / 3;
        try
        {
            while (true)
            {
                await Task.Delay(every, ct);
                await client.ExtendAsync(item, options.Lease, ct);
            }
        }
        catch (OperationCanceledException) when (ct.IsCancellationRequested)
        {
            // The handler is done.
        }
        catch (QueueApiException e) when (e.IsStaleLease)
        {
            onLost();
        }
    }
}
