using Dapper;
using MySqlConnector;
using Queue.Core.Audit;
using Queue.Core.Data;
using Queue.Core.Jobs;
using Queue.Core.Ordering;
using Queue.Core.Sql;

namespace Queue.Core.Admin;

public enum ActionStatus
{
    /// <summary>The change was made and audited.</summary>
    Done,

    /// <summary>Nothing to do (already blocked, no dead items, already finished); nothing was written.</summary>
    Unchanged,

    /// <summary>The job is in a state where this action makes no sense (for example a cancelled job); nothing was written.</summary>
    Rejected,

    NotFound,
}

public sealed record ActionOutcome(ActionStatus Status, string Message, long Items = 0);

/// <summary>
/// What technicians do to a job: overrides, blocks, requeues and cancels. Each runs in one READ COMMITTED transaction
/// that locks the job row first, changes the items, counters and ordering lanes together, and writes the audit entry
/// (before and after) in the same transaction, so an action and its record never disagree.
/// </summary>
public sealed class JobActions(MySqlDataSource db, OrderingLanes lanes, TimeProvider clock)
{
    public const int MaxReasonLength = 500;
    public const long MinPriority = -1_000_000_000_000;
    public const long MaxPriority = 1_000_000_000_000;
    public static readonly TimeSpan DefaultOverrideLifetime = TimeSpan.FromHours(24);
    public static readonly TimeSpan MaxOverrideLifetime = TimeSpan.FromDays(30);

    public async Task<ActionOutcome> SetOverrideAsync(long jobId, Actor actor, long priority, string? reason, DateTime expiresAt, CancellationToken ct)
    {
        var now = Now;
        var errors = new Dictionary<string, string[]>();
        if (priority is < MinPriority or > MaxPriority)
        {
            errors["priority"] = [$"Enter a whole number from {MinPriority} to {MaxPriority}; lower values are served first."];
        }
        if (ReasonError(reason) is { } r)
        {
            errors["reason"] = [r];
        }
        if (expiresAt <= now)
        {
            errors["expiresAt"] = ["The expiry must be in the future."];
        }
        else if (expiresAt > now + MaxOverrideLifetime)
        {
            errors["expiresAt"] = [$"An override may last at most {MaxOverrideLifetime.TotalDays:0} days."];
        }
        if (errors.Count > 0)
        {
            throw new ValidationException(errors);
        }
        return await InJobTransactionAsync(jobId, async (conn, tx, job, c) =>
        {
            if (job.State == JobStates.Cancelled)
            {
                return new ActionOutcome(ActionStatus.Rejected, "The job is cancelled: nothing of it will be served, so there is nothing to prioritise.");
            }
            var before = await SnapshotAsync(conn, tx, job, c);
            await conn.ExecuteAsync(new CommandDefinition(AdminSql.DeactivateOverrides, new { JobId = jobId, Now = now }, tx, cancellationToken: c));
            await conn.ExecuteAsync(new CommandDefinition(AdminSql.InsertOverride, new
            {
                JobId = jobId,
                Priority = priority,
                Reason = reason!.Trim(),
                actor.TechnicianId,
                ExpiresAt = expiresAt,
                Now = now,
            }, tx, cancellationToken: c));
            await lanes.ApplyOverrideAsync(conn, tx, jobId, priority, c);
            var after = await SnapshotAsync(conn, tx, job, c);
            await AuditLog.WriteAsync(conn, tx, now, actor, AuditActions.OverrideSet, jobId, job.TenantId, reason.Trim(), AuditLog.Json(before), AuditLog.Json(after), c);
            return new ActionOutcome(ActionStatus.Done, $"Override set: job {jobId} now has value {priority} until {expiresAt:yyyy-MM-dd HH:mm} UTC.");
        }, ct);
    }

    public async Task<ActionOutcome> ClearOverrideAsync(long jobId, Actor actor, string? reason, CancellationToken ct)
    {
        RequireReason(reason);
        var now = Now;
        return await InJobTransactionAsync(jobId, async (conn, tx, job, c) =>
        {
            var before = await SnapshotAsync(conn, tx, job, c);
            var cleared = await conn.ExecuteAsync(new CommandDefinition(AdminSql.DeactivateOverrides, new { JobId = jobId, Now = now }, tx, cancellationToken: c));
            if (cleared == 0 && before.Mode != OrderingLanes.ModeOverride)
            {
                return new ActionOutcome(ActionStatus.Unchanged, "The job has no override to clear.");
            }
            await lanes.ClearOverrideAsync(conn, tx, jobId, c);
            var after = await SnapshotAsync(conn, tx, job, c);
            await AuditLog.WriteAsync(conn, tx, now, actor, AuditActions.OverrideClear, jobId, job.TenantId, reason!.Trim(), AuditLog.Json(before), AuditLog.Json(after), c);
            return new ActionOutcome(ActionStatus.Done, $"Override cleared: job {jobId} is back to its {after.Mode ?? "normal"} value.");
        }, ct);
    }

    public async Task<ActionOutcome> SetBlockedAsync(long jobId, Actor actor, bool blocked, string? reason, CancellationToken ct)
    {
        RequireReason(reason);
        var now = Now;
        return await InJobTransactionAsync(jobId, async (conn, tx, job, c) =>
        {
            if (job.Blocked == blocked)
            {
                return new ActionOutcome(ActionStatus.Unchanged, blocked ? "The job is already blocked." : "The job is not blocked.");
            }
            if (blocked && job.State == JobStates.Cancelled)
            {
                return new ActionOutcome(ActionStatus.Rejected, "The job is cancelled: it is never served anyway.");
            }
            var before = await SnapshotAsync(conn, tx, job, c);
            await conn.ExecuteAsync(new CommandDefinition(AdminSql.SetJobBlocked, new { JobId = jobId, Blocked = blocked ? 1 : 0, Now = now }, tx, cancellationToken: c));
            await lanes.SetBlockedAsync(conn, tx, jobId, blocked, c);
            if (!blocked)
            {
                // Claimers skipped the lanes while blocked and may not have refreshed their hint.
                await conn.ExecuteAsync(new CommandDefinition(OrderingSql.WakeJob, new { JobId = jobId, Now = now }, tx, cancellationToken: c));
            }
            var after = await SnapshotAsync(conn, tx, job with { Blocked = blocked }, c);
            await AuditLog.WriteAsync(conn, tx, now, actor, blocked ? AuditActions.Block : AuditActions.Unblock, jobId, job.TenantId, reason!.Trim(),
                AuditLog.Json(before), AuditLog.Json(after), c);
            return new ActionOutcome(ActionStatus.Done, blocked ? $"Job {jobId} is blocked: no worker gets its items until it is unblocked." : $"Job {jobId} is unblocked.");
        }, ct);
    }

    /// <summary>
    /// Dead items go back to ready, due now, with their attempts reset; <paramref name="itemId"/> null means every dead
    /// item of the job. A done job becomes closed again, and its lanes come back.
    /// </summary>
    public async Task<ActionOutcome> RequeueDeadAsync(long jobId, long? itemId, Actor actor, string? reason, CancellationToken ct)
    {
        RequireReason(reason);
        var now = Now;
        return await InJobTransactionAsync(jobId, async (conn, tx, job, c) =>
        {
            if (job.State == JobStates.Cancelled)
            {
                return new ActionOutcome(ActionStatus.Rejected, "The job is cancelled: its items cannot be requeued.");
            }
            var before = await SnapshotAsync(conn, tx, job, c);
            var count = itemId is { } id
                ? await conn.ExecuteAsync(new CommandDefinition(AdminSql.RequeueDeadItem, new { JobId = jobId, ItemId = id, Now = now }, tx, cancellationToken: c))
                : await conn.ExecuteAsync(new CommandDefinition(AdminSql.RequeueDeadItems, new { JobId = jobId, Now = now }, tx, cancellationToken: c));
            if (count == 0)
            {
                return new ActionOutcome(ActionStatus.Unchanged, itemId is null ? "The job has no dead items." : $"Item {itemId} is not a dead item of this job.");
            }
            await conn.ExecuteAsync(new CommandDefinition(AdminSql.AfterRequeue, new { JobId = jobId, Count = count, Now = now }, tx, cancellationToken: c));
            await lanes.RestoreAsync(conn, tx, jobId, c);
            var fresh = await LockJobAsync(conn, tx, jobId, c);
            var after = await SnapshotAsync(conn, tx, fresh!, c) with { ItemsChanged = count };
            await AuditLog.WriteAsync(conn, tx, now, actor, AuditActions.Requeue, jobId, job.TenantId, reason!.Trim(), AuditLog.Json(before), AuditLog.Json(after), c);
            return new ActionOutcome(ActionStatus.Done, count == 1 ? "1 dead item is ready again." : $"{count} dead items are ready again.", count);
        }, ct);
    }

    /// <summary>
    /// The customer DELETE's semantics: ready items (and expired leases) become cancelled and are never handed out
    /// again, the lanes go, the job is cancelled. Live leases may still complete.
    /// </summary>
    public async Task<ActionOutcome> CancelAsync(long jobId, Actor actor, string? reason, CancellationToken ct)
    {
        RequireReason(reason);
        var now = Now;
        return await InJobTransactionAsync(jobId, async (conn, tx, job, c) =>
        {
            if (job.State is JobStates.Done or JobStates.Cancelled)
            {
                return new ActionOutcome(ActionStatus.Unchanged, $"The job is already {JobStates.Name(job.State)}.");
            }
            var before = await SnapshotAsync(conn, tx, job, c);
            // The customer DELETE's own statements (JobSql), inside this transaction so the audit row commits with them.
            await conn.ExecuteAsync(new CommandDefinition(JobSql.CancelJob, new { JobId = jobId, job.TenantId, Now = now }, tx, cancellationToken: c));
            var count = await Jobs.JobCancellation.CancelReadyItemsAsync(conn, tx, jobId, now, c);
            await OrderingLanes.RemoveJobAsync(conn, tx, jobId, c);
            var fresh = await LockJobAsync(conn, tx, jobId, c);
            var after = await SnapshotAsync(conn, tx, fresh!, c) with { ItemsChanged = count };
            await AuditLog.WriteAsync(conn, tx, now, actor, AuditActions.Cancel, jobId, job.TenantId, reason!.Trim(), AuditLog.Json(before), AuditLog.Json(after), c);
            return new ActionOutcome(ActionStatus.Done, $"Job {jobId} is cancelled; {count} items will not be handed out.", count);
        }, ct);
    }

    public static string? ReasonError(string? reason)
    {
        if (string.IsNullOrWhiteSpace(reason))
        {
            return "Give a reason: it is shown in the queue view and kept in the audit log.";
        }
        return reason.Trim().Length > MaxReasonLength ? $"Keep the reason to {MaxReasonLength} characters or fewer." : null;
    }

    private static void RequireReason(string? reason)
    {
        if (ReasonError(reason) is { } r)
        {
            throw new ValidationException(new Dictionary<string, string[]> { ["reason"] = [r] });
        }
    }

    private DateTime Now => clock.GetUtcNow().UtcDateTime;

    private async Task<ActionOutcome> InJobTransactionAsync(long jobId,
        Func<MySqlConnection, MySqlTransaction, LockedJob, CancellationToken, Task<ActionOutcome>> body, CancellationToken ct)
    {
        var outcome = await Retry.OnDeadlockAsync(async c =>
        {
            await using var conn = await db.OpenConnectionAsync(c);
            await using var tx = await conn.BeginReadCommittedAsync(c);
            var job = await LockJobAsync(conn, tx, jobId, c);
            if (job is null)
            {
                return new ActionOutcome(ActionStatus.NotFound, $"There is no job {jobId}.");
            }
            var outcome = await body(conn, tx, job, c);
            if (outcome.Status == ActionStatus.Done)
            {
                // Every action here can take back or outrank claimed-ahead items: Api processes drop their buffers.
                await conn.ExecuteAsync(new CommandDefinition(ClaimSql.BumpEpoch, transaction: tx, cancellationToken: c));
                await tx.CommitAsync(c);
            }
            return outcome;
        }, ct);
        if (outcome.Status == ActionStatus.Done)
        {
            // Not answered before every Api process reads past the bump (docs/DESIGN.md "Claim-ahead that keeps the policy").
            await EpochLease.SettleAsync(ct);
        }
        return outcome;
    }

    private static Task<LockedJob?> LockJobAsync(MySqlConnection conn, MySqlTransaction tx, long jobId, CancellationToken ct) =>
        conn.QuerySingleOrDefaultAsync<LockedJob>(new CommandDefinition(AdminSql.LockJob, new { JobId = jobId }, tx, cancellationToken: ct));

    private static async Task<JobSnapshot> SnapshotAsync(MySqlConnection conn, MySqlTransaction tx, LockedJob job, CancellationToken ct)
    {
        var lane = await conn.QuerySingleOrDefaultAsync<LaneValue>(new CommandDefinition(OrderingSql.CurrentValue, new { JobId = job.Id }, tx, cancellationToken: ct));
        var ov = await conn.QuerySingleOrDefaultAsync<OverrideInfo>(new CommandDefinition(AdminSql.CurrentOverride, new { JobId = job.Id }, tx, cancellationToken: ct));
        return new JobSnapshot(
            JobStates.Name(job.State),
            job.Blocked,
            job.ItemsTotal - job.ItemsDone - job.ItemsDead - job.ItemsCancelled,
            job.ItemsDead,
            job.ItemsCancelled,
            lane is null ? null : OrderingBand.Shown(lane.Value),
            lane?.Mode,
            ov is null ? null : new OverrideSnapshot(ov.Priority, ov.Reason, ov.ExpiresAt, ov.SetBy));
    }

    private sealed record LockedJob
    {
        public long Id { get; init; }

        public long TenantId { get; init; }

        public int State { get; init; }

        public bool Blocked { get; init; }

        public long ItemsTotal { get; init; }

        public long ItemsDone { get; init; }

        public long ItemsDead { get; init; }

        public long ItemsCancelled { get; init; }
    }

    private sealed class LaneValue
    {
        public long Value { get; init; }

        public string Mode { get; init; } = "";
    }
}
