using System.Collections.Concurrent;
using System.Diagnostics;

namespace Queue.Client;

/// <summary>The loop behind <see cref="QueueClient.WorkAsync"/>: one long-poll for all free slots, one task per item.</summary>
internal sealed class QueueWorker(QueueClient client, IReadOnlyList<string> tasks, Func<WorkItem, CancellationToken, Task> handler,
    int concurrency, WorkOptions options)
{
    private readonly ConcurrentDictionary<long, Task> running = new();
    private long lastActivity = Stopwatch.GetTimestamp();

    public async Task RunAsync(CancellationToken ct)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(concurrency, 1);
        using var slots = new SemaphoreSlim(concurrency);
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
                    running[item.Id] = RunOneAsync(item, slots, grace.Token);
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

    private async Task RunOneAsync(LeasedItem item, SemaphoreSlim slots, CancellationToken grace)
    {
        await Task.Yield();
        try
        {
            var (outcome, error) = await HandleAsync(item, grace);
            options.OnFinished?.Invoke(new WorkItem(client, item), outcome, error);
        }
        finally
        {
            running.TryRemove(item.Id, out _);
            Touch();
            slots.Release();
        }
    }

    private async Task<(WorkOutcome, Exception?)> HandleAsync(LeasedItem item, CancellationToken grace)
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
        if (lost)
        {
            return (WorkOutcome.LeaseLost, error);
        }
        // The finishing call must still go out after a Ctrl-C; it is bounded on its own instead.
        using var finish = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        try
        {
            if (error is OperationCanceledException && grace.IsCancellationRequested)
            {
                await client.FailAsync(item, "released: the worker shut down before finishing", retry: true, finish.Token);
                return (WorkOutcome.Released, error);
            }
            if (error is null)
            {
                await client.CompleteAsync(item, finish.Token);
                return (WorkOutcome.Completed, null);
            }
            await client.FailAsync(item, error.Message, retry: !options.IsPermanent(error), finish.Token);
            return (WorkOutcome.Failed, error);
        }
        catch (Exception e) when (e is QueueApiException or OperationCanceledException)
        {
            // Stale lease, or the service stayed unreachable: the lease expires and the item is handed out again.
            return (WorkOutcome.LeaseLost, e);
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
