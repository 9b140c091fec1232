using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Options;
using Queue.Core.Claims;
using Queue.Core.Cluster;
using Queue.Core.Data;
using Queue.Core.Fairness;
using Queue.Core.Hosting;
using Queue.Core.Jobs;
using Queue.Core.Ordering;
using Queue.Core.Security;

namespace Queue.Core.Composition;

/// <summary>
/// The composition root of Queue.Core: it knows every namespace, so it lives in none of them (the layers below stay
/// free of the ones above, e.g. Data of Cluster).
/// </summary>
public static class CoreServices
{
    /// <summary>Registers the data source, options and Core services shared by Api, Admin and Scheduler.</summary>
    public static IServiceCollection AddQueueCore(this IServiceCollection services)
    {
        services.AddQueueDatabase();
        // Reads that may lag: the replica of ConnectionStrings:QueueRead when set and healthy, else the primary. Here,
        // not in AddQueueDatabase: its limit is a Cluster setting, and Data depends on nothing of Cluster.
        services.AddSingleton(sp => new ReadSource(sp.GetRequiredService<MySqlConnector.MySqlDataSource>(),
            sp.GetRequiredService<IConfiguration>().GetConnectionString("QueueRead"),
            sp.GetRequiredService<IOptions<ClusterOptions>>().Value.MaxReplicaLagSeconds));
        services.AddHostedService<ReadSourceMonitor>();
        // Business time is the database's (leases, due times, retries), so processes on hosts whose clocks disagree
        // still agree on when a lease expires; a test that registers its own TimeProvider first keeps it.
        services.AddCheckedOptions<ClusterOptions, ClusterOptionsRules>();
        services.TryAddSingleton(_ => new DatabaseClock(TimeProvider.System));
        services.TryAddSingleton<TimeProvider>(sp => sp.GetRequiredService<DatabaseClock>());
        services.AddHostedService<DatabaseClockSync>();
        services.TryAddSingleton<BackgroundWork>();
        services.AddHostedService<BackgroundWorkHost>();
        services.AddCheckedOptions<OrderingOptions, OrderingOptionsRules>();
        services.AddCheckedOptions<AuthOptions, AuthOptionsRules>();
        services.AddSingleton<OrderingCalendar>();
        services.AddSingleton<OrderingLanes>();
        // Uploads in any host call WorkSignal.Notify() after they commit; Api processes wake their long-polls on it.
        services.TryAddSingleton<WorkSignal>();
        services.AddSingleton<OrderingRewriter>();
        services.AddSingleton<OrderingPreview>();
        services.AddSingleton<TenantService>();
        services.AddSingleton<ApiKeyService>();
        services.AddSingleton<TechnicianService>();
        services.AddJobs();
        services.AddFairness();
        return services;
    }
}
