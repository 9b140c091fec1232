using System.Globalization;
using Microsoft.Extensions.Options;
using Quartz;
using Queue.Core.Ordering;

namespace Queue.Scheduler.Jobs;

/// <summary>
/// The ordering rewrite, fired at each period boundary by a one-shot trigger named after that boundary. Each firing
/// schedules the trigger of the next boundary before it returns, so the chain never depends on a repeat interval
/// (periods restart at local midnight, and need not divide a day) and a misfire is simply a late firing.
/// Exactly once per period: Quartz's cluster hands each trigger to one node, the job never runs twice at once, and
/// <see cref="OrderingRewriter"/> skips a period already in <c>rewrite_log</c> (a recovery rerun, a restart).
/// </summary>
[DisallowConcurrentExecution]
public sealed partial class ReorderJob(OrderingRewriter rewriter, OrderingCalendar calendar, TimeProvider clock, IOptions<SchedulerOptions> options,
    ILogger<ReorderJob> logger) : IJob
{
    public static readonly JobKey Key = new("ordering-rewrite", "ordering");

    public async ValueTask Execute(IJobExecutionContext context, CancellationToken cancellationToken)
    {
        var instance = context.Scheduler.SchedulerInstanceId;
        // A firing that replays one a killed node left unfinished is for that firing's boundary, not for now: Quartz
        // fires the replay when it notices the death, seconds later, with "now" as its scheduled time.
        var boundary = RecoveredBoundary(context) ?? context.ScheduledFireTimeUtc;
        Fired(logger, context.Trigger.Key.Name, context.ScheduledFireTimeUtc, context.Recovering, context.Recovering ? context.RecoveringTriggerKey?.Name : null, boundary);
        // The next boundary first: a rewrite that waits (its lanes' row locks held by a long transaction: 5 s lock
        // waits, retried up to 8 times) must not hold back the chain. Scheduled after the rewrite, a lane held through
        // the in-place rewrite's move into the band left no trigger for the next boundary for 40 s. A trigger due while
        // this firing still runs waits for it (DisallowConcurrentExecution), and fires late, as a misfire would.
        var chained = false;
        try
        {
            await ScheduleBoundaryAsync(context.Scheduler, NextBoundary(boundary), CancellationToken.None);
            chained = true;
        }
        catch (SchedulerException ex)
        {
            // The job store is out of reach now: the rewrite still runs, and the chain is tried again after it.
            ChainDeferred(logger, ex);
        }
        try
        {
            var result = await rewriter.RewriteAsync(instance, boundary, force: false, cancellationToken);
            SchedulerMetrics.Observe(result);
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            SchedulerMetrics.RewriteFailures.Inc();
            RewriteFailed(logger, ex);
            // Quartz stores the failure in its history; the next boundary's trigger is already scheduled, and a failed
            // period is retried by the startup trigger of any Scheduler that starts within it.
            throw new JobExecutionException(ex) { RefireImmediately = false };
        }
        finally
        {
            if (!chained)
            {
                await ScheduleBoundaryAsync(context.Scheduler, NextBoundary(boundary), CancellationToken.None);
            }
        }
    }

    /// <summary>
    /// The boundary after the one this firing was for, even when the firing came late. After a kill -9 the surviving
    /// Scheduler takes over seconds later, and boundaries may have passed meanwhile; each of them still fires, late,
    /// one after the other, so no period goes without its rewrite (computed from "now", as it was, a takeover that took
    /// longer than a period skipped one). Boundaries further back than the misfire threshold (every Scheduler down for
    /// a long time) are not caught up: the chain resumes with the period running now.
    /// </summary>
    private DateTimeOffset NextBoundary(DateTimeOffset? boundary)
    {
        var now = clock.GetUtcNow();
        var next = calendar.At(boundary ?? now).End;
        return next >= now - options.Value.MisfireThreshold ? next : calendar.At(now).Start;
    }

    /// <summary>The boundary of the firing a recovery replays, read from the original trigger's name; null when not recovering.</summary>
    private static DateTimeOffset? RecoveredBoundary(IJobExecutionContext context) =>
        context.Recovering && context.RecoveringTriggerKey?.Name is { } name && name.StartsWith(TriggerPrefix, StringComparison.Ordinal)
        && DateTimeOffset.TryParseExact(name[TriggerPrefix.Length..], TriggerTimeFormat, CultureInfo.InvariantCulture,
            DateTimeStyles.AssumeUniversal | DateTimeStyles.AdjustToUniversal, out var boundary)
            ? boundary
            : null;

    /// <summary>
    /// Schedules the rewrite at <paramref name="boundary"/> unless a trigger for it exists. The trigger's name is the
    /// boundary, so every node that asks for the same boundary asks for the same trigger, and only one is stored.
    /// A boundary already past fires at once; one missed while every Scheduler was down fires when one starts.
    /// </summary>
    public static async Task ScheduleBoundaryAsync(IScheduler scheduler, DateTimeOffset boundary, CancellationToken ct)
    {
        var trigger = TriggerBuilder.Create(scheduler.TimeProvider)
            .WithIdentity(TriggerName(boundary), Key.Group)
            .ForJob(Key)
            .StartAt(boundary)
            .WithSimpleSchedule(s => s.WithMisfireInstruction(SimpleTriggerMisfireInstruction.FireNow))
            .Build();
        await scheduler.ScheduleTrigger(trigger, TriggerConflict.Keep, ct);
    }

    private const string TriggerPrefix = "rewrite-";
    private const string TriggerTimeFormat = "yyyyMMdd'T'HHmmss.fff'Z'";

    public static string TriggerName(DateTimeOffset boundary) =>
        TriggerPrefix + boundary.UtcDateTime.ToString(TriggerTimeFormat, CultureInfo.InvariantCulture);

    // One line per period: after a takeover it shows which boundaries fired late and which firing replayed a dead node's.
    [LoggerMessage(EventId = 4105, Level = LogLevel.Information,
        Message = "The rewrite fired by trigger {Trigger} (scheduled for {Scheduled}, recovering {Recovering}, replaying {Replayed}) is for the period at {Boundary}")]
    private static partial void Fired(ILogger logger, string trigger, DateTimeOffset? scheduled, bool recovering, string? replayed, DateTimeOffset? boundary);

    [LoggerMessage(EventId = 4106, Level = LogLevel.Warning, Message = "The next boundary's rewrite could not be scheduled before this rewrite; it is scheduled again after it")]
    private static partial void ChainDeferred(ILogger logger, Exception ex);

    [LoggerMessage(EventId = 4101, Level = LogLevel.Error, Message = "The ordering rewrite failed; a Scheduler that starts within the period, or the next boundary, rewrites it")]
    private static partial void RewriteFailed(ILogger logger, Exception ex);
}
