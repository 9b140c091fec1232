using System.Text.Json;
using System.Text.Json.Serialization;
using Quartz;
using Queue.Core.Hosting;
using Queue.Core.Admin;
using Queue.Core.Claims;
using Queue.Core.Jobs;
using Queue.Core.Maintenance;
using Queue.Core.Ordering;
using Queue.Scheduler.Jobs;

namespace Queue.Scheduler;

public static partial class SchedulerHosting
{
    public const string InstanceName = "queue-scheduler";

    public static IServiceCollection AddQueueScheduler(this IServiceCollection services, IConfiguration configuration, string connectionString)
    {
        services.AddCheckedOptions<SchedulerOptions, SchedulerOptionsRules>();
        services.AddCheckedOptions<MaintenanceOptions, MaintenanceOptionsRules>();
        services.AddSingleton<RetentionService>();
        services.AddSingleton<IdempotencyCleanup>();
        services.AddSingleton<CancelledLeaseSweep>();
        services.AddSingleton<SnapshotService>();
        services.ConfigureHttpJsonOptions(o => o.SerializerOptions.TypeInfoResolverChain.Insert(0, SchedulerJsonContext.Default));

        // Quartz is configured while services are registered, before options can be resolved, so its settings are
        // bound here from the same sections and checked by the same rules as the options above.
        var cluster = configuration.BindChecked<SchedulerOptions, SchedulerOptionsRules>();
        var maintenance = configuration.BindChecked<MaintenanceOptions, MaintenanceOptionsRules>();

        services.AddQuartz(q =>
        {
            q.ConfigureScheduler(o =>
            {
                o.InstanceName = InstanceName;
                // Each process gets a unique instance id; the cluster shares one schedule and one firing per trigger.
                o.GenerateInstanceId = true;
                o.IdleWaitTime = cluster.IdleWaitTime;
            });
            q.UsePersistentStore(s =>
            {
                s.UseMySqlConnector(connectionString);
                s.ConfigureStore(o =>
                {
                    // The tables come from migrations/ (V3, V30); the store only checks them and never creates any.
                    o.SchemaProvisioning = SchemaProvisioning.Validate;
                    // Job data as name/value strings: readable in the database and independent of .NET types.
                    o.StoreJobDataAsStrings = true;
                    o.MisfireThreshold = cluster.MisfireThreshold;
                });
                s.UseClustering(c =>
                {
                    c.CheckinInterval = cluster.CheckinInterval;
                    c.CheckinMisfireThreshold = cluster.CheckinMisfireThreshold;
                });
            });

            // The rewrite job has no trigger of its own here: RewriteChain and the job itself schedule one per boundary.
            // RequestRecovery: a node killed mid-rewrite has its firing re-run by a peer (or by itself on restart).
            q.AddJob<ReorderJob>(j => j.WithIdentity(ReorderJob.Key).StoreDurably().RequestRecovery()
                .WithDescription("Rewrites the ordering at each period boundary"));

            q.ScheduleJob<OverrideSweepJob>(
                t => t.WithIdentity("override-sweep", "ordering").StartNow()
                    .WithSimpleSchedule(s => s.WithInterval(maintenance.OverrideSweepInterval).RepeatForever()
                        .WithMisfireInstruction(SimpleTriggerMisfireInstruction.NextWithRemainingCount)),
                j => j.WithIdentity(OverrideSweepJob.Key).WithDescription("Switches expired overrides off"));
            q.ScheduleJob<SnapshotJob>(
                t => t.WithIdentity("snapshot", "maintenance")
                    .WithCronSchedule("0 * * * * ?", c => c.InTimeZone(TimeZoneInfo.Utc).WithMisfireInstruction(CronTriggerMisfireInstruction.DoNothing)),
                j => j.WithIdentity(SnapshotJob.Key).WithDescription("Per-tenant snapshot every minute"));
            q.ScheduleJob<IdempotencyCleanupJob>(
                t => t.WithIdentity("idempotency-cleanup", "maintenance").StartAt(DateTimeOffset.UtcNow.AddSeconds(20))
                    .WithSimpleSchedule(s => s.WithInterval(maintenance.IdempotencyInterval).RepeatForever()
                        .WithMisfireInstruction(SimpleTriggerMisfireInstruction.NextWithRemainingCount)),
                j => j.WithIdentity(IdempotencyCleanupJob.Key).WithDescription("Deletes expired idempotency records"));
            q.ScheduleJob<CancelledLeaseJob>(
                t => t.WithIdentity("cancelled-leases", "maintenance").StartAt(DateTimeOffset.UtcNow.AddSeconds(25))
                    .WithSimpleSchedule(s => s.WithInterval(TimeSpan.FromMinutes(1)).RepeatForever()
                        .WithMisfireInstruction(SimpleTriggerMisfireInstruction.NextWithRemainingCount)),
                j => j.WithIdentity(CancelledLeaseJob.Key).WithDescription("Cancels expired leases of cancelled jobs"));
            q.ScheduleJob<RetentionJob>(
                t => t.WithIdentity("retention", "maintenance").StartAt(DateTimeOffset.UtcNow.AddSeconds(30))
                    .WithSimpleSchedule(s => s.WithInterval(maintenance.RetentionInterval).RepeatForever()
                        .WithMisfireInstruction(SimpleTriggerMisfireInstruction.NextWithRemainingCount)),
                j => j.WithIdentity(RetentionJob.Key).WithDescription("Purges long-finished jobs' items and documents"));
        });
        services.Configure<QuartzOptions>(o =>
        {
            // Every start re-declares the maintenance triggers; a replaced trigger keeps its firing history, so a
            // restart neither re-fires nor delays a schedule that has already run.
            o.Scheduling.ScheduleTriggerRelativeToReplacedTrigger = true;
        });
        services.AddQuartzHostedService(o => o.WaitForJobsToComplete = true);
        services.AddHostedService<RewriteChain>();
        return services;
    }

    /// <summary>
    /// At start-up: makes sure the current period's rewrite has a trigger (a period missed while every Scheduler was
    /// down runs now; one already rewritten is a no-op), which in turn schedules the next boundary, and logs that
    /// Quartz is running.
    /// </summary>
    private sealed partial class RewriteChain(ISchedulerFactory factory, OrderingCalendar calendar, ILogger<RewriteChain> logger) : BackgroundService
    {
        protected override async Task ExecuteAsync(CancellationToken stoppingToken)
        {
            SchedulerMetrics.Initialise(calendar);
            var scheduler = await factory.GetScheduler(stoppingToken);
            while (await scheduler.GetStatus(stoppingToken) != SchedulerStatus.Running)
            {
                await Task.Delay(100, stoppingToken);
            }
            QuartzStarted(logger, scheduler.SchedulerName, scheduler.SchedulerInstanceId);
            for (var attempt = 1; ; attempt++)
            {
                try
                {
                    var current = calendar.Current;
                    await ReorderJob.ScheduleBoundaryAsync(scheduler, current.Start, stoppingToken);
                    ChainReady(logger, current.ModeName, current.Start, current.End);
                    return;
                }
                catch (SchedulerException ex)
                {
                    ChainRetry(logger, attempt, ex);
                    await Task.Delay(TimeSpan.FromSeconds(Math.Min(30, attempt * 2)), stoppingToken);
                }
            }
        }

        [LoggerMessage(EventId = 4102, Level = LogLevel.Information, Message = "Quartz started: scheduler {Name}, instance {Instance}, clustered on MariaDB")]
        private static partial void QuartzStarted(ILogger logger, string name, string instance);

        [LoggerMessage(EventId = 4103, Level = LogLevel.Information, Message = "The {Mode} period {Start:o} to {End:o} has its rewrite scheduled")]
        private static partial void ChainReady(ILogger logger, string mode, DateTimeOffset start, DateTimeOffset end);

        [LoggerMessage(EventId = 4104, Level = LogLevel.Warning, Message = "The ordering rewrite could not be scheduled (attempt {Attempt}); retrying")]
        private static partial void ChainRetry(ILogger logger, int attempt, Exception ex);
    }
}

public sealed record SchedulerHealthStatus(string Status, string Instance, string Mode, DateTimeOffset PeriodStart, DateTimeOffset PeriodEnd);

[JsonSourceGenerationOptions(JsonSerializerDefaults.Web)]
[JsonSerializable(typeof(SchedulerHealthStatus))]
internal sealed partial class SchedulerJsonContext : JsonSerializerContext;

public static class SchedulerHealth
{
    public static async Task<IResult> CheckAsync(ISchedulerFactory factory, OrderingCalendar calendar, CancellationToken ct)
    {
        var scheduler = await factory.GetScheduler(ct);
        if (await scheduler.GetStatus(ct) != SchedulerStatus.Running)
        {
            return TypedResults.Problem(statusCode: 503, title: "Service Unavailable", detail: "Quartz is not running");
        }
        var current = calendar.Current;
        return TypedResults.Ok(new SchedulerHealthStatus("ok", scheduler.SchedulerInstanceId, current.ModeName, current.Start, current.End));
    }
}
