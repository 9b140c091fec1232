using System.Globalization;
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
public sealed partial class ReorderJob(OrderingRewriter rewriter, OrderingCalendar calendar, TimeProvider clock, ILogger<ReorderJob> logger) : IJob
{
    public static readonly JobKey Key = new("ordering-rewrite", "ordering");

    public async ValueTask Execute(IJobExecutionContext context, CancellationToken cancellationToken)
    {
        var instance = context.Scheduler.SchedulerInstanceId;
        try
        {
            var result = await rewriter.RewriteAsync(instance, context.ScheduledFireTimeUtc, force: false, cancellationToken);
            SchedulerMetrics.Observe(result);
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            SchedulerMetrics.RewriteFailures.Inc();
            RewriteFailed(logger, ex);
            // Quartz stores the failure in its history; the next boundary's trigger is still scheduled below, and a
            // failed period is retried by the startup trigger of any Scheduler that starts within it.
            throw new JobExecutionException(ex) { RefireImmediately = false };
        }
        finally
        {
            var at = context.ScheduledFireTimeUtc is { } s && s > clock.GetUtcNow() ? s : clock.GetUtcNow();
            await ScheduleBoundaryAsync(context.Scheduler, calendar.At(at).End, CancellationToken.None);
        }
    }

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

    public static string TriggerName(DateTimeOffset boundary) =>
        "rewrite-" + boundary.UtcDateTime.ToString("yyyyMMdd'T'HHmmss.fff'Z'", CultureInfo.InvariantCulture);

    [LoggerMessage(EventId = 4101, Level = LogLevel.Error, Message = "The ordering rewrite failed; a Scheduler that starts within the period, or the next boundary, rewrites it")]
    private static partial void RewriteFailed(ILogger logger, Exception ex);
}
