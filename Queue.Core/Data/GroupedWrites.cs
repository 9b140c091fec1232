using Queue.Core.Hosting;

namespace Queue.Core.Data;

/// <summary>The bounds of one group-commit queue (see <see cref="GroupedWrites{TIn, TOut}"/>).</summary>
/// <param name="MaxPending">Operations waiting, beyond which new ones get 503 at once.</param>
/// <param name="MaxFlushes">Transactions in flight at once.</param>
/// <param name="MaxBatch">Operations per transaction at most.</param>
/// <param name="MaxBytes">About this many bytes per transaction at most (always at least one operation).</param>
/// <param name="WaitMilliseconds">How long a caller waits for its transaction before it answers 503 with Retry-After.</param>
internal sealed record GroupLimits(int MaxPending, int MaxFlushes, int MaxBatch, long MaxBytes, int WaitMilliseconds);

/// <summary>
/// Group commit for one kind of write (job creations, small uploads, completions): concurrent callers of this process
/// queue their operation, and a flush loop writes up to <see cref="GroupLimits.MaxBatch"/> of them (and about
/// <see cref="GroupLimits.MaxBytes"/>) in one transaction. Each caller keeps its own outcome: when a grouped
/// transaction fails for any reason but a deadlock (the writer retries those whole), its operations are written again
/// one transaction each, so one caller's constraint error or bad data never fails the others. That redo is only for a
/// transaction that certainly did not commit: a writer whose COMMIT got no answer finds out (<see cref="CommitCheck"/>)
/// and either returns its results or throws <see cref="CommitOutcomeUnknownException"/>, which is handed to every caller
/// and never redone. A caller whose wait runs out (or who leaves) before its operation was taken withdraws it, and
/// nothing is written; once taken, it may still commit, and the caller gets <see cref="WriteStillRunningException"/>
/// with the outcome to come. Admission is bounded: a slow database gets 503 at once, not a backlog.
/// </summary>
internal sealed class GroupedWrites<TIn, TOut>
{
    private readonly Func<IReadOnlyList<TIn>, CancellationToken, Task<TOut[]>> write;
    private readonly Func<TIn, long> bytesOf;
    private readonly GroupLimits limits;
    private readonly string what;
    private readonly Action<Exception, int> groupFailed;
    private readonly GroupCommitQueue<Op> queue;

    public GroupedWrites(BackgroundWork host, Func<IReadOnlyList<TIn>, CancellationToken, Task<TOut[]>> write, Func<TIn, long> bytesOf,
        GroupLimits limits, string what, Action<Exception, int> groupFailed)
    {
        this.write = write;
        this.bytesOf = bytesOf;
        this.limits = limits;
        this.what = what;
        this.groupFailed = groupFailed;
        queue = new(host, what, limits.MaxPending, limits.MaxFlushes, BatchSize, FlushAsync, groupFailed);
    }

    public async Task<TOut> RunAsync(TIn input, CancellationToken ct)
    {
        var op = new Op(input);
        queue.Enqueue(op);
        try
        {
            return await op.Result.Task.WaitAsync(TimeSpan.FromMilliseconds(limits.WaitMilliseconds), ct);
        }
        catch (Exception ex) when (ex is TimeoutException or OperationCanceledException)
        {
            if (op.Result.Task.IsCompleted)
            {
                return await op.Result.Task;
            }
            if (queue.TryWithdraw(op))
            {
                // Never taken, so never written: the caller may say so, and an Idempotency-Key may be freed.
                if (ex is TimeoutException)
                {
                    throw new ServiceBusyException($"the database did not answer the {what} in time");
                }
                throw;
            }
            throw new WriteStillRunningException($"the database did not answer the {what} in time", op.Result.Task);
        }
    }

    /// <summary>Up to <see cref="GroupLimits.MaxBatch"/> operations and about <see cref="GroupLimits.MaxBytes"/>; at least one.</summary>
    private int BatchSize(IReadOnlyList<Op> pending)
    {
        var n = 1;
        var bytes = bytesOf(pending[0].Input);
        while (n < pending.Count && n < limits.MaxBatch && bytes + bytesOf(pending[n].Input) <= limits.MaxBytes)
        {
            bytes += bytesOf(pending[n].Input);
            n++;
        }
        return n;
    }

    private async Task FlushAsync(List<Op> batch)
    {
        if (batch.Count == 1)
        {
            await WriteAloneAsync(batch[0]);
            return;
        }
        TOut[] results;
        try
        {
            results = await write(batch.Select(b => b.Input).ToList(), CancellationToken.None);
        }
        catch (CommitOutcomeUnknownException unknown)
        {
            // The group may have committed: written again, each operation could land twice.
            groupFailed(unknown, batch.Count);
            foreach (var op in batch)
            {
                op.Result.TrySetException(unknown);
            }
            return;
        }
#pragma warning disable CA1031 // not swallowed: every operation of the group is written again on its own and gets its own outcome
        catch (Exception ex)
#pragma warning restore CA1031
        {
            groupFailed(ex, batch.Count);
            foreach (var op in batch)
            {
                await WriteAloneAsync(op);
            }
            return;
        }
        for (var i = 0; i < batch.Count; i++)
        {
            batch[i].Result.TrySetResult(results[i]);
        }
    }

    private async Task WriteAloneAsync(Op op)
    {
        try
        {
            op.Result.TrySetResult((await write([op.Input], CancellationToken.None))[0]);
        }
#pragma warning disable CA1031 // the error belongs to this one caller: it is handed to its task, never swallowed
        catch (Exception ex)
#pragma warning restore CA1031
        {
            op.Result.TrySetException(ex);
        }
    }

    private sealed class Op(TIn input)
    {
        public TIn Input { get; } = input;

        public TaskCompletionSource<TOut> Result { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);
    }
}
