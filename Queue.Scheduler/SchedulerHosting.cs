using Quartz;

namespace Queue.Scheduler;

public static partial class SchedulerHosting
{
    public static IServiceCollection AddQueueScheduler(this IServiceCollection services, IConfiguration configuration, string connectionString)
    {
        services.AddQuartz(q =>
        {
            q.ConfigureScheduler(o =>
            {
                o.InstanceName = "queue-scheduler";
                // Each process gets a unique instance id; the cluster shares one schedule and one firing per trigger.
                o.GenerateInstanceId = true;
            });
            q.UsePersistentStore(s =>
            {
                s.UseMySqlConnector(connectionString);
                s.UseClustering(c =>
                {
                    c.CheckinInterval = TimeSpan.FromSeconds(5);
                    // A Scheduler killed mid-rewrite is taken over by a peer after this long.
                    c.CheckinMisfireThreshold = TimeSpan.FromSeconds(15);
                });
            });
        });
        services.AddQuartzHostedService(o => o.WaitForJobsToComplete = true);
        services.AddHostedService<StartupLog>();
        return services;
    }

    private sealed partial class StartupLog(ISchedulerFactory factory, ILogger<StartupLog> logger) : BackgroundService
    {
        protected override async Task ExecuteAsync(CancellationToken stoppingToken)
        {
            var scheduler = await factory.GetScheduler(stoppingToken);
            while (await scheduler.GetStatus(stoppingToken) != SchedulerStatus.Running && !stoppingToken.IsCancellationRequested)
            {
                await Task.Delay(100, stoppingToken);
            }
            var instance = await scheduler.GetSchedulerInstanceId(stoppingToken);
            QuartzStarted(logger, scheduler.SchedulerName, instance);
        }

        [LoggerMessage(Level = LogLevel.Information, Message = "Quartz started: scheduler {Name}, instance {Instance}, clustered on MariaDB")]
        private static partial void QuartzStarted(ILogger logger, string name, string instance);
    }
}

public static class SchedulerHealth
{
    public static async Task<IResult> CheckAsync(ISchedulerFactory factory, CancellationToken ct)
    {
        var scheduler = await factory.GetScheduler(ct);
        return await scheduler.GetStatus(ct) == SchedulerStatus.Running
            ? TypedResults.Ok(new { status = "ok", instance = await scheduler.GetSchedulerInstanceId(ct) })
            : TypedResults.Problem(statusCode: 503, title: "Service Unavailable", detail: "Quartz is not running");
    }
}
