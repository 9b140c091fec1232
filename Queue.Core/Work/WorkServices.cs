using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Queue.Core.Claims;

namespace Queue.Core.Work;

public static class WorkServices
{
    /// <summary>What an Api process needs to serve workers: the claim path and the /next entry point.</summary>
    public static IServiceCollection AddWork(this IServiceCollection services)
    {
        services.AddClaims();
        services.TryAddSingleton<NextReplays>();
        services.TryAddSingleton<NextService>();
        return services;
    }
}
