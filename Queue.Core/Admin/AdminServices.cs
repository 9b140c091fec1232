using Microsoft.Extensions.DependencyInjection;

namespace Queue.Core.Admin;

public static class AdminServices
{
    /// <summary>The technicians' read and write services; needs <see cref="Composition.CoreServices.AddQueueCore"/>.</summary>
    public static IServiceCollection AddQueueAdmin(this IServiceCollection services)
    {
        services.AddSingleton<AdminQueries>();
        services.AddSingleton<JobActions>();
        services.AddSingleton<TenantAdmin>();
        return services;
    }
}
