using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Queue.Core.Hosting;
using Queue.Core.Jobs;

namespace Queue.Core.Claims;

public static class ClaimServices
{
    /// <summary>
    /// The claim path of an Api process: engine, batching, long-poll wake-ups and statistics. The lane selection step is
    /// <see cref="ILaneSelector"/>; register another implementation before calling this to replace the seed policy.
    /// </summary>
    public static IServiceCollection AddClaims(this IServiceCollection services)
    {
        services.AddCheckedOptions<ClaimOptions, ClaimOptionsRules>();
        services.TryAddSingleton<ILaneSelector, SeedLaneSelector>();
        services.TryAddSingleton<ClaimCounters>();
        services.TryAddSingleton<LaneJanitor>();
        services.TryAddSingleton<LaneFloors>();
        services.TryAddSingleton<ClaimEngine>();
        services.TryAddSingleton<LeaseService>();
        services.TryAddSingleton<WorkStats>();
        services.TryAddSingleton<HandoutLog>();
        services.TryAddSingleton<ClaimEpoch>();
        services.TryAddSingleton<ClaimDispatcher>();
        // New jobs' items go straight to this process's busy claim-ahead buffers (replacing the hosts' default).
        services.Replace(ServiceDescriptor.Singleton<INewWorkIntake>(sp => sp.GetRequiredService<ClaimDispatcher>()));
        services.TryAddSingleton<CompletionBatcher>();
        services.AddHostedService<ClaimBackgroundService>();
        return services;
    }
}
