using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Queue.Core.Claims;

/// <summary>
/// Groups concurrent completions into one transaction: at a few thousand completions a second, one commit (and one
/// update of each job's counters) per batch instead of per item is what keeps up with the database's fsync rate.
/// Each caller still gets its own outcome, and its answer only after the commit.
/// </summary>
public sealed partial class CompletionBatcher(ClaimEngine engine, IOptions<ClaimOptions> options, WorkStats stats, ILogger<CompletionBatcher> logger)
{
    private readonly Lock gate = new();
    private readonly List<Op> pending = [];
    private int flushing;

    public async Task<FinishOutcome> CompleteAsync(LeaseRef lease, CancellationToken ct)
    {
        var o = options.Value;
        var op = new Op(lease);
        bool start;
        lock (gate)
        {
            start = GroupCommit.Enqueue(pending, op, ref flushing, o, "completions");
        }
        if (start)
        {
            _ = Task.Run(FlushLoopAsync, CancellationToken.None);
        }
        try
        {
            // Not cancelled with the request: once queued, the completion is written whether or not the caller waits.
            return await op.Result.Task.WaitAsync(TimeSpan.FromMilliseconds(o.DatabaseWaitMilliseconds), ct);
        }
        catch (TimeoutException)
        {
            throw new ServiceBusyException("the database did not answer the completion in time");
        }
    }

    private async Task FlushLoopAsync()
    {
        var max = Math.Max(options.Value.MaxBatch, 64);
        while (true)
        {
            List<Op> batch;
            lock (gate)
            {
                if (pending.Count == 0)
                {
                    flushing--;
                    return;
                }
                var n = Math.Min(pending.Count, max);
                batch = pending.GetRange(0, n);
                pending.RemoveRange(0, n);
            }
            try
            {
                var (outcomes, byTenant) = await engine.CompleteAsync(batch.Select(b => b.Lease).ToList(), CancellationToken.None);
                foreach (var (tenant, n) in byTenant)
                {
                    stats.Completed(tenant, n);
                }
                for (var i = 0; i < batch.Count; i++)
                {
                    batch[i].Result.TrySetResult(outcomes[i]);
                }
            }
            catch (Exception ex)
            {
                LogFlushFailed(logger, ex, batch.Count);
                foreach (var op in batch)
                {
                    op.Result.TrySetException(ex);
                }
            }
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "A completion transaction for {Count} leases failed")]
    private static partial void LogFlushFailed(ILogger logger, Exception exception, int count);

    private sealed class Op(LeaseRef lease)
    {
        public LeaseRef Lease { get; } = lease;

        public TaskCompletionSource<FinishOutcome> Result { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);
    }
}
