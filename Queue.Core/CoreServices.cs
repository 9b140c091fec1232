using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Queue.Core.Claims;
using Queue.Core.Cluster;
using Queue.Core.Data;
using Queue.Core.Fairness;
using Queue.Core.Hosting;
using Queue.Core.Jobs;
using Queue.Core.Ordering;
using Queue.Core.Security;

namespace Queue.Core;

public static class CoreServices
{
    /// <summary>Registers the data source, options and Core services shared by Api, Admin and Scheduler.</summary>
    public static IServiceCollection AddQueueCore(this IServiceCollection services)
    {
        services.AddQueueDatabase();
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
