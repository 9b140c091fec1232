using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;

namespace Queue.Core.Claims;

public static class ClaimServices
{
    /// <summary>
    /// The claim path of an Api process: engine, batching, long-poll wake-ups and statistics. The lane selection step is
    /// <see cref="ILaneSelector"/>; register another implementation before calling this to replace the seed policy.
    /// </summary>
    public static IServiceCollection AddClaims(this IServiceCollection services)
    {
        services.AddOptions<ClaimOptions>().BindConfiguration("Claims")
            .Validate(o => o.IsValid(), "Claims: Prefetch 0-10000, ReservationSeconds 2-300, PrefetchHoldMilliseconds below half the reservation, positive limits")
            .ValidateOnStart();
        services.TryAddSingleton<ILaneSelector, SeedLaneSelector>();
        services.TryAddSingleton<ClaimCounters>();
        services.TryAddSingleton<LaneJanitor>();
        services.TryAddSingleton<ClaimEngine>();
        services.TryAddSingleton<LeaseService>();
        services.TryAddSingleton<WorkStats>();
        services.TryAddSingleton<ClaimDispatcher>();
        services.TryAddSingleton<CompletionBatcher>();
        services.AddHostedService<ClaimBackgroundService>();
        return services;
    }
}
