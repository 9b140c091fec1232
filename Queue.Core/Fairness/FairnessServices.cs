using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Options;
using Queue.Core.Claims;
using Queue.Core.Ordering;

namespace Queue.Core.Fairness;

public static class FairnessServices
{
    /// <summary>
    /// The claim policy chosen by <c>Ordering:Policy</c> (seed | tenant-fair), explain, and the fairness metrics. Replaces
    /// the claim engine's default selector whatever the order of registration.
    /// </summary>
    public static IServiceCollection AddFairness(this IServiceCollection services)
    {
        services.TryAddSingleton(sp => new FairShare(sp.GetRequiredService<IOptions<OrderingOptions>>().Value.ReturnCredit));
        services.TryAddSingleton<TenantFairLaneSelector>();
        services.Replace(ServiceDescriptor.Singleton<ILaneSelector>(sp =>
            sp.GetRequiredService<IOptions<OrderingOptions>>().Value.Policy == OrderingOptions.TenantFair
                ? sp.GetRequiredService<TenantFairLaneSelector>()
                : new SeedLaneSelector()));
        services.TryAddSingleton<ExplainService>();
        services.TryAddSingleton<FairnessMonitor>();
        return services;
    }
}
