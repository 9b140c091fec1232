using Quartz;
using Queue.Core.Admin;
using Queue.Core.Claims;
using Queue.Core.Jobs;
using Queue.Core.Maintenance;
using Queue.Core.Ordering;

namespace Queue.Scheduler.Jobs;

/// <summary>Purges finished jobs' items and documents after the retention period, in small batches.</summary>
[DisallowConcurrentExecution]
public sealed class RetentionJob(RetentionService retention) : IJob
{
    public static readonly JobKey Key = new("retention", "maintenance");

    public async ValueTask Execute(IJobExecutionContext context, CancellationToken cancellationToken)
    {
        var r = await retention.RunAsync(cancellationToken);
        SchedulerMetrics.RetentionItems.Inc(r.Items);
        SchedulerMetrics.RetentionDocuments.Inc(r.Documents);
    }
}

/// <summary>Deletes expired idempotency records.</summary>
[DisallowConcurrentExecution]
public sealed class IdempotencyCleanupJob(IdempotencyCleanup cleanup) : IJob
{
    public static readonly JobKey Key = new("idempotency-cleanup", "maintenance");

    public async ValueTask Execute(IJobExecutionContext context, CancellationToken cancellationToken) =>
        SchedulerMetrics.IdempotencyDeleted.Inc(await cleanup.RunAsync(cancellationToken));
}

/// <summary>The per-minute, per-tenant snapshot for the Admin dashboard.</summary>
[DisallowConcurrentExecution]
public sealed class SnapshotJob(SnapshotService snapshots) : IJob
{
    public static readonly JobKey Key = new("snapshot", "maintenance");

    public async ValueTask Execute(IJobExecutionContext context, CancellationToken cancellationToken)
    {
        if (await snapshots.TakeAsync(context.ScheduledFireTimeUtc ?? context.FireTimeUtc, cancellationToken))
        {
            SchedulerMetrics.Snapshots.Inc();
        }
    }
}

/// <summary>Switches expired overrides off between rewrites, so an override ends when it expires, not at the next boundary.</summary>
[DisallowConcurrentExecution]
public sealed class OverrideSweepJob(OrderingRewriter rewriter) : IJob
{
    public static readonly JobKey Key = new("override-sweep", "ordering");

    public async ValueTask Execute(IJobExecutionContext context, CancellationToken cancellationToken) =>
        SchedulerMetrics.OverridesExpired.Inc(await rewriter.ExpireOverridesAsync(cancellationToken));
}

/// <summary>Cancels the expired leases of cancelled jobs.</summary>
[DisallowConcurrentExecution]
public sealed class CancelledLeaseJob(CancelledLeaseSweep sweep) : IJob
{
    public static readonly JobKey Key = new("cancelled-leases", "maintenance");

    public async ValueTask Execute(IJobExecutionContext context, CancellationToken cancellationToken) =>
        await sweep.RunAsync(cancellationToken);
}
