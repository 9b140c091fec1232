using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Queue.Core.Data;
using Queue.Core.Hosting;

namespace Queue.Core.Claims;

/// <summary>
/// Groups concurrent completions into one transaction: at a few thousand completions a second, one commit (and one
/// update of each job's counters) per batch instead of per item is what keeps up with the database's fsync rate.
/// Each caller still gets its own outcome, and its answer only after the commit; a batch that fails is redone one
/// completion per transaction (<see cref="GroupedWrites{TIn, TOut}"/>), so one bad lease never fails the others.
/// </summary>
public sealed partial class CompletionBatcher
{
    private readonly GroupedWrites<LeaseRef, FinishOutcome> writes;

    public CompletionBatcher(LeaseService leases, IOptions<ClaimOptions> options, WorkStats stats, BackgroundWork host, ILogger<CompletionBatcher> logger)
    {
        var o = options.Value;
        writes = new(host, async (batch, ct) =>
        {
            var (outcomes, byTenant) = await leases.CompleteAsync(batch, ct);
            foreach (var (tenant, n) in byTenant)
            {
                stats.Completed(tenant, n);
            }
            return outcomes;
        }, _ => 0, new GroupLimits(o.MaxPending, o.MaxConcurrentFlushes, Math.Max(o.MaxBatch, 64), long.MaxValue, o.DatabaseWaitMilliseconds),
            "completions", (ex, n) => LogFlushFailed(logger, ex, n));
    }

    /// <summary>
    /// A caller that leaves while its completion is still queued takes it back; once in a transaction it is written
    /// whether or not the caller waits, and the worker's retry with the same token is confirmed with 204.
    /// </summary>
    public Task<FinishOutcome> CompleteAsync(LeaseRef lease, CancellationToken ct) => writes.RunAsync(lease, ct);

    [LoggerMessage(EventId = 3002, Level = LogLevel.Warning, Message = "A completion transaction for {Count} leases failed; writing them one by one")]
    private static partial void LogFlushFailed(ILogger logger, Exception exception, int count);
}
